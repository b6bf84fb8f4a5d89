#!lua
--@include common.lua
-- slo_set: sets (or replaces) the latency objective of a queue, or of every queue whose name matches a
-- glob pattern, in the hash emq:slos (one key, outside every queue's slot: objectives are few and
-- read together). Its value is JSON: {metric, under_ms, target, window_days, set_by, set_ms}.
--
-- KEYS: 1 emq:slos
-- ARGV: 1 name (a queue name or a pattern with * ? [...], 1..128 bytes), 2 metric ('wait' | 'run'),
--       3 under_ms (1..86400000), 4 target (percent of jobs under under_ms: 1 to 3 digits, optionally
--       '.' and 1 to 3 more, above 0 and below 100), 5 window_days (1..90), 6 actor
-- Reply: {'OK', previous value or ''}
--        {'REFUSED', 'wrongtype', key, type}  emq:slos holds another type; nothing was written
--        {'REFUSED', 'full', count, ''}  there are 1000 objectives already and this one is new
-- Errors (nothing written): bad keys or arguments.
local MAX_SLOS = 1000
if #KEYS ~= 1 or KEYS[1] ~= 'emq:slos' then return bad_arg('KEYS must be emq:slos') end
local name, metric, target = ARGV[1] or '', ARGV[2], ARGV[4] or ''
if #name < 1 or #name > 128 then return bad_arg('name must be 1..128 bytes') end
if metric ~= 'wait' and metric ~= 'run' then return bad_arg('metric must be wait or run') end
local under, bad = int_arg(ARGV[3], 'under_ms', 1, MAX_LEASE_MS)
if bad then return bad end
if not string.match(target, '^%d%d?%d?$') and not string.match(target, '^%d%d?%d?%.%d%d?%d?$') then
  return bad_arg('target must be a percent such as 95 or 99.9')
end
if tonumber(target) <= 0 or tonumber(target) >= 100 then return bad_arg('target must be above 0 and below 100') end
local window, bad2 = int_arg(ARGV[5], 'window_days', 1, 90)
if bad2 then return bad2 end
local actor = cut_utf8(ARGV[6] or '', MAX_ACTOR_BYTES)
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'hash' then return {'REFUSED', 'wrongtype', KEYS[1], kind} end
local previous = kind == 'hash' and redis.call('HGET', KEYS[1], name) or false
if not previous and kind == 'hash' and redis.call('HLEN', KEYS[1]) >= MAX_SLOS then
  return {'REFUSED', 'full', tostring(MAX_SLOS), ''}
end

local value = cjson.encode({metric = metric, under_ms = under, target = target, window_days = window,
                            set_by = actor, set_ms = now_ms()})
redis.call('HSET', KEYS[1], name, value)
return {'OK', previous or ''}
