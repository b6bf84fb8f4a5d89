#!lua flags=allow-oom
--@include common.lua
-- extend: the lease holder's heartbeat; pushes the lease deadline to now + lease_ms.
-- A refused extend means the worker no longer holds the job and must stop.
-- It appends an 'extend' event (so pages follow the new deadline live) but no
-- history entry (heartbeats would crowd out the moves). It is the one move
-- flagged allow-oom: its writes replace a score and add a capped stream
-- entry, and a lease must not lapse only because Redis is out of memory
-- while the moves that would complete the job are refused.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 attempts (the fencing token), 3 claim_id, 4 lease_ms
--       (1..86400000), 5 actor (optional)
-- Reply: {'OK', lease_deadline_ms}
--        {'REFUSED', reason, state, attempts}  reason: missing | state | token
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys, attempts or lease_ms.
local unknown_move = check_moves('extend')
if unknown_move then return unknown_move end
--@include lease_args.lua
local lease, bad = int_arg(ARGV[4], 'lease_ms', 1, MAX_LEASE_MS)
if bad then return bad end
local refused = check_types(2, 5) or check_lease(KEYS[6], KEYS[2], id, token, claim_id)
if refused then return refused end

local now = now_ms()
local deadline = now + lease
redis.call('ZADD', KEYS[2], deadline, id)
emit(KEYS[5], 'extend', id, 'active', 'active', token, ARGV[5] or '', now, nil)
return {'OK', tostring(deadline)}
