-- Shared by the schedule scripts (PROTOCOL.md section 9b): a schedule is the hash
-- <prefix>schedule:<name> and its entry in the sorted set <prefix>schedules, scored by its next
-- tick (ms; SCHEDULE_PAUSED_SCORE while paused, so that no scheduler finds it due).
local SCHEDULES_PER_QUEUE = 1000
local SCHEDULE_RECENT = 20
-- The most of a schedule's recent list a tick reads (see schedule_tick.lua).
local RECENT_READ_MAX = 1024
local SCHEDULE_PAUSED_SCORE = MAX_INT
local SCHEDULE_PAYLOAD_BYTES = 1048576

local function bad_schedule_name(name)
  if type(name) ~= 'string' or #name < 1 or #name > 64 or not string.match(name, '^[A-Za-z0-9][A-Za-z0-9._%-]*$') then
    return bad_arg('schedule name must be 1..64 of A-Z a-z 0-9 . _ - starting with a letter or digit')
  end
end

-- KEYS[hash_i] must be <prefix>schedule:<name> and KEYS[set_i] <prefix>schedules, of one queue's prefix
-- (emq:{Q}:); returns the error, or nil and the prefix.
local function check_schedule_keys(name, hash_i, set_i)
  local set = KEYS[set_i] or ''
  local prefix = string.sub(set, 1, -10)
  if string.sub(set, -10) ~= ':schedules' or not string.match(prefix, '^emq:{[^{}]+}:$') then
    return bad_arg('KEYS[' .. set_i .. '] must be a queue\'s emq:{Q}:schedules')
  end
  if KEYS[hash_i] ~= prefix .. 'schedule:' .. name then
    return bad_arg('KEYS[' .. hash_i .. '] must be ' .. prefix .. 'schedule:' .. name)
  end
  return nil, prefix
end

-- The schedule hash and the set hold their types (or do not exist).
local function schedule_types(hash_i, set_i)
  return wrong_type(KEYS[hash_i], 'hash') or wrong_type(KEYS[set_i], 'zset')
end

-- The stored version (a number the set, pause and resume scripts raise by one), 0 when unreadable.
local function schedule_version(hash_key)
  return to_int(redis.call('HGET', hash_key, 'version') or '') or 0
end

-- A caller's expected version: '' (any) or an integer that must equal the stored one.
local function version_arg(value)
  if value == nil or value == '' then return nil end
  local n, bad = int_arg(value, 'expected version', 0, MAX_INT)
  if bad then return nil, bad end
  return n
end
