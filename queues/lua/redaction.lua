#!lua flags=no-writes
--@include common.lua
-- redaction (read): the JSON paths whose values the queue's payloads show masked to those who may not see
-- them (redaction_set.lua), whether they are masked for everyone, and who set them when.
--
-- KEYS: 1 emq:{Q}:redaction
-- ARGV: none
-- Reply: {key type ('long' for paths over 4096 bytes), paths ('' when none or unreadable), mask_all ('1' or '';
--         '1' whenever the key holds another type or over-long paths), set_by, set_ms}
if #KEYS ~= 1 or not string.match(KEYS[1] or '', '^emq:{.+}:redaction$') then
  return bad_arg('KEYS must be emq:{Q}:redaction')
end
local kind = redis.call('TYPE', KEYS[1]).ok
-- A key another writer made (another type, or paths too long to be ours): masked for everyone until fixed.
if kind ~= 'hash' then return {kind, '', kind == 'none' and '' or '1', '', ''} end
if redis.call('HSTRLEN', KEYS[1], 'paths') > 4096 then return {'long', '', '1', '', ''} end
local f = redis.call('HMGET', KEYS[1], 'paths', 'mask_all', 'set_by', 'set_ms')
return {kind, f[1] or '', f[2] == '1' and '1' or '', f[3] or '', f[4] or ''}
