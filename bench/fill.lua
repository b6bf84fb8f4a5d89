-- fill (benchmark only): writes `count` pending jobs exactly as the enqueue
-- move writes them (job hash with state, attempts, payload, max_attempts,
-- created_at; the id in pending, due now; one event each), without a script
-- call per job, so that a state of 10^6 jobs is ready in seconds.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 first number, 2 count, 3 payload, 4 actor
-- Reply: the number of jobs written
local prefix = KEYS[6]
local first, count, payload, actor = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for n = first, first + count - 1 do
  local id = string.format('fill%010d', n)
  redis.call('HSET', prefix .. 'job:' .. id, 'state', 'pending', 'attempts', 0, 'payload', payload,
    'max_attempts', 3, 'created_at', now)
  redis.call('ZADD', KEYS[1], now, id)
  redis.call('XADD', KEYS[5], 'MAXLEN', '~', 10000, '*', 'move', 'enqueue', 'id', id, 'from', '',
    'to', 'pending', 'attempts', '0', 'actor', actor, 'ts', tostring(now))
end
return count
