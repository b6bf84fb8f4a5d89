--@include common.lua
-- retry (operator): failed -> pending, due now, with `extra_attempts` more
-- tries (max_attempts becomes attempts + extra_attempts; attempts itself
-- never decreases, so fencing tokens stay unique).
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 expected state (must be 'failed'), 3 expected attempts
--       ('' = any), 4 extra_attempts (integer >= 1), 5 actor
-- Reply: {'OK', 'pending', attempts}
--        {'REFUSED', reason, state, attempts}  reason: missing | state | attempts
-- Errors (nothing written): bad keys, expected attempts or extra_attempts.
--@include operator_args.lua
local extra = to_int(ARGV[4])
if extra == nil or extra < 1 then return bad_arg('extra_attempts must be an integer >= 1') end
local refused, state, attempts = check_seen(KEYS[6], id, {failed = true}, expect_state, expect_attempts)
if refused then return refused end

local now = now_ms()
redis.call('ZREM', KEYS[4], id)
redis.call('ZADD', KEYS[1], now, id)
redis.call('HSET', KEYS[6], 'state', 'pending', 'max_attempts', (to_int(attempts) or 0) + extra)
emit(KEYS[5], 'retry', id, 'failed', 'pending', attempts, ARGV[5], now)
return {'OK', 'pending', attempts}
