#!lua flags=no-writes
--@include common.lua
-- slos (read): every latency objective (slo_set.lua), at most 1000 of at most 1024 bytes each.
--
-- KEYS: 1 emq:slos
-- Reply: {now_ms, name1, value1, name2, value2, ...} (a value longer than 1024 bytes, not written by
--        slo_set, comes as '')
--        {'REFUSED', 'wrongtype', key, type}
if #KEYS ~= 1 or KEYS[1] ~= 'emq:slos' then return bad_arg('KEYS must be emq:slos') end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then return {now_ms()} end
if kind ~= 'hash' then return {'REFUSED', 'wrongtype', KEYS[1], kind} end
local reply = {now_ms()}
local cursor = '0'
repeat
  local page = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', 100)
  cursor = page[1]
  for i = 1, #page[2], 2 do
    if #reply < 2001 then
      reply[#reply + 1] = page[2][i]
      reply[#reply + 1] = redis.call('HSTRLEN', KEYS[1], page[2][i]) <= 1024 and page[2][i + 1] or ''
    end
  end
until cursor == '0' or #reply >= 2001
return reply
