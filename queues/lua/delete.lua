--@include common.lua
-- delete (operator): remove a job in the state the operator saw: its hash
-- and its id in every one of the four sets (so a job that an inconsistent
-- writer left in two sets is cleaned too). A worker holding it is refused.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 expected state, 3 expected attempts ('' = any), 4 actor
-- Reply: {'OK', 'deleted', attempts}
--        {'REFUSED', reason, state, attempts}  reason: missing | state | attempts
-- Errors (nothing written): bad keys or expected attempts.
--@include operator_args.lua
local refused, state, attempts = check_seen(KEYS[6], id, nil, expect_state, expect_attempts)
if refused then return refused end

for i = 1, 4 do redis.call('ZREM', KEYS[i], id) end
redis.call('DEL', KEYS[6])
local now = now_ms()
emit(KEYS[5], 'delete', id, state, '', attempts, ARGV[4], now)
return {'OK', 'deleted', attempts}
