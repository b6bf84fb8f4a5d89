#!lua
--@include common.lua
-- recover (operator, one job): an active job whose lease deadline has passed
-- goes back to pending (due now), or to failed when its attempts are spent.
-- The worker that held it is refused at its next extend or complete.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 expected state (must be 'active'), 3 expected attempts
--       ('' = any), 4 actor
-- Reply: {'OK', 'pending' | 'failed', attempts}
--        {'REFUSED', reason, state, attempts}
--        reason: missing | state | attempts | not_lapsed (the lease still runs)
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys or expected state.
local unknown_move = check_moves('recover')
if unknown_move then return unknown_move end
--@include operator_args.lua
local refused = check_types(1, 2, 4, 5)
if refused then return refused end
local refusal, state, attempts = check_seen(KEYS[6], id, {active = true}, expect_state, expect_attempts)
if refusal then return refusal end
local now = now_ms()
if tonumber(redis.call('ZSCORE', KEYS[2], id)) > now then return refuse('not_lapsed', state, attempts) end

local to = recover_one(KEYS[6], id, attempts, now)
emit(KEYS[5], 'recover', id, 'active', to, attempts, ARGV[4] or '', now, KEYS[6])
return {'OK', to, attempts}
