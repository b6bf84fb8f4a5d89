#!lua
--@include common.lua
-- pause: stop claims from a queue until resume. The flag is the key
-- PREFIX .. 'paused' (a hash: reason, actor, since_ms), in the queue's slot;
-- claim answers PAUSED while it exists, whatever its type, so every runtime
-- that runs claim.lua obeys it. Enqueue and the lease holders' moves go on:
-- running jobs finish, new jobs wait in pending.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 reason (at most 4096 bytes, cut at a character), 2 actor
-- Reply: {'OK', since_ms}               paused now
--        {'ALREADY', since_ms, actor, reason}  it was paused; nothing was written
--        {'REFUSED', 'wrongtype', key, type}   nothing was written
-- Writes: the paused hash and a 'pause' event (id '', to 'paused', the actor).
local unknown_move = check_moves('pause')
if unknown_move then return unknown_move end
local err = check_keys(nil)
if err then return err end
local reason = cut_utf8(ARGV[1] or '', MAX_ERROR_BYTES)
local actor = cut_utf8(ARGV[2] or '', MAX_ACTOR_BYTES)
local refused = check_types(5)
if refused then return refused end
local paused_key = PREFIX .. 'paused'
local kind = redis.call('TYPE', paused_key).ok
if kind == 'hash' then
  local f = redis.call('HMGET', paused_key, 'since_ms', 'actor', 'reason')
  return {'ALREADY', f[1] or '', f[2] or '', f[3] or ''}
elseif kind ~= 'none' then
  return {'REFUSED', 'wrongtype', paused_key, kind}
end
local now = now_ms()
redis.call('HSET', paused_key, 'reason', reason, 'actor', actor, 'since_ms', now)
emit(KEYS[5], 'pause', '', '', 'paused', '', actor, now, nil)
return {'OK', tostring(now)}
