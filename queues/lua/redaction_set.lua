#!lua
--@include common.lua
-- redaction_set: sets (or, with no paths and mask_all '0', removes) the JSON paths whose values the queue's
-- payloads show masked, and whether they are masked for everyone, in the hash emq:{Q}:redaction (the
-- masking is the reader's: PROTOCOL.md, section 2b).
--
-- KEYS: 1 emq:{Q}:redaction
-- ARGV: 1 the paths, one a line (at most 4096 bytes; '' = none), 2 mask_all ('1' or '0'), 3 actor
-- Reply: {'OK', previous paths or '', previous mask_all ('1' or '')}
--        {'REFUSED', 'missing', '', ''}  there is nothing to remove; nothing was written
--        {'REFUSED', 'wrongtype', key, type}  the key holds another type; nothing was written
-- Errors (nothing written): bad keys, paths over 4096 bytes, a mask_all that is not '1' or '0'.
if #KEYS ~= 1 or not string.match(KEYS[1] or '', '^emq:{.+}:redaction$') then
  return bad_arg('KEYS must be emq:{Q}:redaction')
end
local paths, mask_all = ARGV[1], ARGV[2]
if paths == nil then return bad_arg('the paths are required (may be empty)') end
if #paths > 4096 then return bad_arg('the paths must be at most 4096 bytes') end
if mask_all ~= '1' and mask_all ~= '0' then return bad_arg("mask_all must be '1' or '0'") end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'hash' then return {'REFUSED', 'wrongtype', KEYS[1], kind} end
local previous = kind == 'hash' and redis.call('HMGET', KEYS[1], 'paths', 'mask_all') or {false, false}
if paths == '' and mask_all == '0' and kind == 'none' then return {'REFUSED', 'missing', '', ''} end

if paths == '' and mask_all == '0' then
  redis.call('DEL', KEYS[1])
else
  redis.call('HSET', KEYS[1], 'paths', paths, 'mask_all', mask_all,
             'set_by', cut_utf8(ARGV[3] or '', MAX_ACTOR_BYTES), 'set_ms', string.format('%d', now_ms()))
end
return {'OK', previous[1] or '', previous[2] == '1' and '1' or ''}
