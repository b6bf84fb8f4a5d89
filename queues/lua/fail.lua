#!lua
--@include common.lua
-- fail: the lease holder's handler failed. While attempts < max_attempts the
-- job goes back to pending, due after backoff_ms * 2^min(attempts-1, 31),
-- at most one hour; otherwise it goes to failed. The error, cut to 4096
-- bytes at a character boundary, is kept as last_error (the job's history
-- refers to it, and keeps the first 256 bytes of the error before it when it
-- differs). A job without an integer max_attempts
-- (another runtime's three-field job) gets 3.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 attempts (the fencing token), 3 claim_id, 4 error text,
--       5 backoff_ms (0..86400000), 6 actor
-- Reply: {'OK', 'pending' | 'failed', due_or_failed_ms}
--        {'REFUSED', reason, state, attempts}  reason: missing | state | token
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys, attempts or backoff_ms.
local unknown_move = check_moves('complete', 'fail')
if unknown_move then return unknown_move end
--@include finish.lua
--@include lease_args.lua
local message, actor = cut_utf8(ARGV[4] or '', MAX_ERROR_BYTES), ARGV[6] or ''
local backoff, bad = int_arg(ARGV[5], 'backoff_ms', 0, MAX_LEASE_MS)
if bad then return bad end
local refused = check_types(1, 2, 4, 5) or check_lease(KEYS[6], KEYS[2], id, token, claim_id)
if refused then return refused end

local plan = fail_plan(KEYS[6], token, message)
local now = now_ms()
local state, ms = fail_job(KEYS[6], id, token, message, backoff, actor, now, plan)
return {'OK', state, tostring(ms)}
