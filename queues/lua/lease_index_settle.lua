#!lua
--@include common.lua
-- lease_index_settle (sweeper): after lease_index_take gave these queues the
-- score `mark` and the sweeper ran recover_expired on each, sets each queue's
-- score to the earliest lease deadline that queue reported (next_ms), or
-- removes the queue when it reported none (0). A queue whose score is no
-- longer `mark` was claimed in meanwhile and its claimer lowered the score:
-- then the score only goes lower (to next_ms when that is earlier), never up.
--
-- KEYS: 1 the lease index (emq:leases)
-- ARGV: 1 mark (as lease_index_take returned it), then pairs of
--       name, next_ms (0..99999999999999; 0: the queue holds no lease)
-- Reply: {'OK', set, removed, kept}  kept: scores a claimer had lowered
--        {'REFUSED', 'wrongtype', key, type}  nothing was written
-- Errors (nothing written): bad mark, an odd number of pair elements, or a
-- bad next_ms.
local mark, bad = int_arg(ARGV[1], 'mark', 1, MAX_INT)
if bad then return bad end
if #ARGV % 2 ~= 1 then return bad_arg('lease_index_settle takes the mark and then name, next_ms pairs') end
local pairs_ = {}
for i = 2, #ARGV, 2 do
  local next_ms, bad2 = int_arg(ARGV[i + 1], 'next_ms', 0, MAX_INT)
  if bad2 then return bad2 end
  pairs_[#pairs_ + 1] = {ARGV[i], next_ms}
end
local refused = wrong_type(KEYS[1], 'zset')
if refused then return refused end

local set, removed, kept = 0, 0, 0
for _, pair in ipairs(pairs_) do
  local name, next_ms = pair[1], pair[2]
  local score = redis.call('ZSCORE', KEYS[1], name)
  if score and tonumber(score) == mark then
    if next_ms == 0 then
      redis.call('ZREM', KEYS[1], name)
      removed = removed + 1
    else
      redis.call('ZADD', KEYS[1], next_ms, name)
      set = set + 1
    end
  else
    kept = kept + 1
    if next_ms > 0 then redis.call('ZADD', KEYS[1], 'LT', next_ms, name) end
  end
end
return {'OK', set, removed, kept}
