#!lua
--@include common.lua
-- deploy_mark: records that release LABEL was deployed at a moment, in the sorted set emq:deploys (one key,
-- outside every queue's slot: marks are few and drawn on every queue's charts). A mark is the member
-- MINUTE .. '\t' .. LABEL (MINUTE: the moment's epoch minute) scored by the moment in ms, so a second mark
-- of the same label in the same minute is the same mark. Marks older than 90 days are dropped, and past
-- 10000 marks the oldest: at most DROP_MAX of each per call, so a key another writer filled with millions
-- of members costs one call milliseconds, not seconds (later marks drop the rest).
--
-- KEYS: 1 emq:deploys
-- ARGV: 1 label (1..64 bytes, no control characters or tabs), 2 at_ms ('' for the server's now;
--       else 0..99999999999999)
-- Reply: {'OK', at_ms, 'new' | 'duplicate'}
--        {'REFUSED', 'wrongtype', key, type}  emq:deploys holds another type; nothing was written
-- Errors (nothing written): bad keys or arguments.
local KEEP_MS, MAX_MARKS, DROP_MAX = 90 * 86400000, 10000, 100
if #KEYS ~= 1 or KEYS[1] ~= 'emq:deploys' then return bad_arg('KEYS must be emq:deploys') end
local label = ARGV[1] or ''
if #label < 1 or #label > 64 or string.find(label, '[%z\1-\31\127]') then
  return bad_arg('label must be 1..64 bytes without control characters')
end
local now = now_ms()
local at = now
if (ARGV[2] or '') ~= '' then
  local given, bad = int_arg(ARGV[2], 'at_ms', 0, MAX_INT)
  if bad then return bad end
  at = given
end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'zset' then return {'REFUSED', 'wrongtype', KEYS[1], kind} end
local member = string.format('%d', math.floor(at / 60000)) .. '\t' .. label
local known = redis.call('ZSCORE', KEYS[1], member)
if known then return {'OK', known, 'duplicate'} end
redis.call('ZADD', KEYS[1], at, member)
local expired = redis.call('ZRANGE', KEYS[1], '-inf', '(' .. string.format('%d', now - KEEP_MS), 'BYSCORE',
  'LIMIT', 0, DROP_MAX)
if #expired > 0 then redis.call('ZREM', KEYS[1], unpack(expired)) end
local extra = math.min(redis.call('ZCARD', KEYS[1]) - MAX_MARKS, DROP_MAX)
if extra > 0 then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, extra - 1) end
return {'OK', string.format('%d', at), 'new'}
