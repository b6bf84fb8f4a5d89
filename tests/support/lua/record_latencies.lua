#!lua
--@include common.lua
-- record_latencies (tests only): counts durations through record_latency, the function claim and
-- complete/fail call (common.lua), at a synthetic server time, so that a test can record a workload
-- of 100,000 jobs with known waits without waiting for them.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 ts (the server time to count at, ms), 2 kind ('W' wait | 'R' run), 3.. durations (ms);
--       or kind 'e' (enqueued) and 3 a count, added through count_series as enqueue adds its own
-- Reply: the number of durations (or enqueues) counted
local err = check_keys(nil)
if err then return err end
local ts = tonumber(ARGV[1])
if ARGV[2] == 'e' then
  for _ = 1, tonumber(ARGV[3]) do count_series(PREFIX, ts, 'e') end
  return tonumber(ARGV[3])
end
for i = 3, #ARGV do record_latency(PREFIX, ts, ARGV[2], tonumber(ARGV[i])) end
return #ARGV - 2
