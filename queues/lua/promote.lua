#!lua
--@include common.lua
-- promote (operator): a delayed pending job becomes due now.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 expected state (must be 'pending'), 3 expected attempts
--       ('' = any), 4 actor
-- Reply: {'OK', 'pending', attempts}
--        {'REFUSED', reason, state, attempts}
--        reason: missing | state | attempts | not_delayed (already due)
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys or expected state.
local unknown_move = check_moves('promote')
if unknown_move then return unknown_move end
--@include operator_args.lua
local refused = check_types(1, 5)
if refused then return refused end
local refusal, state, attempts = check_seen(KEYS[6], id, {pending = true}, expect_state, expect_attempts)
if refusal then return refusal end
local now = now_ms()
if tonumber(redis.call('ZSCORE', KEYS[1], id)) <= now then return refuse('not_delayed', state, attempts) end

redis.call('ZADD', KEYS[1], now, id)
emit(KEYS[5], 'promote', id, 'pending', 'pending', attempts, ARGV[4] or '', now, KEYS[6])
return {'OK', 'pending', attempts}
