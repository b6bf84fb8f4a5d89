--@include common.lua
-- enqueue_many: add several new jobs in one call, each exactly as `enqueue`
-- adds one (same fields, same event). An id that exists already is refused
-- on its own and the others are added. Every id is checked before the first
-- write, so one call instead of one per job weakens nothing.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 delay_ms (integer >= 0), 2 max_attempts (integer >= 1), 3 actor,
--       then for each job (1..1000 jobs, each id once): id, payload
-- Reply: {due_ms, then one entry per job, in order:
--         'OK' | {'DUPLICATE', state, attempts}}
-- Errors (nothing written): bad keys, delay_ms, max_attempts, job count,
-- an empty or repeated id.
local delay, max_attempts, actor = to_int(ARGV[1]), to_int(ARGV[2]), ARGV[3]
local err = check_keys(nil)
if err then return err end
if delay == nil or delay < 0 then return bad_arg('delay_ms must be an integer >= 0') end
if max_attempts == nil or max_attempts < 1 then return bad_arg('max_attempts must be an integer >= 1') end
local count = (#ARGV - 3) / 2
if count < 1 or count > 1000 or count ~= math.floor(count) then
  return bad_arg('give 1..1000 jobs, each as id, payload')
end
local seen = {}
for i = 0, count - 1 do
  local id = ARGV[4 + 2 * i]
  if id == '' then return bad_arg('job id must not be empty') end
  if seen[id] then return bad_arg('job ' .. id .. ' is given twice') end
  seen[id] = true
end

local now = now_ms()
local due = now + delay
local reply = {tostring(due)}
local fresh = {}
for i = 0, count - 1 do
  local job_key = PREFIX .. 'job:' .. ARGV[4 + 2 * i]
  if redis.call('EXISTS', job_key) == 1 then
    local f = redis.call('HMGET', job_key, 'state', 'attempts')
    reply[i + 2] = {'DUPLICATE', f[1] or '', f[2] or ''}
  else
    reply[i + 2] = 'OK'
    fresh[#fresh + 1] = i
  end
end

if #fresh == 0 then return reply end
local scored = {}
for _, i in ipairs(fresh) do
  local id, payload = ARGV[4 + 2 * i], ARGV[5 + 2 * i]
  redis.call('HSET', PREFIX .. 'job:' .. id, 'state', 'pending', 'attempts', 0, 'payload', payload,
    'max_attempts', max_attempts, 'created_at', now)
  scored[#scored + 1] = due
  scored[#scored + 1] = id
  emit(KEYS[5], 'enqueue', id, '', 'pending', 0, actor, now)
end
redis.call('ZADD', KEYS[1], unpack(scored))
return reply
