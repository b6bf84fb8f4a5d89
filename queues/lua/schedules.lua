#!lua flags=no-writes
--@include common.lua
--@include schedule_args.lua
-- schedules (read): a page of a queue's schedules in the order of their next tick (paused ones last), each
-- with its definition, what its ticks did, and the state of its recent jobs. Bounded whatever the data: at
-- most `limit` schedules, no value longer than 1024 bytes read (a longer one comes back '' with, for the
-- payload, its length), at most 20 recent jobs each.
--
-- KEYS: 1 emq:{Q}:schedules (the schedule hashes are built from its prefix, as claim builds job keys)
-- ARGV: 1 up_to: '' for every schedule, or ms (0..99999999999999): only those whose score is at most it (the
--       due ones), 2 cursor score ('' from the start), 3 cursor name (the last one of the page before),
--       4 limit (1..100)
-- Reply: {now_ms, total (ZCARD), earliest score ('' when none), next cursor score, next cursor name ('' and ''
--         when the page is the last), then one array per schedule:
--         {name, score, key type, cron, tz, every_ms, missed, paused, max_attempts, version, next_ms,
--          last_tick_ms, last_job, last_enqueued_ms, ticks, runs, skipped, last_skipped_ms, created_ms,
--          updated_ms, updated_by, paused_ms, paused_by, payload length (integer), payload head (at most 256
--          bytes of a payload of at most 1024, else ''), then per recent job, oldest first: id suffix, state
--          ('' when the job is gone, 'wrongtype:<type>' for a key of another type)}}
--        {'REFUSED', 'wrongtype', key, type}
-- Errors: bad keys or arguments.
local FIELDS = {'cron', 'tz', 'every_ms', 'missed', 'paused', 'max_attempts', 'version', 'next_ms',
                'last_tick_ms', 'last_job', 'last_enqueued_ms', 'ticks', 'runs', 'skipped', 'last_skipped_ms',
                'created_ms', 'updated_ms', 'updated_by', 'paused_ms', 'paused_by'}
local set = KEYS[1] or ''
local prefix = string.sub(set, 1, -10)
if #KEYS ~= 1 or string.sub(set, -10) ~= ':schedules' or not string.match(prefix, '^emq:{[^{}]+}:$') then
  return bad_arg('KEYS must be a queue\'s emq:{Q}:schedules')
end
local up_to = '+inf'
if ARGV[1] ~= '' then
  local n, bad = int_arg(ARGV[1], 'up_to', 0, MAX_INT)
  if bad then return bad end
  up_to = n
end
local cursor_score, cursor_name = nil, ARGV[3] or ''
if ARGV[2] ~= '' then
  local n, bad = int_arg(ARGV[2], 'cursor score', 0, MAX_INT)
  if bad then return bad end
  cursor_score = n
end
local limit, bad_limit = int_arg(ARGV[4], 'limit', 1, 100)
if bad_limit then return bad_limit end
local refused = wrong_type(set, 'zset')
if refused then return refused end

local now = now_ms()
local total = redis.call('ZCARD', set)
local first = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')
local start = 0
if cursor_score then
  local at = redis.call('ZSCORE', set, cursor_name)
  if at and tonumber(at) == cursor_score then
    start = redis.call('ZRANK', set, cursor_name) + 1
  else
    start = redis.call('ZCOUNT', set, '-inf', '(' .. cursor_score)
  end
end
local members = redis.call('ZRANGE', set, start, start + limit, 'WITHSCORES')
local reply = {now, total, first[2] or '', '', ''}
local shown = 0
local function bounded(key, field)
  if redis.call('HSTRLEN', key, field) > 1024 then return '' end
  return redis.call('HGET', key, field) or ''
end
for i = 1, #members, 2 do
  local name, score = members[i], members[i + 1]
  if up_to ~= '+inf' and tonumber(score) > up_to then break end
  if shown == limit then
    reply[4], reply[5] = reply[#reply][2], reply[#reply][1]
    break
  end
  local key = prefix .. 'schedule:' .. name
  local kind = redis.call('TYPE', key).ok
  local row = {name, score, kind}
  if kind == 'hash' then
    for _, field in ipairs(FIELDS) do row[#row + 1] = bounded(key, field) end
    local length = redis.call('HSTRLEN', key, 'payload')
    row[#row + 1] = length
    row[#row + 1] = length <= 1024 and cut_utf8(redis.call('HGET', key, 'payload') or '', 256) or ''
    local parts = 0
    for suffix in string.gmatch(bounded(key, 'recent'), '[^,]+') do
      parts = parts + 1
      if parts > SCHEDULE_RECENT then break end
      local job = prefix .. 'job:' .. name .. ':' .. suffix
      local job_kind = redis.call('TYPE', job).ok
      local state = ''
      if job_kind == 'hash' then
        state = redis.call('HSTRLEN', job, 'state') <= 64 and (redis.call('HGET', job, 'state') or '') or ''
      elseif job_kind ~= 'none' then
        state = 'wrongtype:' .. job_kind
      end
      row[#row + 1] = suffix
      row[#row + 1] = state
    end
  else
    for _ = 1, #FIELDS do row[#row + 1] = '' end
    row[#row + 1] = 0
    row[#row + 1] = ''
  end
  reply[#reply + 1] = row
  shown = shown + 1
end
return reply
