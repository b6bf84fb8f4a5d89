-- A failure's cause without its particulars: the error's telling line with
-- numbers, ids, hex, UUIDs, e-mail addresses and quoted values replaced, so
-- that "timeout after 3012 ms on host a1b2" and "timeout after 2999 ms on
-- host c3d4" are one cause. Used by every move into failed; shared by every
-- runtime through this file, so all of them group alike.
local SIGNATURE_BYTES = 200
local function error_signature(text)
  local s = text or ''
  -- A Python traceback says what went wrong on its last line; everything
  -- else says it on its first (a Java stack trace's "at ..." lines follow it).
  if string.sub(s, 1, 34) == 'Traceback (most recent call last):' then
    local last = ''
    for line in string.gmatch(s, '[^\n]+') do
      if string.find(line, '%S') then last = line end
    end
    s = last
  else
    s = string.match(s, '^[^\r\n]*') or ''
  end
  s = ' ' .. string.sub(s, 1, 1024) .. ' '
  s = string.gsub(s, '%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x', '<uuid>')
  s = string.gsub(s, '([^%w])"[^"]*"', '%1"?"')
  s = string.gsub(s, "([^%w])'[^']*'", "%1'?'")
  s = string.gsub(s, '[%w._%%+-]+@[%w-]+%.[%w.-]+', '<email>')
  s = string.gsub(s, '0[xX]%x+', '<hex>')
  s = string.gsub(s, '%f[%w_][%w_]+', function(word)
    if not string.find(word, '%d') then return nil end
    if string.find(word, '^%d+$') then return '<n>' end
    if #word >= 6 and string.find(word, '^%x+$') then return '<hex>' end
    return '<id>'
  end)
  s = string.gsub(s, '%s+', ' ')
  s = string.match(s, '^%s*(.-)%s*$')
  if s == '' then return '(no error text)' end
  return string.sub(s, 1, SIGNATURE_BYTES)
end

-- The failure groups of a queue, kept by the moves themselves so that a page
-- reads them in O(groups shown), whatever the number of failed jobs:
--   <prefix>failures          zset: group id -> how many failed jobs it holds
--   <prefix>failure:<group>   hash: sig, first, last (server ms), sample (the
--                             job that entered it last) and error (its text)
-- and a failed job's hash carries `fsig`, its group id (the first 12 hex
-- digits of the SHA-1 of its signature, lowercased), so that leaving failed takes it out
-- of its group again. An index key of another type is left alone: the move
-- still happens, only its group is not kept (`emq check` shows the key).
-- Errors differing only in ASCII case are one group, shown as its first one was written.
local function group_of(message)
  local sig = error_signature(message)
  return string.sub(redis.sha1hex(string.lower(sig)), 1, 12), sig
end

local function group_index_usable(group)
  return wrong_type(PREFIX .. 'failures', 'zset') == nil
    and (group == nil or wrong_type(PREFIX .. 'failure:' .. group, 'hash') == nil)
end

-- What failure_enter and failure_leave will touch, checked before a script's
-- first write: returns the plan to pass them (nil when nothing may be kept).
local function failure_plan(message)
  local group, sig = group_of(message)
  if not group_index_usable(group) then return nil end
  return {group = group, sig = sig, message = message}
end

local function failure_leave(job_key)
  local group = redis.call('HGET', job_key, 'fsig')
  if not group then return end
  redis.call('HDEL', job_key, 'fsig')
  if not group_index_usable(nil) then return end
  local left = tonumber(redis.call('ZINCRBY', PREFIX .. 'failures', -1, group))
  if left <= 0 then
    redis.call('ZREM', PREFIX .. 'failures', group)
    redis.call('DEL', PREFIX .. 'failure:' .. group)
  end
end

-- The release its newest attempt ran on, as the newest claim entry of the job's history records it
-- (section 9): the number N of its note `N [HOST]`, '-' for a claim without a note or with a '-' (a
-- worker that told no release: "release unknown"), nil when the history holds no claim (no attempt).
local function newest_claim_release(job_key)
  local text = read_history(job_key)
  local entries = text and text ~= '' and parse_history(text)
  if not entries then return nil end
  for i = #entries, 1, -1 do
    if entries[i].code == 'c' then return string.match(entries[i].err or '', '^(%d+)') or '-' end
  end
  return nil
end

-- A group's `rels`: the releases its jobs' failing attempts ran on, as tokens separated by one space
-- in the order first seen (N, or '-' for release unknown), at most RELS_MAX of them (later ones are
-- not kept). It is never lowered as jobs leave: "no attempt of it before release R" holds of every
-- failure the group has seen since its `first`.
local RELS_MAX = 16
-- A rels longer than this (another writer's: the moves write 16 numbers of a few digits) is not read and is
-- taken as full, so that no job entering the group splits megabytes.
local RELS_READ_MAX = 1024

-- The job (its hash checked) has gone to failed with `plan.message` at `ts`
-- (now, for a move; its failure time, for group_failed): the group's first
-- and last seen stay the earliest and the latest, its sample the latest.
local function failure_enter(job_key, id, plan, ts)
  if plan == nil then return end
  failure_leave(job_key)
  local key = PREFIX .. 'failure:' .. plan.group
  redis.call('ZINCRBY', PREFIX .. 'failures', 1, plan.group)
  local seen = redis.call('HMGET', key, 'first', 'last')
  local first, last = to_int(seen[1]), to_int(seen[2])
  if first == nil then redis.call('HSET', key, 'sig', plan.sig, 'first', ts) end
  if first ~= nil and ts < first then redis.call('HSET', key, 'first', ts) end
  if last == nil or ts >= last then redis.call('HSET', key, 'last', ts, 'sample', id, 'error', plan.message) end
  local release = newest_claim_release(job_key)
  if release and redis.call('HSTRLEN', key, 'rels') <= RELS_READ_MAX then
    local rels = redis.call('HGET', key, 'rels') or ''
    local count, present = 0, false
    for token in string.gmatch(rels, '%S+') do
      count = count + 1
      if token == release then present = true end
      if present or count >= RELS_MAX then break end
    end
    if not present and count < RELS_MAX then
      redis.call('HSET', key, 'rels', rels == '' and release or (rels .. ' ' .. release))
    end
  end
  redis.call('HSET', job_key, 'fsig', plan.group)
end
