#!lua
--@include common.lua
-- cancel (operator): a pending or active job goes to failed with last_error
-- 'cancelled'. A worker still holding it is refused at its next extend or
-- complete and stops.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 expected state ('pending' or 'active'), 3 expected attempts
--       ('' = any), 4 actor
-- Reply: {'OK', 'failed', attempts}
--        {'REFUSED', reason, state, attempts}  reason: missing | state | attempts
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys or expected state.
local unknown_move = check_moves('cancel')
if unknown_move then return unknown_move end
--@include operator_args.lua
local refused = check_types(1, 2, 4, 5)
if refused then return refused end
local refusal, state, attempts = check_seen(KEYS[6], id, {pending = true, active = true}, expect_state, expect_attempts)
if refusal then return refusal end

local now = now_ms()
local plan = failure_plan('cancelled')
redis.call('ZREM', KEYS[STATE_SET[state]], id)
redis.call('ZADD', KEYS[4], now, id)
keep_last_error(KEYS[6], 'cancelled')
redis.call('HSET', KEYS[6], 'state', 'failed', 'last_error', 'cancelled')
failure_enter(KEYS[6], id, plan, now)
emit(KEYS[5], 'cancel', id, state, 'failed', attempts, ARGV[4] or '', now, KEYS[6])
return {'OK', 'failed', attempts}
