#!lua flags=no-writes
--@include common.lua
-- groups (read): a queue's failure groups, largest first, O(log G + limit)
-- whatever the number of failed jobs (the moves keep them; see grouping.lua).
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 limit (1..200), 2 group id ('' = the largest groups; else that
--       group only)
-- Reply: {'OK', now_ms, failed (jobs in the failed set), groups (how many),
--         then per group 8 values: group id, count, signature, first seen ms,
--         last seen ms, sample job id, the sample's error, rels (the releases
--         its failing attempts ran on: numbers and '-', space-separated;
--         grouping.lua); a value longer than 8192 bytes, which no script
--         writes, is not read: its length comes in its place, as an integer}
--        {'REFUSED', 'wrongtype', key, its type}   the index is not a zset
-- Errors: bad keys or limit.
local err = check_keys(nil)
if err then return err end
local limit, bad = int_arg(ARGV[1], 'limit', 1, 200)
if bad then return bad end
local only = ARGV[2] or ''
local index = PREFIX .. 'failures'
local GROUP_FIELDS, GROUP_VALUE_READ_MAX = {'sig', 'first', 'last', 'sample', 'error', 'rels'}, 8192
local refused = check_types(4) or wrong_type(index, 'zset')
if refused then return refused end
local ids
if only ~= '' then
  local count = redis.call('ZSCORE', index, only)
  ids = count and {only, count} or {}
else
  ids = redis.call('ZREVRANGE', index, 0, limit - 1, 'WITHSCORES')
end
local reply = {'OK', now_ms(), redis.call('ZCARD', KEYS[4]), redis.call('ZCARD', index)}
for i = 1, #ids, 2 do
  local key = PREFIX .. 'failure:' .. ids[i]
  local f = {}
  if redis.call('TYPE', key).ok == 'hash' then
    -- Each value's length first (O(1)): another writer's far longer value is named by its length, not copied.
    local long = {}
    for j, name in ipairs(GROUP_FIELDS) do
      local length = redis.call('HSTRLEN', key, name)
      if length > GROUP_VALUE_READ_MAX then long[j] = length end
    end
    if next(long) == nil then
      f = redis.call('HMGET', key, unpack(GROUP_FIELDS))
    else
      for j, name in ipairs(GROUP_FIELDS) do f[j] = long[j] or redis.call('HGET', key, name) end
    end
  end
  reply[#reply + 1] = ids[i]
  reply[#reply + 1] = ids[i + 1]
  for j = 1, 6 do reply[#reply + 1] = f[j] or '' end
end
return reply
