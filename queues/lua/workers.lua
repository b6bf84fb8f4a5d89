#!lua flags=no-writes
--@include common.lua
-- workers (read): the live workers of a queue (entry not expired), at most `limit`.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 limit (1..1000)
-- Reply: {now_ms, live (how many entries have not expired), then per worker:
--         id, host, pid, runtime, concurrency, started_ms, heartbeat_ms,
--         expires_ms, held, held_ids}  (bulk strings, '' when a field is missing)
--        {'REFUSED', 'wrongtype', key, type}  the workers key holds another type
local err = check_keys(nil)
if err then return err end
local limit, bad = int_arg(ARGV[1], 'limit', 1, MAX_BATCH)
if bad then return bad end
local registry = PREFIX .. 'workers'
local kind = redis.call('TYPE', registry).ok
local now = now_ms()
if kind == 'none' then return {now, 0} end
if kind ~= 'zset' then return {'REFUSED', 'wrongtype', registry, kind} end
local reply = {now, redis.call('ZCOUNT', registry, now, '+inf')}
local fields = {'host', 'pid', 'runtime', 'concurrency', 'started_ms', 'heartbeat_ms', 'expires_ms', 'held', 'held_ids'}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', registry, now, '+inf', 'LIMIT', 0, limit)) do
  local key = PREFIX .. 'worker:' .. id
  reply[#reply + 1] = id
  local values = {}
  if redis.call('TYPE', key).ok == 'hash' then values = redis.call('HMGET', key, unpack(fields)) end
  for i = 1, #fields do
    local v = values[i]
    reply[#reply + 1] = v and cut_utf8(v, 8192) or ''
  end
end
return reply
