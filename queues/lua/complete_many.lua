#!lua
--@include common.lua
-- complete_many: the lease holder finished several jobs; each goes active ->
-- done exactly as `complete` moves one, and each is fenced on its own: a job
-- whose lease is no longer the caller's is refused and left as it is, while
-- the others complete. One call instead of one per job is what lets a worker
-- report a batch cheaply; it weakens nothing, because every job's lease is
-- checked before the first write of the call.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 actor, then for each job (1..1000 jobs, each id once):
--       id, attempts (the fencing token), claim_id
-- Reply: {finished_ms, then one entry per job, in order:
--         'OK' | {'REFUSED', reason, state, attempts}}
--        reason: missing | state | token | wrongtype (then: key, type)
--        {'REFUSED', 'wrongtype', key, type}  a queue key of another type;
--            nothing was written
-- Errors (nothing written): bad keys, a bad job count, attempts or a
-- repeated id.
local unknown_move = check_moves('complete', 'fail')
if unknown_move then return unknown_move end
--@include finish.lua
local actor = ARGV[1] or ''
local err = check_keys(nil)
if err then return err end
local count = (#ARGV - 1) / 3
if count < 1 or count > MAX_BATCH or count ~= math.floor(count) then
  return bad_arg('give 1..1000 jobs, each as id, attempts, claim_id')
end
local seen, tokens = {}, {}
for i = 0, count - 1 do
  local id = ARGV[2 + 3 * i]
  if id == '' then return bad_arg('job id must not be empty') end
  local token, bad = int_arg(ARGV[3 + 3 * i], 'attempts', 1, MAX_INT)
  if bad then return bad end
  if seen[id] then return bad_arg('job ' .. id .. ' is given twice') end
  seen[id] = true
  tokens[i] = token
end
local refused = check_types(2, 3, 5)
if refused then return refused end

local reply = {}
local ok, histories = {}, {}
for i = 0, count - 1 do
  local id = ARGV[2 + 3 * i]
  local refusal, history = check_lease(PREFIX .. 'job:' .. id, KEYS[2], id, tokens[i], ARGV[4 + 3 * i], true)
  histories[i] = history
  reply[i + 2] = refusal or 'OK'
  if not refusal then ok[#ok + 1] = i end
end

local now = now_ms()
reply[1] = tostring(now)
if #ok == 0 then return reply end
if #ok > 1 then count_batch() end
local ids, scored = {}, {}
for _, i in ipairs(ok) do
  local id = ARGV[2 + 3 * i]
  local job_key = PREFIX .. 'job:' .. id
  ids[#ids + 1] = id
  scored[#scored + 1] = now
  scored[#scored + 1] = id
  complete_job(job_key, id, tokens[i], actor, now, histories[i])
end
redis.call('ZREM', KEYS[2], unpack(ids))
redis.call('ZADD', KEYS[3], unpack(scored))
count_flush()
return reply
