#!lua
--@include common.lua
-- complete: the lease holder finished the job; active -> done.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 attempts (the fencing token), 3 claim_id, 4 actor
-- Reply: {'OK', finished_ms}
--        {'REFUSED', reason, state, attempts}  reason: missing | state | token
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys or attempts.
local unknown_move = check_moves('complete', 'fail')
if unknown_move then return unknown_move end
--@include finish.lua
--@include lease_args.lua
local actor = ARGV[4] or ''
local refused, history = check_types(2, 3, 5), nil
if not refused then refused, history = check_lease(KEYS[6], KEYS[2], id, token, claim_id, true) end
if refused then return refused end

local now = now_ms()
redis.call('ZREM', KEYS[2], id)
redis.call('ZADD', KEYS[3], now, id)
complete_job(KEYS[6], id, token, actor, now, history)
return {'OK', tostring(now)}
