#!lua
--@include common.lua
-- slo_delete: removes the latency objective set for a name (a queue or a pattern; see slo_set.lua).
--
-- KEYS: 1 emq:slos
-- ARGV: 1 name
-- Reply: {'OK', the value removed}
--        {'REFUSED', 'missing', '', ''}  no objective is set for that name; nothing was written
--        {'REFUSED', 'wrongtype', key, type}  emq:slos holds another type; nothing was written
-- Errors (nothing written): bad keys or name.
if #KEYS ~= 1 or KEYS[1] ~= 'emq:slos' then return bad_arg('KEYS must be emq:slos') end
local name = ARGV[1] or ''
if #name < 1 or #name > 128 then return bad_arg('name must be 1..128 bytes') end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'hash' then return {'REFUSED', 'wrongtype', KEYS[1], kind} end
local previous = kind == 'hash' and redis.call('HGET', KEYS[1], name) or false
if not previous then return {'REFUSED', 'missing', '', ''} end

redis.call('HDEL', KEYS[1], name)
return {'OK', previous}
