-- The evidence the why reads (why_queue, why_job) gather about a queue, at
-- one instant, in a fixed number of commands whatever the queue holds: O(1)
-- and O(log N) calls on the sets, at most WHY_WORKERS worker entries and
-- WHY_MINUTES minutes of history. Every text is cut, so the reply is bounded
-- in bytes too. The reader (queues/why.py) turns it into reasons; nothing
-- here decides.
local WHY_WORKERS = 20
local WHY_MINUTES = 6
local WHY_TEXT_BYTES = 512
-- A minute's hash holds a few counters and at most a few hundred latency buckets; one with more
-- (another writer's) is not read whole.
local WHY_SLOT_FIELDS = 2048

-- A field of a hash, or '' when absent; nil with the length when it is
-- longer than `max_bytes` (never read whole).
local function bounded_field(key, field, max_bytes)
  local n = redis.call('HSTRLEN', key, field)
  if n > max_bytes then return nil, n end
  return redis.call('HGET', key, field) or '', n
end

local function first_score(reply)
  return reply[2] or ''
end

local function queue_evidence(now)
  local e = {now_ms = now}
  e.pending = redis.call('ZCARD', KEYS[1])
  e.due = redis.call('ZCOUNT', KEYS[1], '-inf', now)
  e.active = redis.call('ZCARD', KEYS[2])
  e.lapsed = redis.call('ZCOUNT', KEYS[2], '-inf', '(' .. now)
  e.done = redis.call('ZCARD', KEYS[3])
  e.failed = redis.call('ZCARD', KEYS[4])
  e.oldest_due_ms = first_score(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1))
  e.newest_due_ms = first_score(redis.call('ZREVRANGEBYSCORE', KEYS[1], now, '-inf', 'WITHSCORES', 'LIMIT', 0, 1))
  e.next_due_ms = first_score(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1))
  local oldest_lease = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if oldest_lease[2] and tonumber(oldest_lease[2]) < now then
    e.oldest_lapsed_ms, e.oldest_lapsed_id = oldest_lease[2], cut_utf8(oldest_lease[1], WHY_TEXT_BYTES)
  end
  e.next_deadline_ms = first_score(redis.call('ZRANGEBYSCORE', KEYS[2], now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1))

  local paused_key = PREFIX .. 'paused'
  local paused_type = redis.call('TYPE', paused_key).ok
  e.paused = paused_type ~= 'none'
  if paused_type == 'hash' then
    local p = redis.call('HMGET', paused_key, 'since_ms', 'actor', 'reason')
    e.paused_since_ms, e.paused_by = cut_utf8(p[1] or '', 32), cut_utf8(p[2] or '', WHY_TEXT_BYTES)
    e.paused_reason = cut_utf8(p[3] or '', WHY_TEXT_BYTES)
  end

  local registry = PREFIX .. 'workers'
  local registry_type = redis.call('TYPE', registry).ok
  e.workers = {}
  e.live_workers = 0
  if registry_type == 'zset' then
    e.live_workers = redis.call('ZCOUNT', registry, now, '+inf')
    local fields = {'host', 'pid', 'concurrency', 'heartbeat_ms', 'expires_ms', 'held', 'refused_kind', 'refused_ms',
                    'refused_text', 'refused_n'}
    local rows = redis.call('ZRANGEBYSCORE', registry, now, '+inf', 'LIMIT', 0, WHY_WORKERS)
    for _, id in ipairs(rows) do
      local key = PREFIX .. 'worker:' .. id
      local w = {id = cut_utf8(id, WHY_TEXT_BYTES)}
      if redis.call('TYPE', key).ok == 'hash' then
        local values = redis.call('HMGET', key, unpack(fields))
        for i, name in ipairs(fields) do w[name] = cut_utf8(values[i] or '', WHY_TEXT_BYTES) end
      end
      e.workers[#e.workers + 1] = w
    end
    local last = redis.call('ZREVRANGEBYSCORE', registry, '(' .. now, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if last[1] then e.last_expired_id, e.last_expired_ms = cut_utf8(last[1], WHY_TEXT_BYTES), last[2] end
  elseif registry_type ~= 'none' then
    e.workers_wrongtype = registry_type
  end

  -- Arrivals (e) and claims (the wait buckets) per minute, for the rates; r, c and f beside them.
  e.minutes = {}
  local current = math.floor(now / 60000)
  for minute = current - WHY_MINUTES + 1, current do
    local key = PREFIX .. 'm:' .. minute
    if redis.call('TYPE', key).ok == 'hash' then
      local v = redis.call('HMGET', key, 'e', 'r', 'c', 'f', 'w0', 'w1', 'w2', 'w3', 'w4', 'w5', 'w6', 'w7', 'w8',
                           'w9', 'w10')
      local claims = 0
      for i = 5, 15 do claims = claims + (to_int(v[i]) or 0) end
      -- Claims are counted by their wait's latency bucket (W<b>, latency.lua); older scripts wrote w0..w10.
      if redis.call('HLEN', key) <= WHY_SLOT_FIELDS then
        local flat = redis.call('HGETALL', key)
        for i = 1, #flat, 2 do
          if string.byte(flat[i], 1) == 87 and string.match(flat[i], '^W%d+$') then
            claims = claims + (to_int(flat[i + 1]) or 0)
          end
        end
      end
      e.minutes[#e.minutes + 1] = {minute = minute, e = to_int(v[1]) or 0, r = to_int(v[2]) or 0,
                                   c = to_int(v[3]) or 0, f = to_int(v[4]) or 0, claims = claims}
    end
  end

  local counts = PREFIX .. 'counts'
  if redis.call('TYPE', counts).ok == 'hash' then
    local v = redis.call('HMGET', counts, 'corrupt', 'cancel')
    e.corrupt_total, e.cancelled_total = to_int(v[1]) or 0, to_int(v[2]) or 0
  end
  return e
end
