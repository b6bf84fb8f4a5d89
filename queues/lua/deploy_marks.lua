#!lua flags=no-writes
--@include common.lua
-- deploy_marks (read): the deploy marks from since_ms to until_ms, oldest first, at most `limit`
-- (with ARGV 4 'desc': the newest `limit` of them, newest first).
--
-- KEYS: 1 emq:deploys
-- ARGV: 1 since_ms, 2 until_ms (0..99999999999999), 3 limit (1..1000), 4 order ('asc' or absent | 'desc')
-- Reply: {now_ms, key type, at_ms1, label1, at_ms2, label2, ...} (no marks when the key is of another type)
if #KEYS ~= 1 or KEYS[1] ~= 'emq:deploys' then return bad_arg('KEYS must be emq:deploys') end
local since, bad = int_arg(ARGV[1], 'since_ms', 0, MAX_INT)
if bad then return bad end
local till, bad2 = int_arg(ARGV[2], 'until_ms', 0, MAX_INT)
if bad2 then return bad2 end
local limit, bad3 = int_arg(ARGV[3], 'limit', 1, 1000)
if bad3 then return bad3 end
local order = ARGV[4] or 'asc'
if order ~= 'asc' and order ~= 'desc' then return bad_arg('order must be asc or desc') end
local kind = redis.call('TYPE', KEYS[1]).ok
local reply = {now_ms(), kind}
if kind ~= 'zset' then return reply end
local found = order == 'asc' and redis.call('ZRANGEBYSCORE', KEYS[1], since, till, 'WITHSCORES', 'LIMIT', 0, limit)
  or redis.call('ZREVRANGEBYSCORE', KEYS[1], till, since, 'WITHSCORES', 'LIMIT', 0, limit)
for i = 1, #found, 2 do
  local tab = string.find(found[i], '\t', 1, true)
  reply[#reply + 1] = found[i + 1]
  reply[#reply + 1] = tab and string.sub(found[i], tab + 1) or found[i]
end
return reply
