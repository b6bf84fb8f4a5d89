#!lua flags=no-writes
--@include common.lua
-- counts (read): the queue's move counters (see count_move in common.lua),
-- the known fields only, so a hash another writer filled stays a bounded read.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- Reply: {field1, value1, field2, value2, ...} for the fields that exist
--        (values as the hash holds them: a reader skips any that is not an integer)
--        {'REFUSED', 'wrongtype', key, type}  the counts key holds another type
local err = check_keys(nil)
if err then return err end
local key = PREFIX .. 'counts'
local kind = redis.call('TYPE', key).ok
if kind == 'none' then return {} end
if kind ~= 'hash' then return {'REFUSED', 'wrongtype', key, kind} end
-- The move counters (counted_fields, from queues/protocol_moves.py), then the durations.
local fields = counted_fields()
fields[#fields + 1] = 'wait:sum'
fields[#fields + 1] = 'run:sum'
for _, kind in ipairs({'wait', 'run'}) do
  for bucket = 0, 10 do fields[#fields + 1] = kind .. ':' .. bucket end
end
local values = redis.call('HMGET', key, unpack(fields))
local reply = {}
for i, name in ipairs(fields) do
  if values[i] then
    reply[#reply + 1] = name
    reply[#reply + 1] = values[i]
  end
end
return reply
