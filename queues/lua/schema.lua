#!lua flags=no-writes
--@include common.lua
-- schema (read): the JSON Schema set for the queue's edits (schema_set.lua), and who set it when.
--
-- KEYS: 1 emq:{Q}:schema
-- ARGV: none
-- Reply: {key type, schema ('' when none, or when the key holds another type), set_by, set_ms}
if #KEYS ~= 1 or not string.match(KEYS[1] or '', '^emq:{.+}:schema$') then
  return bad_arg('KEYS must be emq:{Q}:schema')
end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'hash' or redis.call('HSTRLEN', KEYS[1], 'schema') > 65536 then return {kind, '', '', ''} end
local f = redis.call('HMGET', KEYS[1], 'schema', 'set_by', 'set_ms')
return {kind, f[1] or '', f[2] or '', f[3] or ''}
