#!lua
--@include common.lua
-- claim: move up to `count` due pending jobs, earliest due first, to active
-- with a lease; each claim increments attempts, which is the fencing token.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 lease_ms (1..86400000), 2 claim_id (1..64 characters 0-9 a-f;
--       stored beside attempts so that a claim lost in a failover cannot
--       hand the same token out twice), 3 worker (actor), 4 count (1..1000)
-- Each claim's history entry records the worker's release and host from its registry entry
-- (PROTOCOL.md, section 9; read before the first write).
-- Reply: {'OK', lease_deadline_ms, id1, attempts1, payload1, id2, ...}
--        {'EMPTY', next_due_ms or '', now_ms}  nothing claimable is due: the
--            due time of the earliest claimable pending job ('' when there is
--            none), or now_ms itself when this call's budget ran out before
--            it could tell (call again: the call made progress)
--        {'PAUSED', since_ms, actor, reason}  the queue is paused (its key
--            PREFIX .. 'paused' exists; see pause.lua): nothing was claimed
--            or written; idle and call again later, as after EMPTY
--        {'REFUSED', 'wrongtype', key, type}  nothing was written
-- Ids in pending whose hash is missing are removed. A job that cannot be
-- claimed (its key is not a hash, its state is not 'pending', its attempts is
-- not an integer below 99999999999999, or its due time is above that) is
-- moved out of the way: to failed (score now), with state 'failed',
-- last_error 'corrupt: <why>' when its key is a hash, and an
-- event and history entry 'corrupt'. So no number of them can keep a due job
-- behind them from being claimed. Each call looks at no more than
-- count + 100 ids (claimed, removed or moved out of the way alike).
-- Errors (nothing written): bad keys, lease_ms, claim_id or count.
local unknown_move = check_moves('corrupt', 'claim')
if unknown_move then return unknown_move end
--@include claim_due.lua
local err = check_keys(nil)
if err then return err end
local lease, claim_id, count, bad = claim_args(ARGV[1], ARGV[2], ARGV[4])
if bad then return bad end
local worker = cut_utf8(ARGV[3] or '', MAX_ACTOR_BYTES)
local refused = check_types(1, 2, 4, 5)
if refused then return refused end
local paused = paused_reply()
if paused then return paused end
local note = attempt_note(worker)
if count > 1 then count_batch() end
local reply = claim_due(now_ms(), lease, claim_id, worker, count, note)
count_flush()
return reply
