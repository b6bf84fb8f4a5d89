#!lua
--@include common.lua
-- schema_set: sets (or, with an empty text, removes) the JSON Schema an edit of the queue's payloads is
-- checked against (the checking is the caller's: PROTOCOL.md, section 2a), in the hash emq:{Q}:schema.
--
-- KEYS: 1 emq:{Q}:schema
-- ARGV: 1 the schema (JSON text of an object, at most 65536 bytes; '' = remove), 2 actor
-- Reply: {'OK', previous schema or ''}
--        {'REFUSED', 'missing', '', ''}  there is no schema to remove; nothing was written
--        {'REFUSED', 'wrongtype', key, type}  the key holds another type; nothing was written
-- Errors (nothing written): bad keys or a schema that is not a JSON object.
if #KEYS ~= 1 or not string.match(KEYS[1] or '', '^emq:{.+}:schema$') then
  return bad_arg('KEYS must be emq:{Q}:schema')
end
local text = ARGV[1]
if text == nil then return bad_arg('the schema is required (may be empty)') end
if #text > 65536 then return bad_arg('a schema must be at most 65536 bytes') end
if text ~= '' then
  local ok, decoded = pcall(cjson.decode, text)
  if not ok or type(decoded) ~= 'table' or not string.match(text, '^%s*{') then
    return bad_arg('a schema must be a JSON object')
  end
end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'hash' then return {'REFUSED', 'wrongtype', KEYS[1], kind} end
local previous = kind == 'hash' and redis.call('HGET', KEYS[1], 'schema') or false
if text == '' and not previous then return {'REFUSED', 'missing', '', ''} end

if text == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('HSET', KEYS[1], 'schema', text, 'set_by', cut_utf8(ARGV[2] or '', MAX_ACTOR_BYTES),
             'set_ms', string.format('%d', now_ms()))
end
return {'OK', previous or ''}
