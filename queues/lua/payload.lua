#!lua flags=no-writes
--@include common.lua
-- payload (read): a job's whole payload, for an explicit "show all" or a
-- download; refused above `max_bytes` without reading it.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 max_bytes (0..536870912)
-- Reply: {now_ms, key type, payload length, payload}
--        {'REFUSED', 'too_large', length, max_bytes}  nothing was read
--        (a missing hash or field: type 'none' or length 0 with '')
local id = ARGV[1]
local err = check_keys(id)
if err then return err end
local limit, bad = int_arg(ARGV[2], 'max_bytes', 0, 536870912)
if bad then return bad end
local kind = redis.call('TYPE', KEYS[6]).ok
if kind ~= 'hash' then return {now_ms(), kind, 0, ''} end
local length = redis.call('HSTRLEN', KEYS[6], 'payload')
if length > limit then return {'REFUSED', 'too_large', length, limit} end
return {now_ms(), kind, length, redis.call('HGET', KEYS[6], 'payload') or ''}
