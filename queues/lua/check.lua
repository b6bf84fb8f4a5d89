#!lua flags=no-writes
--@include common.lua
-- check (read): one bounded step of the integrity check. Each job looked at
-- is judged at one instant, so a job moving while the check runs is never
-- reported as torn.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 what to walk: 'pending' | 'active' | 'done' | 'failed' (ZSCAN of
--       that set) or 'hashes' (SCAN of the node's keys matching ARGV[4]),
--       2 cursor ('0' to start), 3 count (1..1000),
--       4 MATCH pattern for 'hashes' (the prefix, glob-escaped, then 'job:*')
-- Reply: {next_cursor ('0' when the walk is over), looked_at,
--         id1, problem1, detail1, id2, ...}
-- problem: missing_hash (in a set, no hash) | state_mismatch (the hash's
--   state names another set) | multiple_sets | no_set (a hash in no set) |
--   unknown_state | bad_attempts | wrong_type (the job's key is not a hash;
--   detail: its type)
local what, cursor, count = ARGV[1], ARGV[2], to_int(ARGV[3])
local err = check_keys(nil)
if err then return err end
if count == nil or count < 1 or count > 1000 then return bad_arg('count must be an integer in 1..1000') end
if STATE_SET[what] == nil and what ~= 'hashes' then return bad_arg('walk pending, active, done, failed or hashes') end

local reply = {'0', 0}
local function report(id, problem, detail)
  reply[#reply + 1] = id
  reply[#reply + 1] = problem
  reply[#reply + 1] = detail
end

local function judge(id)
  local job_key = PREFIX .. 'job:' .. id
  local sets = {}
  for name, index in pairs(STATE_SET) do
    if redis.call('ZSCORE', KEYS[index], id) then sets[#sets + 1] = name end
  end
  table.sort(sets)
  local kind = redis.call('TYPE', job_key).ok
  if kind == 'none' then
    if #sets > 0 then report(id, 'missing_hash', table.concat(sets, ',')) end
    return
  end
  if kind ~= 'hash' then
    report(id, 'wrong_type', kind)
    return
  end
  local f = redis.call('HMGET', job_key, 'state', 'attempts')
  local state, attempts = f[1] or '', f[2]
  if #sets == 0 then report(id, 'no_set', state) end
  if #sets > 1 then report(id, 'multiple_sets', table.concat(sets, ',')) end
  if STATE_SET[state] == nil then
    report(id, 'unknown_state', state)
  elseif #sets == 1 and sets[1] ~= state then
    report(id, 'state_mismatch', 'state ' .. state .. ', in ' .. sets[1])
  end
  if attempts and to_int(attempts) == nil then report(id, 'bad_attempts', attempts) end
end

if what == 'hashes' then
  local found = redis.call('SCAN', cursor, 'MATCH', ARGV[4], 'COUNT', count)
  reply[1] = found[1]
  local prefix_len = #PREFIX + 4
  for _, key in ipairs(found[2]) do
    if string.sub(key, 1, prefix_len) == PREFIX .. 'job:' then
      reply[2] = reply[2] + 1
      local id = string.sub(key, prefix_len + 1)
      -- Jobs in a set are judged by the set walks; here only the orphans.
      local in_any = false
      for _, index in pairs(STATE_SET) do
        if redis.call('ZSCORE', KEYS[index], id) then in_any = true end
      end
      if not in_any then judge(id) end
    end
  end
  return reply
end

local found = redis.call('ZSCAN', KEYS[STATE_SET[what]], cursor, 'COUNT', count)
reply[1] = found[1]
for i = 1, #found[2], 2 do
  reply[2] = reply[2] + 1
  judge(found[2][i])
end
return reply
