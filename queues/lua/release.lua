#!lua
--@include common.lua
-- release: the lease holder hands a job back unfinished (a worker shutting
-- down); active -> pending, due now. Attempts is not decreased: it never is.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 attempts (the fencing token), 3 claim_id, 4 actor
-- Reply: {'OK', due_ms}
--        {'REFUSED', reason, state, attempts}  reason: missing | state | token
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys or attempts.
local unknown_move = check_moves('release')
if unknown_move then return unknown_move end
--@include lease_args.lua
local actor = ARGV[4] or ''
local refused = check_types(1, 2, 5) or check_lease(KEYS[6], KEYS[2], id, token, claim_id)
if refused then return refused end

local now = now_ms()
redis.call('ZREM', KEYS[2], id)
redis.call('ZADD', KEYS[1], now, id)
redis.call('HSET', KEYS[6], 'state', 'pending')
emit(KEYS[5], 'release', id, 'active', 'pending', token, actor, now, KEYS[6])
return {'OK', tostring(now)}
