#!lua
--@include common.lua
-- enqueue_many: add several new jobs in one call, each exactly as `enqueue`
-- adds one (same fields, same event, same history). An id that exists
-- already is refused on its own and the others are added. Every id is checked
-- before the first write, so one call instead of one per job weakens nothing.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 delay_ms (0..315360000000), 2 max_attempts (1..1000000), 3 actor,
--       then for each job (1..1000 jobs, each id once): id, payload
-- Reply: {due_ms, then one entry per job, in order:
--         'OK' | {'DUPLICATE', state, attempts}}
--        {'REFUSED', 'wrongtype', key, type}  a key of another type; nothing written
-- Errors (nothing written): bad keys, delay_ms, max_attempts, job count,
-- an empty or repeated id.
local unknown_move = check_moves('enqueue')
if unknown_move then return unknown_move end
local actor = ARGV[3] or ''
local err = check_keys(nil)
if err then return err end
local delay, bad = int_arg(ARGV[1], 'delay_ms', 0, MAX_DELAY_MS)
if bad then return bad end
local max_attempts, bad2 = int_arg(ARGV[2], 'max_attempts', 1, MAX_TRIES)
if bad2 then return bad2 end
local count = (#ARGV - 3) / 2
if count < 1 or count > MAX_BATCH or count ~= math.floor(count) then
  return bad_arg('give 1..1000 jobs, each as id, payload')
end
local seen = {}
for i = 0, count - 1 do
  local id = ARGV[4 + 2 * i]
  if id == '' then return bad_arg('job id must not be empty') end
  if seen[id] then return bad_arg('job ' .. id .. ' is given twice') end
  seen[id] = true
end
local refused = check_types(1, 5)
if refused then return refused end
local kinds = {}
for i = 0, count - 1 do
  local job_key = PREFIX .. 'job:' .. ARGV[4 + 2 * i]
  kinds[i] = redis.call('TYPE', job_key).ok
  if kinds[i] ~= 'none' and kinds[i] ~= 'hash' then return {'REFUSED', 'wrongtype', job_key, kinds[i]} end
end

local now = now_ms()
local due = now + delay
local reply = {tostring(due)}
local fresh = {}
for i = 0, count - 1 do
  if kinds[i] == 'hash' then
    local f = redis.call('HMGET', PREFIX .. 'job:' .. ARGV[4 + 2 * i], 'state', 'attempts')
    reply[i + 2] = {'DUPLICATE', f[1] or '', f[2] or ''}
  else
    reply[i + 2] = 'OK'
    fresh[#fresh + 1] = i
  end
end

if #fresh == 0 then return reply end
if #fresh > 1 then count_batch() end
local scored = {}
for _, i in ipairs(fresh) do
  local id, payload = ARGV[4 + 2 * i], ARGV[5 + 2 * i]
  local job_key = PREFIX .. 'job:' .. id
  scored[#scored + 1] = due
  scored[#scored + 1] = id
  -- The job's fields go in the history entry's HSET (one call, and no history read of a hash not yet made).
  emit(KEYS[5], 'enqueue', id, '', 'pending', 0, actor, now, job_key, nil, new_job_fields(payload, max_attempts))
end
redis.call('ZADD', KEYS[1], unpack(scored))
count_flush()
return reply
