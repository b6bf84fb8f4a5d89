#!lua
--@include common.lua
-- rerun (operator): a done job runs again as a new attempt of the same job: done -> pending, due
-- now (a failed job's is retry). max_attempts becomes attempts + 1 when it is not already above the attempts (so a claim takes
-- it); attempts itself never decreases, so fencing tokens stay unique.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 expected state (must be 'done'), 3 expected attempts ('' = any), 4 actor
-- Reply: {'OK', 'pending', attempts}
--        {'REFUSED', reason, state, attempts}  reason: missing | state | attempts
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys or expected state.
local unknown_move = check_moves('rerun')
if unknown_move then return unknown_move end
--@include operator_args.lua
local refused = check_types(1, 3, 5)
if refused then return refused end
local refusal, state, attempts = check_seen(KEYS[6], id, {done = true}, expect_state, expect_attempts)
if refusal then return refusal end
local tries = to_int(attempts) or 0
local max_attempts = to_int(redis.call('HGET', KEYS[6], 'max_attempts') or '') or DEFAULT_MAX_ATTEMPTS

local now = now_ms()
redis.call('ZREM', KEYS[3], id)
redis.call('ZADD', KEYS[1], now, id)
redis.call('HSET', KEYS[6], 'state', 'pending')
if max_attempts <= tries then redis.call('HSET', KEYS[6], 'max_attempts', math.min(tries + 1, MAX_INT)) end
emit(KEYS[5], 'rerun', id, 'done', 'pending', attempts, ARGV[4] or '', now, KEYS[6])
return {'OK', 'pending', attempts}
