#!lua
--@include common.lua
-- unregister_worker: a worker that stops cleanly says so (a worker that dies
-- disappears when its entry expires).
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 worker id
-- Reply: {'OK', removed (0 or 1)}
--        {'REFUSED', 'wrongtype', key, type}  nothing was written
local id = ARGV[1]
local err = check_keys(nil)
if err then return err end
if id == nil or id == '' or #id > 256 then return bad_arg('worker id must be 1..256 bytes') end
local registry, worker_key = PREFIX .. 'workers', PREFIX .. 'worker:' .. id
for _, key in ipairs({registry, worker_key}) do
  local kind = redis.call('TYPE', key).ok
  local want = key == registry and 'zset' or 'hash'
  if kind ~= 'none' and kind ~= want then return {'REFUSED', 'wrongtype', key, kind} end
end
local removed = redis.call('ZREM', registry, id)
redis.call('DEL', worker_key)
return {'OK', removed}
