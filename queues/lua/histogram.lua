#!lua flags=no-writes
--@include common.lua
-- histogram (read): the queue's latency histograms (latency.lua) and move counts per minute or hour,
-- merged server-side into `points` points of `per` consecutive slots each, so that a day of minutes
-- or a month of hours comes back as a few hundred numbers.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 resolution ('m' minutes, 'h' hours), 2 first (minute or hour since the epoch, 0..; '':
--       the slots that end with the current one), 3 per (slots per point, 1..240), 4 points
--       (1..240); per * points at most 1440; 5 back (optional, with first '': end that many slots
--       before the current one, 0..100000)
-- Reply: {now_ms, first, then per point: {odd, field1, count1, field2, count2, ...}}
--        fields: e, c, f (the move counts of count_series), then W<bucket> and R<bucket> (waits and
--        runs), each summed over the point's slots; odd: how many of its slots were left out, their
--        key being of another type or holding more fields than any script writes
local err = check_keys(nil)
if err then return err end
local resolution = ARGV[1]
if resolution ~= 'm' and resolution ~= 'h' then return bad_arg("resolution must be 'm' or 'h'") end
local per, bad2 = int_arg(ARGV[3], 'per', 1, 240)
if bad2 then return bad2 end
local points, bad3 = int_arg(ARGV[4], 'points', 1, 240)
if bad3 then return bad3 end
if per * points > 1440 then return bad_arg('per * points must be at most 1440') end
local now = now_ms()
local first, bad
if ARGV[2] == '' then
  local back, bad4 = int_arg(ARGV[5] or '0', 'back', 0, 100000)
  if bad4 then return bad4 end
  first = math.floor(now / (resolution == 'm' and 60000 or 3600000)) - back - per * points + 1
else
  first, bad = int_arg(ARGV[2], 'first', 0, MAX_INT)
  if bad then return bad end
end
-- A script writes 15 counters and at most 2 * 700 buckets (up to MAX_DELAY_MS) into one slot's hash.
local MAX_FIELDS = 2048
local reply = {now, first}
for p = 0, points - 1 do
  local sums, order, odd = {}, {}, 0
  for slot = first + p * per, first + (p + 1) * per - 1 do
    local key = PREFIX .. resolution .. ':' .. slot
    local kind = redis.call('TYPE', key).ok
    if kind == 'hash' and redis.call('HLEN', key) <= MAX_FIELDS then
      local flat = redis.call('HGETALL', key)
      for i = 1, #flat, 2 do
        local name = flat[i]
        local lead = string.byte(name, 1)
        -- 'W', 'R', or exactly e, c, f
        if ((lead == 87 or lead == 82) and string.match(name, '^[WR]%d+$')) or name == 'e' or name == 'c' or name == 'f' then
          local n = to_int(flat[i + 1])
          if n and n > 0 then
            if not sums[name] then order[#order + 1] = name; sums[name] = 0 end
            sums[name] = sums[name] + n
          end
        end
      end
    elseif kind ~= 'none' then
      odd = odd + 1
    end
  end
  local point = {odd}
  for _, name in ipairs(order) do
    point[#point + 1] = name
    point[#point + 1] = string.format('%d', sums[name])
  end
  reply[#reply + 1] = point
end
return reply
