#!lua flags=no-writes
--@include common.lua
-- versions (read): a job's kept payload versions (payload_versions.lua): the index, and the bytes of one
-- version when asked, whole only when it is at most `max_bytes` long.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 version ('' = none, else its number), 3 max_bytes (0..1048576)
-- Reply: {now_ms, key type, index ('' when none, or when longer than 8192 bytes: then flagged),
--         index length, version length (0 when not kept), version bytes ('' when longer than max_bytes)}
local id = ARGV[1]
local err = check_keys(id)
if err then return err end
local seq = nil
if ARGV[2] ~= nil and ARGV[2] ~= '' then
  local n, bad = int_arg(ARGV[2], 'version', 1, MAX_INT)
  if bad then return bad end
  seq = n
end
local limit, bad = int_arg(ARGV[3] or '', 'max_bytes', 0, 1048576)
if bad then return bad end
local kind = redis.call('TYPE', KEYS[6]).ok
if kind ~= 'hash' then return {now_ms(), kind, '', 0, 0, ''} end
local index_length = redis.call('HSTRLEN', KEYS[6], 'versions')
local index = index_length <= 8192 and (redis.call('HGET', KEYS[6], 'versions') or '') or ''
local length, bytes = 0, ''
if seq then
  local field = 'version:' .. string.format('%d', seq)
  length = redis.call('HSTRLEN', KEYS[6], field)
  if length <= limit then bytes = redis.call('HGET', KEYS[6], field) or '' end
end
return {now_ms(), kind, index, index_length, length, bytes}
