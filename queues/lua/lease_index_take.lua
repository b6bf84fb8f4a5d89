#!lua
--@include common.lua
-- lease_index_take (sweeper): up to `limit` queues of the lease index whose
-- score has passed, earliest first. Each is given the score `mark` (now +
-- look_again_ms) before the sweeper reads the queue; lease_index_settle then
-- knows that no claimer lowered it meanwhile. A sweeper that stops before it
-- settles sees those queues again at `mark`.
--
-- KEYS: 1 the lease index (emq:leases)
-- ARGV: 1 limit (1..1000), 2 look_again_ms (1..99999999999999 minus now)
-- Reply: {now_ms, mark, name1, name2, ...}  no name when none is due
--        {'REFUSED', 'wrongtype', key, type}  nothing was written
-- Errors (nothing written): bad limit or look_again_ms.
local limit, bad = int_arg(ARGV[1], 'limit', 1, MAX_BATCH)
if bad then return bad end
local now = now_ms()
local look_again, bad2 = int_arg(ARGV[2], 'look_again_ms', 1, MAX_INT - now)
if bad2 then return bad2 end
local refused = wrong_type(KEYS[1], 'zset')
if refused then return refused end

local mark = now + look_again
local names = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
local reply = {now, mark}
for _, name in ipairs(names) do
  redis.call('ZADD', KEYS[1], 'XX', mark, name)
  reply[#reply + 1] = name
end
return reply
