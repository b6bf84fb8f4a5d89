#!lua
--@include common.lua
--@include schedule_args.lua
-- schedule_set: adds a schedule (a recurring job) to a queue, or replaces an existing one's definition.
-- It keeps what the schedule's ticks have done (last tick, recent jobs, counts), so a tick already
-- enqueued is never enqueued again after an edit.
--
-- KEYS: 1 emq:{Q}:schedule:<name>, 2 emq:{Q}:schedules
-- ARGV: 1 name (1..64 of A-Z a-z 0-9 . _ -, starting with a letter or digit), 2 mode ('add' | 'update'),
--       3 expected version ('' any; update only), 4 cron (5 fields, 1..128 bytes; '' for an interval),
--       5 tz (an IANA zone name with a cron, 1..64 bytes; '' for an interval), 6 every_ms (1000..315360000000
--       for an interval; '' with a cron), 7 payload (at most 1 MiB), 8 max_attempts (1..1000000),
--       9 missed ('once' | 'skip'), 10 paused ('0' | '1'), 11 next_ms (the first tick, 0..99999999999999,
--       computed by the caller from the definition), 12 actor
-- Reply: {'OK', version, next_ms}
--        {'REFUSED', 'exists', version, ''}    add: the name is taken; nothing was written
--        {'REFUSED', 'missing', '', ''}        update: no such schedule; nothing was written
--        {'REFUSED', 'changed', version, ''}   update: the stored version is not the expected one
--        {'REFUSED', 'full', count, ''}        add: the queue has 1000 schedules already
--        {'REFUSED', 'wrongtype', key, type}   nothing was written
-- Errors (nothing written): bad keys or arguments.
local name, mode = ARGV[1], ARGV[2]
local bad = bad_schedule_name(name)
if bad then return bad end
local err = check_schedule_keys(name, 1, 2)
if err then return err end
if mode ~= 'add' and mode ~= 'update' then return bad_arg('mode must be add or update') end
local expected, bad_version = version_arg(ARGV[3])
if bad_version then return bad_version end
local cron, tz, every = ARGV[4] or '', ARGV[5] or '', ARGV[6] or ''
local every_ms
if cron ~= '' then
  if every ~= '' then return bad_arg('a schedule has a cron expression or an interval, not both') end
  if #cron > 128 or not string.match(cron, '^[0-9A-Za-z%*/,%-%?#]+ [0-9A-Za-z%*/,%-%?#]+ [0-9A-Za-z%*/,%-%?#]+ '
                                          .. '[0-9A-Za-z%*/,%-%?#]+ [0-9A-Za-z%*/,%-%?#]+$') then
    return bad_arg('cron must be 5 fields of 0-9 A-Z a-z * / , - ? # separated by single spaces, at most 128 bytes')
  end
  if #tz < 1 or #tz > 64 or not string.match(tz, '^[A-Za-z][A-Za-z0-9_+/%-]*$') then
    return bad_arg('tz must be an IANA time zone name (1..64 of A-Z a-z 0-9 _ + / -)')
  end
else
  if tz ~= '' then return bad_arg('tz goes with a cron expression; an interval counts from the epoch') end
  local n, bad_every = int_arg(every, 'every_ms', 1000, MAX_DELAY_MS)
  if bad_every then return bad_every end
  every_ms = n
end
local payload = ARGV[7]
if payload == nil then return bad_arg('payload is required') end
if #payload > SCHEDULE_PAYLOAD_BYTES then return bad_arg('payload must be at most 1048576 bytes') end
local max_attempts, bad2 = int_arg(ARGV[8], 'max_attempts', 1, MAX_TRIES)
if bad2 then return bad2 end
local missed, paused = ARGV[9], ARGV[10]
if missed ~= 'once' and missed ~= 'skip' then return bad_arg('missed must be once or skip') end
if paused ~= '0' and paused ~= '1' then return bad_arg('paused must be 0 or 1') end
local next_ms, bad3 = int_arg(ARGV[11], 'next_ms', 0, MAX_INT)
if bad3 then return bad3 end
local actor = cut_utf8(ARGV[12] or '', MAX_ACTOR_BYTES)
local refused = schedule_types(1, 2)
if refused then return refused end

local exists = redis.call('EXISTS', KEYS[1]) == 1
local version = exists and schedule_version(KEYS[1]) or 0
if mode == 'add' then
  if exists then return {'REFUSED', 'exists', tostring(version), ''} end
  local count = redis.call('ZCARD', KEYS[2])
  if count >= SCHEDULES_PER_QUEUE then return {'REFUSED', 'full', tostring(count), ''} end
else
  if not exists then return {'REFUSED', 'missing', '', ''} end
  if expected and expected ~= version then return {'REFUSED', 'changed', tostring(version), ''} end
end

local now = now_ms()
local was_paused = exists and redis.call('HGET', KEYS[1], 'paused') == '1'
version = version + 1
local fields = {'name', name, 'cron', cron, 'tz', tz, 'every_ms', every_ms and tostring(every_ms) or '',
                'payload', payload, 'max_attempts', tostring(max_attempts), 'missed', missed, 'paused', paused,
                'version', tostring(version), 'next_ms', tostring(next_ms), 'updated_ms', tostring(now),
                'updated_by', actor}
if not exists then
  fields[#fields + 1] = 'created_ms'
  fields[#fields + 1] = tostring(now)
end
if paused == '1' and not was_paused then
  fields[#fields + 1] = 'paused_ms'
  fields[#fields + 1] = tostring(now)
  fields[#fields + 1] = 'paused_by'
  fields[#fields + 1] = actor
end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('ZADD', KEYS[2], paused == '1' and SCHEDULE_PAUSED_SCORE or next_ms, name)
return {'OK', tostring(version), tostring(next_ms)}
