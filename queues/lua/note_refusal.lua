#!lua flags=allow-oom
--@include common.lua
-- note_refusal: a worker whose claims Redis refuses (out of memory, a script
-- error) says so where the console looks, in its own registry entry, and
-- stays registered meanwhile. It is flagged allow-oom, as extend is: under
-- maxmemory register_worker is refused, and without this the entry of a
-- worker that is alive would expire, so the queue would look abandoned when
-- it is starved of memory. Its writes replace fields of an entry that exists
-- and the score of its id; it never creates an entry.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 worker id, 2 ttl_ms (1000..86400000), 3 kind (oom | script_error),
--       4 text (cut at 512 bytes)
-- Reply: {'OK', now_ms, expires_ms}
--        {'REFUSED', 'missing', '', ''}  no live entry for that worker: nothing written
--        {'REFUSED', 'wrongtype', key, type}  nothing was written
-- Writes: on PREFIX .. 'worker:' .. id the fields heartbeat_ms, expires_ms,
-- refused_kind, refused_ms, refused_text and refused_n (+1; 1 when not an integer), its expiry
-- (ttl_ms); the id's score in PREFIX .. 'workers' (ZADD XX).
local id = ARGV[1]
local err = check_keys(nil)
if err then return err end
local bad_id = bad_worker_id(id)
if bad_id then return bad_id end
local ttl, bad = int_arg(ARGV[2], 'ttl_ms', 1000, MAX_LEASE_MS)
if bad then return bad end
local kind = ARGV[3]
if kind ~= 'oom' and kind ~= 'script_error' then return bad_arg('kind must be oom or script_error') end
local registry, worker_key = PREFIX .. 'workers', PREFIX .. 'worker:' .. id
local registry_type, worker_type = redis.call('TYPE', registry).ok, redis.call('TYPE', worker_key).ok
if registry_type ~= 'none' and registry_type ~= 'zset' then return {'REFUSED', 'wrongtype', registry, registry_type} end
if worker_type ~= 'none' and worker_type ~= 'hash' then return {'REFUSED', 'wrongtype', worker_key, worker_type} end
if worker_type == 'none' or registry_type == 'none' or not redis.call('ZSCORE', registry, id) then
  return refuse('missing', '', '')
end
local count = to_int(redis.call('HGET', worker_key, 'refused_n')) or 0
local now = now_ms()
local expires = now + ttl
redis.call('HSET', worker_key, 'heartbeat_ms', now, 'expires_ms', expires, 'refused_kind', kind, 'refused_ms', now,
  'refused_text', cut_utf8(ARGV[4] or '', 512), 'refused_n', math.min(count + 1, MAX_INT))
redis.call('PEXPIRE', worker_key, ttl)
redis.call('ZADD', registry, 'XX', expires, id)
return {'OK', tostring(now), tostring(expires)}
