#!lua flags=no-writes
--@include common.lua
-- series (read): the queue's per-minute or per-hour counts (count_series in
-- common.lua), for `count` consecutive minutes or hours from `first`.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 resolution ('m' minutes, 'h' hours), 2 first (minute or hour since
--       the epoch, 0..), 3 count (1..1000)
-- Reply: {now_ms, then per slot 15 values: e, c, f, r, w0..w10 (claims by wait: the fields older
--        scripts wrote plus the latency buckets W<b> folded in)} (bulk strings,
--        '' when missing; a slot whose key holds another type reads as empty)
local err = check_keys(nil)
if err then return err end
local resolution = ARGV[1]
if resolution ~= 'm' and resolution ~= 'h' then return bad_arg("resolution must be 'm' or 'h'") end
local first, bad = int_arg(ARGV[2], 'first', 0, MAX_INT)
if bad then return bad end
local count, bad2 = int_arg(ARGV[3], 'count', 1, MAX_BATCH)
if bad2 then return bad2 end
local fields = {'e', 'c', 'f', 'r', 'w0', 'w1', 'w2', 'w3', 'w4', 'w5', 'w6', 'w7', 'w8', 'w9', 'w10'}
local reply = {now_ms()}
-- A slot's waits: w0..w10 as older scripts wrote them, plus its latency buckets (W<b>, latency.lua)
-- folded into the wait bucket of each one's lowest ms.
local MAX_FIELDS = 2048
for slot = first, first + count - 1 do
  local key = PREFIX .. resolution .. ':' .. slot
  local values = {}
  if redis.call('TYPE', key).ok == 'hash' then
    values = redis.call('HMGET', key, unpack(fields))
    local n = redis.call('HLEN', key)
    if n <= MAX_FIELDS then
      local waits = {}
      local flat = redis.call('HGETALL', key)
      for i = 1, #flat, 2 do
        local b = string.byte(flat[i], 1) == 87 and string.match(flat[i], '^W(%d+)$')
        local c = b and to_int(flat[i + 1])
        if c then
          local w = 5 + bucket_of(latency_bucket_low(tonumber(b)))
          waits[w] = (waits[w] or to_int(values[w] or '0') or 0) + c
        end
      end
      for w, c in pairs(waits) do values[w] = string.format('%d', c) end
    end
  end
  for i = 1, #fields do reply[#reply + 1] = values[i] or '' end
end
return reply
