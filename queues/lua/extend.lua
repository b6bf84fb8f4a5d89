--@include common.lua
-- extend: the lease holder's heartbeat; pushes the lease deadline to now + lease_ms.
-- A refused extend means the worker no longer holds the job and must stop.
-- A heartbeat changes no state, so it appends no event.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 attempts (the fencing token), 3 claim_id, 4 lease_ms
-- Reply: {'OK', lease_deadline_ms}
--        {'REFUSED', reason, state, attempts}  reason: missing | state | token
-- Errors (nothing written): bad keys, attempts or lease_ms.
--@include lease_args.lua
local lease = to_int(ARGV[4])
if lease == nil or lease < 1 then return bad_arg('lease_ms must be an integer >= 1') end

local refused = check_lease(KEYS[6], KEYS[2], id, token, claim_id)
if refused then return refused end

local deadline = now_ms() + lease
redis.call('ZADD', KEYS[2], deadline, id)
return {'OK', tostring(deadline)}
