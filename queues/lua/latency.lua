-- Latency histograms, kept by the moves (included by common.lua; PROTOCOL.md, "Latency histograms"):
-- every claim counts the job's wait (now - its due score) and every complete or fail its run (now -
-- the claim's time) into the minute and hour hashes count_series writes (PREFIX .. 'm:' .. minute,
-- PREFIX .. 'h:' .. hour), as the field 'W' .. bucket or 'R' .. bucket, so that they are written
-- in the same call as the move, live in the queue's slot and expire with the move counters.
--
-- Buckets are log-linear on integer ms, as HdrHistogram's: below 2 * LATENCY_SUB ms one bucket per
-- ms, then each power of two split into LATENCY_SUB equal buckets (at most 1/16 = 6.25 % wide).
-- Bucket b < 32 holds exactly b ms; for b >= 32, with g = floor(b / 16) - 1, it holds
-- [(b - 16 g) * 2^g, (b - 16 g + 1) * 2^g). One day is bucket 372. Integer arithmetic only
-- (math.frexp of an integer is exact), so every runtime computes the same bucket.
local LATENCY_SUB_BITS = 4
local LATENCY_SUB = 16

local function latency_bucket(ms)
  if ms < 2 * LATENCY_SUB then return ms end
  local _, e = math.frexp(ms) -- 2^(e-1) <= ms < 2^e
  local g = e - LATENCY_SUB_BITS - 1
  return g * LATENCY_SUB + math.floor(ms / 2 ^ g)
end

-- The lowest ms bucket `b` holds.
local function latency_bucket_low(b)
  if b < 2 * LATENCY_SUB then return b end
  local g = math.floor(b / LATENCY_SUB) - 1
  return (b - g * LATENCY_SUB) * 2 ^ g
end

-- Counts one duration (`n` of them, 1 when absent) of `kind` ('W' wait, 'R' run) at server time `ts`;
-- a duration that is not a number (another writer's due time of -inf or nan) is not measured rather
-- than counted as 0 or as forever, and one longer than MAX_DELAY_MS counts as that.
local function record_latency(prefix, ts, kind, ms, n)
  if ms ~= ms or ms == math.huge or ms == -math.huge then return end
  ms = math.floor(math.min(math.max(ms, 0), MAX_DELAY_MS))
  count_series(prefix, ts, kind .. latency_bucket(ms), n)
end
