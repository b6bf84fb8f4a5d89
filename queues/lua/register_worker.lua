#!lua
--@include common.lua
-- register_worker: a worker says it is alive (at start and with every
-- heartbeat). Its entry lives for ttl_ms unless it registers again: a worker
-- that stops heartbeating disappears by itself, and the jobs it held are then
-- "held by a worker that is gone" until their leases lapse.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 worker id (1..256 bytes, as a job id), 2 ttl_ms (1000..86400000),
--       3 host, 4 pid, 5 runtime (e.g. "python 3.11.7 emq 0.1.0"),
--       6 concurrency, 7 started_ms, 8 held (how many leases it holds now),
--       9 held ids (up to 20, newline-separated, at most 8192 bytes),
--       10 release (optional: the code's version label, at most 64 bytes; '' when the runtime cannot tell;
--          each claim's history entry records its number, PROTOCOL.md section 9)
-- A release not seen before gets the next number in the hash PREFIX .. 'releases' ('L:' .. label -> n,
-- 'N:' .. n -> label, '#' -> the last n; at most 100000 releases, later ones get none).
-- Reply: {'OK', now_ms, expires_ms, new (1 when this call numbered its release: a release first seen)}
--        {'REFUSED', 'wrongtype', key, type}  nothing was written
-- Writes: the hash PREFIX .. 'worker:' .. id (the fields above plus
-- heartbeat_ms, expiring after ttl_ms) and the sorted set PREFIX .. 'workers'
-- (id -> expires_ms); drops at most 100 entries of that set that expired.
local id = ARGV[1]
local err = check_keys(nil)
if err then return err end
local bad_id = bad_worker_id(id)
if bad_id then return bad_id end
local ttl, bad = int_arg(ARGV[2], 'ttl_ms', 1000, MAX_LEASE_MS)
if bad then return bad end
local pid, bad2 = int_arg(ARGV[4] or '', 'pid', 0, MAX_INT)
if bad2 then return bad2 end
local concurrency, bad3 = int_arg(ARGV[6] or '', 'concurrency', 0, MAX_INT)
if bad3 then return bad3 end
local started, bad4 = int_arg(ARGV[7] or '', 'started_ms', 0, MAX_INT)
if bad4 then return bad4 end
local held, bad5 = int_arg(ARGV[8] or '', 'held', 0, MAX_INT)
if bad5 then return bad5 end
local registry, worker_key, releases = PREFIX .. 'workers', PREFIX .. 'worker:' .. id, PREFIX .. 'releases'
for _, key in ipairs({registry, worker_key, releases}) do
  local kind = redis.call('TYPE', key).ok
  local want = key == registry and 'zset' or 'hash'
  if kind ~= 'none' and kind ~= want then return {'REFUSED', 'wrongtype', key, kind} end
end
local release = cut_utf8(ARGV[10] or '', 64)
local release_n, new_release = '', 0
if release ~= '' then
  release_n = redis.call('HGET', releases, 'L:' .. release) or ''
  if release_n == '' and (to_int(redis.call('HGET', releases, '#') or '0') or 0) < 100000 then
    new_release = 1
  end
end
local now = now_ms()
local expires = now + ttl
local gone = redis.call('ZRANGEBYSCORE', registry, '-inf', '(' .. now, 'LIMIT', 0, 100)
if #gone > 0 then redis.call('ZREM', registry, unpack(gone)) end
redis.call('HSET', worker_key, 'id', id, 'host', cut_utf8(ARGV[3] or '', 256), 'pid', pid,
  'runtime', cut_utf8(ARGV[5] or '', 256), 'concurrency', concurrency, 'started_ms', started,
  'heartbeat_ms', now, 'expires_ms', expires, 'held', held, 'held_ids', cut_utf8(ARGV[9] or '', 8192),
  'release', release)
if new_release == 1 then
  release_n = tostring(redis.call('HINCRBY', releases, '#', 1))
  redis.call('HSET', releases, 'L:' .. release, release_n, 'N:' .. release_n, release)
end
redis.call('HSET', worker_key, 'release_n', release_n)
redis.call('PEXPIRE', worker_key, ttl)
redis.call('ZADD', registry, expires, id)
return {'OK', tostring(now), tostring(expires), new_release}
