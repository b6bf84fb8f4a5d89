#!lua
--@include common.lua
-- retry (operator): failed -> pending, due now, with `extra_attempts` more
-- tries (max_attempts becomes attempts + extra_attempts, at most
-- 99999999999999; attempts itself never decreases, so fencing tokens stay
-- unique).
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 expected state (must be 'failed'), 3 expected attempts
--       ('' = any), 4 extra_attempts (1..1000000), 5 actor
-- Reply: {'OK', 'pending', attempts}
--        {'REFUSED', reason, state, attempts}  reason: missing | state | attempts
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys, expected state or extra_attempts.
local unknown_move = check_moves('retry')
if unknown_move then return unknown_move end
--@include operator_args.lua
local extra, bad = int_arg(ARGV[4], 'extra_attempts', 1, MAX_TRIES)
if bad then return bad end
local refused = check_types(1, 4, 5)
if refused then return refused end
local refusal, state, attempts = check_seen(KEYS[6], id, {failed = true}, expect_state, expect_attempts)
if refusal then return refusal end

local now = now_ms()
redis.call('ZREM', KEYS[4], id)
redis.call('ZADD', KEYS[1], now, id)
redis.call('HSET', KEYS[6], 'state', 'pending', 'max_attempts', math.min((to_int(attempts) or 0) + extra, MAX_INT))
failure_leave(KEYS[6])
emit(KEYS[5], 'retry', id, 'failed', 'pending', attempts, ARGV[5] or '', now, KEYS[6])
return {'OK', 'pending', attempts}
