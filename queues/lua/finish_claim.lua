#!lua
--@include common.lua
-- finish_claim: the lease holder reports how its jobs ended and claims the next ones, in one call:
-- each job reported is completed (active -> done, as `complete`) or failed (as `fail`), each fenced
-- on its own, and then up to `count` jobs are claimed exactly as `claim` claims them. It does what
-- complete_many (or fail) and then claim would do, in that order, with the same checks, so that a
-- worker in steady state makes one round trip per job instead of two scripts' worth.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 actor (the worker: it reports and claims), 2 lease_ms (1..86400000), 3 claim_id of the
--       new claim (1..64 characters 0-9 a-f), 4 count (1..1000), 5 backoff_ms (0..86400000, for the
--       failures), then for each job reported (0..1000 jobs, each id once):
--       id, attempts (its fencing token), claim_id, outcome ('complete' | 'fail'), error text (cut
--       to 4096 bytes as `fail` cuts it; ignored for 'complete')
-- Reply: {now_ms, claim, answer per job reported, in order}
--        claim: what `claim` answers: {'OK', lease_deadline_ms, id1, attempts1, payload1, ...},
--            {'EMPTY', next_due_ms or '', now_ms} or {'PAUSED', since_ms, actor, reason} (the queue
--            is paused: nothing was claimed, the reports were still taken)
--        answer: {'OK', 'done' | 'pending' | 'failed', finished_or_due_ms}
--                | {'REFUSED', reason, state, attempts}  reason: missing | state | token | wrongtype
--                  (then: key, type); that job is left as it is, the others go on
--        {'REFUSED', 'wrongtype', key, type}  a queue key of another type; nothing was written
-- Checks before the first write: the keys, every argument (each job's id, attempts and outcome), the
-- types of the five queue keys, the pause key, every reported job's lease (check_lease) and, for a
-- failure, its max_attempts and failure group (fail_plan). The claim half then judges each pending
-- job before writing it, as claim does.
-- Errors (nothing written): bad keys, lease_ms, claim_id, count, backoff_ms, a bad job count,
-- attempts or outcome, or a repeated id.
local unknown_move = check_moves('complete', 'fail', 'corrupt', 'claim')
if unknown_move then return unknown_move end
--@include finish.lua
--@include claim_due.lua
local err = check_keys(nil)
if err then return err end
local actor = cut_utf8(ARGV[1] or '', MAX_ACTOR_BYTES)
local lease, claim_id, count, bad = claim_args(ARGV[2], ARGV[3], ARGV[4])
if bad then return bad end
local backoff, bad2 = int_arg(ARGV[5], 'backoff_ms', 0, MAX_LEASE_MS)
if bad2 then return bad2 end
local jobs = (#ARGV - 5) / 5
if jobs < 0 or jobs > MAX_BATCH or jobs ~= math.floor(jobs) then
  return bad_arg('give 0..1000 jobs, each as id, attempts, claim_id, outcome, error')
end
local seen, tokens = {}, {}
for i = 0, jobs - 1 do
  local at = 6 + 5 * i
  local id, outcome = ARGV[at], ARGV[at + 3]
  if id == '' then return bad_arg('job id must not be empty') end
  local token, bad3 = int_arg(ARGV[at + 1], 'attempts', 1, MAX_INT)
  if bad3 then return bad3 end
  if outcome ~= 'complete' and outcome ~= 'fail' then
    return bad_arg('outcome must be complete or fail')
  end
  if seen[id] then return bad_arg('job ' .. id .. ' is given twice') end
  seen[id] = true
  tokens[i] = token
end
local refused = check_types(1, 2, 3, 4, 5)
if refused then return refused end
local paused = paused_reply()
local note = not paused and attempt_note(actor) or nil

local reply = {'', ''}
local plans, histories = {}, {}
-- One job reported and one claimed count nothing twice: a batch is worth its tables from two of a kind.
if jobs > 1 or count > 1 then count_batch() end
for i = 0, jobs - 1 do
  local at = 6 + 5 * i
  local id = ARGV[at]
  local job_key = PREFIX .. 'job:' .. id
  local completing = ARGV[at + 3] == 'complete'
  local refusal, history = check_lease(job_key, KEYS[2], id, tokens[i], ARGV[at + 2], completing)
  reply[i + 3] = refusal
  histories[i] = history
  if not refusal and ARGV[at + 3] == 'fail' then
    plans[i] = fail_plan(job_key, tokens[i], cut_utf8(ARGV[at + 4], MAX_ERROR_BYTES))
  end
end

local now = now_ms()
reply[1] = tostring(now)
local done, scored = {}, {}
for i = 0, jobs - 1 do
  if not reply[i + 3] then
    local at = 6 + 5 * i
    local id = ARGV[at]
    local job_key = PREFIX .. 'job:' .. id
    if plans[i] then
      local state, ms = fail_job(job_key, id, tokens[i], cut_utf8(ARGV[at + 4], MAX_ERROR_BYTES), backoff, actor,
                                 now, plans[i])
      reply[i + 3] = {'OK', state, tostring(ms)}
    else
      done[#done + 1] = id
      scored[#scored + 1] = now
      scored[#scored + 1] = id
      complete_job(job_key, id, tokens[i], actor, now, histories[i])
      reply[i + 3] = {'OK', 'done', tostring(now)}
    end
  end
end
if #done > 0 then
  redis.call('ZREM', KEYS[2], unpack(done))
  redis.call('ZADD', KEYS[3], unpack(scored))
end
reply[2] = paused or claim_due(now, lease, claim_id, actor, count, note)
count_flush()
return reply
