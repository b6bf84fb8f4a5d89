#!lua
--@include common.lua
-- resume: let claims take a paused queue's jobs again (deletes the paused
-- flag, of whatever type another writer left it).
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 actor
-- Reply: {'OK', paused_ms}              resumed; how long it was paused ('' when unknown)
--        {'NOT_PAUSED'}                 nothing was written
--        {'REFUSED', 'wrongtype', key, type}   nothing was written
-- Writes: deletes the paused key; a 'resume' event (id '', actor).
local unknown_move = check_moves('resume')
if unknown_move then return unknown_move end
local err = check_keys(nil)
if err then return err end
local actor = cut_utf8(ARGV[1] or '', MAX_ACTOR_BYTES)
local refused = check_types(5)
if refused then return refused end
local paused_key = PREFIX .. 'paused'
local kind = redis.call('TYPE', paused_key).ok
if kind == 'none' then return {'NOT_PAUSED'} end
local now = now_ms()
local since = kind == 'hash' and to_int(redis.call('HGET', paused_key, 'since_ms') or '') or nil
redis.call('DEL', paused_key)
emit(KEYS[5], 'resume', '', 'paused', '', '', actor, now, nil)
return {'OK', since and tostring(now - since) or ''}
