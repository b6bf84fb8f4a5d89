#!lua
--@include common.lua
--@include schedule_args.lua
-- schedule_tick: enqueues one tick of a schedule, at most once. The tick's job id is NAME:TICK_MS, so a
-- tick's job can exist only once; the schedule's next tick moves on in the same step, and a tick that is
-- not ahead of the schedule's last one is refused. Two schedulers, or a scheduler that sends a tick again
-- after a failover, cannot enqueue a tick twice. The caller computes the ticks from the definition (a
-- cron expression in a time zone, or an interval counted from the epoch); the script checks them against
-- the stored schedule and the server's clock before its first write.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 the job: emq:{Q}:job:NAME:TICK_MS (tick),
--       emq:{Q}:job:NAME:run:STAMP (run), emq:{Q}:job:NAME:TICK_MS (skip: never written),
--       7 emq:{Q}:schedule:NAME, 8 emq:{Q}:schedules
-- ARGV: 1 name, 2 what: 'tick' (enqueue the tick TICK_MS), 'skip' (move past the tick without enqueuing it:
--       the schedule skips missed ticks) or 'run' (enqueue one job now, outside the ticks: "run now"),
--       3 tick_ms (tick, skip: 0..99999999999999) or the run's stamp (run: 1..99999999999999, the caller's
--       choice, e.g. its clock in ms; the same stamp twice is the same run), 4 next_ms (tick, skip: the tick
--       after TICK_MS, greater than it; run: ''), 5 expected version (tick, skip: the version the ticks were
--       computed from; run: '' or a version), 6 actor
-- Checks, before any write: the schedule exists; its version is the expected one ('changed'); tick and
-- skip: it is not paused ('paused'), TICK_MS is not later than the server's now ('not_due'), not before
-- the schedule's next_ms and after its last tick ('ticked': a scheduler did it already).
-- Reply: {'OK', 'enqueued' | 'existed' | 'skipped', job id ('' for skip), now_ms, next_ms ('' for run),
--         the earliest score of emq:{Q}:schedules after the move ('' when empty)}
--        ('existed': the tick's job exists already, from before a delete and add of the schedule; the
--         schedule moves on without enqueuing)
--        {'DUPLICATE', state, attempts}   run: that stamp's job exists; nothing was written
--        {'REFUSED', reason, detail, ''}  missing | changed (detail: the version) | paused | not_due
--                                         (detail: now_ms) | ticked (detail: the last tick or next_ms);
--                                         nothing was written
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys or arguments.
local unknown_move = check_moves('enqueue')
if unknown_move then return unknown_move end
local name, what = ARGV[1], ARGV[2]
local bad = bad_schedule_name(name)
if bad then return bad end
if what ~= 'tick' and what ~= 'skip' and what ~= 'run' then return bad_arg('what must be tick, skip or run') end
local stamp, bad_stamp = int_arg(ARGV[3], what == 'run' and 'stamp' or 'tick_ms', what == 'run' and 1 or 0, MAX_INT)
if bad_stamp then return bad_stamp end
local suffix = what == 'run' and ('run:' .. string.format('%d', stamp)) or string.format('%d', stamp)
local job_id = name .. ':' .. suffix
local err = check_keys(job_id)
if err then return err end
if KEYS[7] ~= PREFIX .. 'schedule:' .. name or KEYS[8] ~= PREFIX .. 'schedules' then
  return bad_arg('KEYS[7] and KEYS[8] must be ' .. PREFIX .. 'schedule:' .. name .. ' and ' .. PREFIX .. 'schedules')
end
local next_ms
if what ~= 'run' then
  local n, bad_next = int_arg(ARGV[4], 'next_ms', stamp + 1, MAX_INT)
  if bad_next then return bad_next end
  next_ms = n
elseif ARGV[4] ~= '' then
  return bad_arg('next_ms must be empty for a run')
end
local expected, bad_version = version_arg(ARGV[5])
if bad_version then return bad_version end
if what ~= 'run' and not expected then return bad_arg('a tick or skip needs the expected version') end
local actor = cut_utf8(ARGV[6] or '', MAX_ACTOR_BYTES)
local refused = check_types(1, 5, 6) or schedule_types(7, 8)
if refused then return refused end
if redis.call('EXISTS', KEYS[7]) == 0 then return {'REFUSED', 'missing', '', ''} end
local f = redis.call('HMGET', KEYS[7], 'version', 'paused', 'next_ms', 'last_tick_ms', 'max_attempts')
local version = to_int(f[1] or '') or 0
if expected and expected ~= version then return {'REFUSED', 'changed', tostring(version), ''} end
local now = now_ms()
if what ~= 'run' then
  if f[2] == '1' then return {'REFUSED', 'paused', tostring(version), ''} end
  if stamp > now then return {'REFUSED', 'not_due', tostring(now), ''} end
  local stored_next, last = to_int(f[3] or ''), to_int(f[4] or '')
  if stored_next and stamp < stored_next then return {'REFUSED', 'ticked', tostring(stored_next), ''} end
  if last and stamp <= last then return {'REFUSED', 'ticked', tostring(last), ''} end
end
local exists = redis.call('EXISTS', KEYS[6]) == 1
if exists and what == 'run' then
  local j = redis.call('HMGET', KEYS[6], 'state', 'attempts')
  return {'DUPLICATE', j[1] or '', j[2] or ''}
end
local payload_kind = redis.call('HSTRLEN', KEYS[7], 'payload')
if payload_kind > SCHEDULE_PAYLOAD_BYTES then return {'REFUSED', 'too_large', tostring(payload_kind), ''} end

local function earliest()
  local first = redis.call('ZRANGE', KEYS[8], 0, 0, 'WITHSCORES')
  return first[2] or ''
end
if what == 'skip' then
  redis.call('HSET', KEYS[7], 'next_ms', tostring(next_ms), 'last_skipped_ms', tostring(stamp),
             'skipped', tostring((to_int(redis.call('HGET', KEYS[7], 'skipped') or '') or 0) + 1))
  redis.call('ZADD', KEYS[8], next_ms, name)
  return {'OK', 'skipped', '', tostring(now), tostring(next_ms), earliest()}
end
local outcome = 'existed'
if not exists then
  local payload = redis.call('HGET', KEYS[7], 'payload') or ''
  local max_attempts = to_int(f[5] or '')
  if not max_attempts or max_attempts < 1 or max_attempts > MAX_TRIES then max_attempts = DEFAULT_MAX_ATTEMPTS end
  redis.call('HSET', KEYS[6], unpack(new_job_fields(payload, max_attempts)))
  redis.call('ZADD', KEYS[1], now, job_id)
  emit(KEYS[5], 'enqueue', job_id, '', 'pending', 0, actor, now, KEYS[6])
  outcome = 'enqueued'
end
-- The newest SCHEDULE_RECENT jobs' id suffixes, oldest first: the page's sparkline and last outcome.
-- A list longer than the scripts write (20 suffixes of about 20 bytes) is another writer's: not read, it starts
-- again from this tick, so that no tick splits megabytes.
local recent = {}
if redis.call('HSTRLEN', KEYS[7], 'recent') <= RECENT_READ_MAX then
  for part in string.gmatch(redis.call('HGET', KEYS[7], 'recent') or '', '[^,]+') do recent[#recent + 1] = part end
end
if outcome == 'enqueued' then recent[#recent + 1] = suffix end
-- The newest ones at once (a field not written by a script may hold thousands of parts).
if #recent > SCHEDULE_RECENT then recent = {unpack(recent, #recent - SCHEDULE_RECENT + 1)} end
local fields = {'recent', table.concat(recent, ','), 'last_job', job_id, 'last_enqueued_ms', tostring(now)}
if what == 'tick' then
  for _, v in ipairs({'last_tick_ms', string.format('%d', stamp), 'next_ms', tostring(next_ms), 'ticks',
                      tostring((to_int(redis.call('HGET', KEYS[7], 'ticks') or '') or 0) + 1)}) do
    fields[#fields + 1] = v
  end
else
  fields[#fields + 1] = 'runs'
  fields[#fields + 1] = tostring((to_int(redis.call('HGET', KEYS[7], 'runs') or '') or 0) + 1)
end
redis.call('HSET', KEYS[7], unpack(fields))
if what == 'tick' then redis.call('ZADD', KEYS[8], next_ms, name) end
return {'OK', outcome, job_id, tostring(now), next_ms and tostring(next_ms) or '', earliest()}
