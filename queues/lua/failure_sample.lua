#!lua flags=no-writes
--@include common.lua
-- failure_sample (read): one bounded slice of a state's jobs, newest first (highest score first), with
-- what explains a failure group: each job's group, the newest attempt's worker and release, and its
-- payload while it is short. The console walks the failed set with it (and takes a few of done and
-- pending as the baseline of "all jobs"), one call per step, so Redis serves every other client
-- between two calls; PROTOCOL.md, section 9c.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 state, 2 offset (rank from the newest, 0..), 3 entries to look at (1..1000),
--       4 time budget in microseconds (100..20000, checked every 16 entries),
--       5 payload bytes (0..4096: a longer payload is not read, '' is returned with its length),
--       6 payloads per group (0..1000: payloads are returned for at most this many jobs of each
--         group, the jobs of no group counted as one), 7.. release numbers to name besides those
--         the jobs' claims name (at most 64 in all are named)
-- Reply: {'OK', now_ms, jobs in the state's set, looked_at, next offset, done (0 | 1), µs this call ran,
--         names (how many number, label pairs follow), number, label, ...,
--         then per job looked at 8 values: id, score, group ('' none), claimed ('1' when its history
--         holds a claim, else '0'), the newest claim's actor, its note ('' none; section 9),
--         payload ('' when not returned), payload length}
--        {'REFUSED', 'wrongtype', key, its type}   the state's key is no zset
-- A job whose key is not a hash (or is gone) is returned with length -1 and nothing else known. At most
-- 262144 payload bytes are returned in one call; past them payloads are left out ('' as above).
-- Errors: bad keys, state, offset, entries, budget, payload bytes or payloads per group.
local err = check_keys(nil)
if err then return err end
local set = KEYS[STATE_SET[ARGV[1]] or 0]
if set == nil then return bad_arg('state must be pending, active, done or failed') end
local offset, bad = int_arg(ARGV[2], 'offset', 0, MAX_INT)
if bad then return bad end
local entries, bad2 = int_arg(ARGV[3], 'entries', 1, 1000)
if bad2 then return bad2 end
local budget_us, bad3 = int_arg(ARGV[4], 'time budget', 100, 20000)
if bad3 then return bad3 end
local payload_max, bad4 = int_arg(ARGV[5], 'payload bytes', 0, 4096)
if bad4 then return bad4 end
local per_group, bad5 = int_arg(ARGV[6], 'payloads per group', 0, 1000)
if bad5 then return bad5 end
local refused = wrong_type(set, 'zset')
if refused then return refused end

local PAYLOAD_TOTAL, NAMES_MAX, MAX_HISTORY = 262144, 64, 16384
local function clock_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local started = clock_us()
local card = redis.call('ZCARD', set)
local found = redis.call('ZREVRANGE', set, offset, offset + entries - 1, 'WITHSCORES')
local jobs, wanted, named = {}, {}, {}
local function want(n)
  if n and not named[n] and #wanted < NAMES_MAX then named[n] = true; wanted[#wanted + 1] = n end
end
for i = 7, #ARGV do want(string.match(ARGV[i], '^%d+$')) end
local payload_bytes, per = 0, {}
local looked = 0
for i = 1, #found, 2 do
  local id, score = found[i], found[i + 1]
  local job_key = PREFIX .. 'job:' .. id
  looked = looked + 1
  if redis.call('TYPE', job_key).ok ~= 'hash' then
    jobs[#jobs + 1] = {id, score, '', '0', '', '', '', -1}
  else
    local history_length = redis.call('HSTRLEN', job_key, 'history')
    local length = redis.call('HSTRLEN', job_key, 'payload')
    local f = redis.call('HMGET', job_key, 'fsig', 'history')
    local group = f[1] or ''
    local claimed, actor, note = '0', '', ''
    local entries_of = history_length <= MAX_HISTORY and f[2] and parse_history(f[2])
    if entries_of then
      for k = #entries_of, 1, -1 do
        if entries_of[k].code == 'c' then
          claimed, actor, note = '1', entries_of[k].actor, entries_of[k].err or ''
          break
        end
      end
    end
    want(string.match(note, '^(%d+)'))
    local payload = ''
    local taken = per[group] or 0
    if length <= payload_max and taken < per_group and payload_bytes + length <= PAYLOAD_TOTAL then
      payload = redis.call('HGET', job_key, 'payload') or ''
      payload_bytes = payload_bytes + #payload
      per[group] = taken + 1
    end
    jobs[#jobs + 1] = {id, score, group, claimed, actor, note, payload, length}
  end
  if looked % 16 == 0 and clock_us() - started >= budget_us then break end
end
local names = {}
if #wanted > 0 then
  local fields = {}
  for k, n in ipairs(wanted) do fields[k] = 'N:' .. n end
  -- pcall: a releases key of another type names nothing.
  local labels = redis.pcall('HMGET', PREFIX .. 'releases', unpack(fields))
  if type(labels) == 'table' and not labels.err then
    for k, n in ipairs(wanted) do
      if labels[k] then names[#names + 1] = n; names[#names + 1] = labels[k] end
    end
  end
end
local next_offset = offset + looked
local reply = {'OK', now_ms(), card, looked, next_offset, next_offset >= card and 1 or 0, clock_us() - started,
               #names / 2}
for _, v in ipairs(names) do reply[#reply + 1] = v end
for _, job in ipairs(jobs) do
  for k = 1, 8 do reply[#reply + 1] = job[k] end
end
return reply
