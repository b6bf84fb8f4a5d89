#!lua
--@include common.lua
--@include schedule_args.lua
-- schedule_pause: pauses a schedule (no tick is enqueued while it is paused) or resumes it (from the
-- next tick after now: the ticks it missed while paused are not enqueued).
--
-- KEYS: 1 emq:{Q}:schedule:<name>, 2 emq:{Q}:schedules
-- ARGV: 1 name, 2 'pause' | 'resume', 3 expected version ('' any), 4 next_ms (resume: the first tick after
--       now, computed by the caller; pause: '' or any integer, ignored), 5 actor
-- Reply: {'OK', version, next_ms}
--        {'ALREADY', version}                  it was paused (resumed) already; nothing was written
--        {'REFUSED', 'missing', '', ''}        no such schedule
--        {'REFUSED', 'changed', version, ''}   the stored version is not the expected one
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys or arguments.
local name, what = ARGV[1], ARGV[2]
local bad = bad_schedule_name(name)
if bad then return bad end
local err = check_schedule_keys(name, 1, 2)
if err then return err end
if what ~= 'pause' and what ~= 'resume' then return bad_arg('the second argument must be pause or resume') end
local expected, bad_version = version_arg(ARGV[3])
if bad_version then return bad_version end
local next_ms
if what == 'resume' then
  local n, bad_next = int_arg(ARGV[4], 'next_ms', 0, MAX_INT)
  if bad_next then return bad_next end
  next_ms = n
elseif ARGV[4] ~= '' then
  local _, bad_next = int_arg(ARGV[4], 'next_ms', 0, MAX_INT)
  if bad_next then return bad_next end
end
local actor = cut_utf8(ARGV[5] or '', MAX_ACTOR_BYTES)
local refused = schedule_types(1, 2)
if refused then return refused end
if redis.call('EXISTS', KEYS[1]) == 0 then return {'REFUSED', 'missing', '', ''} end
local version = schedule_version(KEYS[1])
if expected and expected ~= version then return {'REFUSED', 'changed', tostring(version), ''} end
local paused = redis.call('HGET', KEYS[1], 'paused') == '1'
if paused == (what == 'pause') then return {'ALREADY', tostring(version)} end

local now = now_ms()
version = version + 1
if what == 'pause' then
  redis.call('HSET', KEYS[1], 'paused', '1', 'paused_ms', tostring(now), 'paused_by', actor,
             'version', tostring(version))
  redis.call('ZADD', KEYS[2], SCHEDULE_PAUSED_SCORE, name)
  return {'OK', tostring(version), redis.call('HGET', KEYS[1], 'next_ms') or ''}
end
redis.call('HSET', KEYS[1], 'paused', '0', 'resumed_ms', tostring(now), 'resumed_by', actor,
           'version', tostring(version), 'next_ms', tostring(next_ms))
redis.call('ZADD', KEYS[2], next_ms, name)
return {'OK', tostring(version), tostring(next_ms)}
