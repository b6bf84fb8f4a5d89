#!lua flags=no-writes
--@include common.lua
-- search (read): walk one state's sorted set in score order from a cursor,
-- within a budget, and return the jobs that match every filter given.
-- Call it again with the cursor it returns until it says done; each call is
-- one bounded slice, so Redis serves every other client between two calls.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 state, 2 order ('asc' | 'desc' by score),
--       3 cursor score, 4 cursor id: resume after this entry ('' '' = start),
--       5 lowest score, 6 highest score (the window on the set's score:
--         due time, lease deadline or finish time; '-inf' / '+inf' = open;
--         'now' = the millisecond before the server's time now, which the
--         reply returns so that later calls can pass it: a job that enters the
--         set after the search began then lies beyond its window, even in the
--         millisecond it began),
--       7 entries to look at in this call at most (1..10000),
--       8 time budget in microseconds (100..100000), checked every 32
--         entries, after every entry that read more than 4 KiB, and after
--         every 64 KiB of one payload searched for a text (a call that runs
--         out of budget inside a payload says where to resume in it),
--       9 matches to return in this call at most (1..1000),
--       10.. filters as name, value pairs; every one given must hold:
--         'id_prefix'   the id starts with the value (bytes)
--         'payload'     the payload holds the value (bytes, plain find;
--                       the payload, error, worker and json filters'
--                       texts are at most 256 bytes each)
--         'error'       last_error or the error of an earlier attempt (in
--                       the job's history), lowercased, holds the value
--                       (give it lowercased; plain find)
--         'worker'      the worker holds the value (plain find): the actor of
--                       the history's newest claim, else the worker field
--                       (a worker field over 8192 bytes is not read)
--         'group'       the job is in this failure group (its fsig field)
--         'release'     the newest attempt ran on this release: the label's
--                       number in PREFIX .. 'releases' is the newest claim
--                       entry's note's N (PROTOCOL.md, section 9); '-' for
--                       release unknown (a claim without one)
--         'host'        the newest attempt ran on this host (exactly): the
--                       note's HOST, else the actor's text before its first
--                       ':' when the claim has a note
--         'created_min' / 'created_max'   the creation time (the history's
--                       enqueue entry, else created_at) is >= / <= the value
--         'json'        the payload is a JSON document (at most 64 KiB;
--                       decoded with cjson under pcall) whose value at a
--                       path equals a value: the filter's value is
--                       kind .. '\0' .. value .. '\0' .. segment .. '\0' ..
--                       segment ..., kind 'num' | 'str' | 'any' (a number
--                       equal to it or a string equal to its text) | 'bool'
--                       | 'null', each segment 'k' .. key or 'i' .. index
--                       (0-based)
--         'resume'      OFFSET .. ':' .. ID, as the previous call returned
--                       it: the first entry after the cursor, if it is still
--                       that job, is searched for the payload text from that
--                       byte of its payload on
--         'lean'        '1': matches carry id, score, state and attempts
--                       only ('' for the rest), and no payload is read for
--                       them (what a bulk move needs)
-- Reply: {'OK', in_window (entries of the set inside the score window now),
--         looked_at, next cursor score, next cursor id, done (0 | 1),
--         missing (ids without a hash), unreadable (payloads too large or not
--         JSON, for a 'json' filter), the highest score used, the
--         microseconds this call ran (what the caller paces itself by), where
--         to resume inside the next entry ('' or the 'resume' filter's value
--         to pass next), then per match
--         8 values (a payload over 256 bytes is headed by its preview field):
--         id, score, state, attempts, payload head (120 bytes),
--         payload length, last_error head (300 bytes), worker}
--        {'REFUSED', 'wrongtype', key, its type}   the state's key is no zset
-- An id whose key is not a hash counts as missing.
-- Errors: bad keys, state, order, cursor, window, budgets or filters.
local err = check_keys(nil)
if err then return err end
local state, order = ARGV[1], ARGV[2]
local set = KEYS[STATE_SET[state] or 0]
if set == nil then return bad_arg('state must be pending, active, done or failed') end
if order ~= 'asc' and order ~= 'desc' then return bad_arg('order must be asc or desc') end
do
  local refused = wrong_type(set, 'zset')
  if refused then return refused end
end
local cursor_score, cursor_id = ARGV[3], ARGV[4]
if (cursor_score == '') ~= (cursor_id == '') then return bad_arg('a cursor needs a score and an id') end
if cursor_score ~= '' and tonumber(cursor_score) == nil then return bad_arg('cursor score must be a number') end
local low, high = ARGV[5], ARGV[6]
if high == 'now' then high = tostring(now_ms() - 1) end
local low_n, high_n = tonumber(low), tonumber(high)
if low == '-inf' then low_n = -math.huge end
if high == '+inf' then high_n = math.huge end
if low_n == nil or high_n == nil then return bad_arg('the score window must be numbers, -inf or +inf') end
local max_looked, budget_us, max_matches = to_int(ARGV[7]), to_int(ARGV[8]), to_int(ARGV[9])
if max_looked == nil or max_looked < 1 or max_looked > 10000 then return bad_arg('entries must be in 1..10000') end
if budget_us == nil or budget_us < 100 or budget_us > 100000 then return bad_arg('time budget must be in 100..100000 us') end
if max_matches == nil or max_matches < 1 or max_matches > 1000 then return bad_arg('matches must be in 1..1000') end

local JSON_MAX = 65536
-- A plain find of a needle that almost matches everywhere costs about 8 ms per MiB (more for longer
-- needles): longer needles than this are refused, and a long payload is searched FIND_SLICE bytes at a
-- time, the budget checked after each, so that one entry never holds Redis for long.
local NEEDLE_MAX = 256
local FIND_SLICE = 65536
local id_prefix, needle, error_text, worker_text, created_min, created_max, json = nil, nil, nil, nil, nil, nil, nil
local group, release_label, host_text
local lean = false
local resume_from, resume_id = 1, nil
if (#ARGV - 9) % 2 ~= 0 then return bad_arg('filters come as name, value pairs') end
for i = 10, #ARGV, 2 do
  local name, value = ARGV[i], ARGV[i + 1]
  if name == 'id_prefix' then id_prefix = value
  elseif name == 'payload' then needle = value
  elseif name == 'error' then error_text = value
  elseif name == 'worker' then worker_text = value
  elseif name == 'lean' then lean = value == '1'
  elseif name == 'resume' then
    local offset, job = string.match(value, '^(%d+):(.+)$')
    if offset == nil or tonumber(offset) < 1 then return bad_arg('resume is OFFSET:ID') end
    resume_from, resume_id = tonumber(offset), job
  elseif name == 'group' then group = value
  elseif name == 'release' then release_label = value
  elseif name == 'host' then host_text = value
  elseif name == 'created_min' or name == 'created_max' then
    local n = to_int(value)
    if n == nil then return bad_arg(name .. ' must be an integer') end
    if name == 'created_min' then created_min = n else created_max = n end
  elseif name == 'json' then
    local parts = {}
    local start = 1
    while true do
      local stop = string.find(value, '\0', start, true)
      if stop == nil then parts[#parts + 1] = string.sub(value, start); break end
      parts[#parts + 1] = string.sub(value, start, stop - 1)
      start = stop + 1
    end
    local kind = parts[1]
    if kind ~= 'num' and kind ~= 'str' and kind ~= 'any' and kind ~= 'bool' and kind ~= 'null' then
      return bad_arg('json kind must be num, str, any, bool or null')
    end
    if #parts < 3 or #parts > 34 then return bad_arg('a json path has 1..32 segments') end
    json = {kind = kind, text = parts[2], number = tonumber(parts[2]), path = {}}
    if (kind == 'num') and json.number == nil then return bad_arg('json value is not a number') end
    for s = 3, #parts do
      local seg = parts[s]
      local tag, rest = string.sub(seg, 1, 1), string.sub(seg, 2)
      if tag == 'k' then json.path[#json.path + 1] = rest
      elseif tag == 'i' and to_int(rest) ~= nil and to_int(rest) >= 0 then json.path[#json.path + 1] = to_int(rest) + 1
      else return bad_arg('a json path segment is k<key> or i<index>') end
    end
    -- Cheap necessary conditions before a decode: the last key as it is
    -- written, and a string value's text (both unless the payload holds a
    -- backslash, which may escape them); a long integer's digits, which a
    -- double cannot tell from its neighbours.
    local last = json.path[#json.path]
    if type(last) == 'string' then json.key_text = '"' .. last .. '"' end
    if kind == 'str' then json.value_text = json.text end
    if (kind == 'num' or kind == 'any') and string.match(json.text, '^%-?%d+$') and #json.text > 15 then
      json.digits = json.text
    end
  else
    return bad_arg('unknown filter ' .. name)
  end
end
do
  local texts = {needle or '', error_text or '', worker_text or '', json and json.text or ''}
  for _, seg in ipairs(json and json.path or {}) do
    if type(seg) == 'string' then texts[#texts + 1] = seg end
  end
  for _, text in ipairs(texts) do
    if #text > NEEDLE_MAX then
      return bad_arg('a payload, error, worker or field text is at most ' .. NEEDLE_MAX .. ' bytes')
    end
  end
end

if release_label ~= nil and #release_label > 64 then return bad_arg('a release is at most 64 bytes') end
if host_text ~= nil and #host_text > 256 then return bad_arg('a host is at most 256 bytes') end
-- The release's number, looked up once: a label no worker registered matches no job.
local release_token
if release_label == '-' then
  release_token = '-'
elseif release_label ~= nil then
  local n = redis.pcall('HGET', PREFIX .. 'releases', 'L:' .. release_label)
  release_token = type(n) == 'string' and n or false
end

local function bytes_less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- How many entries come strictly before (score, id) in ascending order, and
-- whether that entry is still there. Members of equal score are ordered by
-- their bytes, so a cursor whose job has left the set is found again by a
-- binary search among the members of its score, not by walking them.
local function count_before(score, id)
  local current = redis.call('ZSCORE', set, id)
  if current and tonumber(current) == tonumber(score) then return redis.call('ZRANK', set, id), true end
  local lo = redis.call('ZCOUNT', set, '-inf', '(' .. score)
  local hi = redis.call('ZCOUNT', set, '-inf', score)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local member = redis.call('ZRANGE', set, mid, mid)[1]
    if bytes_less(id, member) then hi = mid else lo = mid + 1 end
  end
  return lo, false
end

local needs_payload = needle ~= nil or json ~= nil
-- Values no script writes this long are not read (their length comes from HSTRLEN, O(1)): a payload
-- over the protocol's 1 MiB counts as unreadable; an error or a history too long is not matched.
local MAX_PAYLOAD, MAX_ERROR, MAX_HISTORY = 1048576, 2 * MAX_ERROR_BYTES, 16384
-- The fields one entry's HMGET reads, after the long ones' lengths are checked. Answers
-- (fields, reason) with reason 'wrongtype' or 'unreadable' when the entry cannot be matched.
local function fields_to_read(job_key)
  local read = {'state', 'attempts', 'created_at', 'fsig'}
  -- A worker field longer than any script writes (another writer's) is not read, nor searched, nor shown.
  local checks = {{'worker', MAX_ERROR, false}}
  if needs_payload then checks[#checks + 1] = {'payload', MAX_PAYLOAD, true} end
  if error_text ~= nil then
    checks[#checks + 1] = {'last_error', MAX_ERROR, false}
    checks[#checks + 1] = {'history', MAX_HISTORY, false}
  end
  for _, check in ipairs(checks) do
    local length = redis.pcall('HSTRLEN', job_key, check[1])
    if type(length) ~= 'number' then return nil, 'wrongtype' end
    if length <= check[2] then read[#read + 1] = check[1] elseif check[3] then return nil, 'unreadable' end
  end
  return read
end

local escaped_error = error_text and string.lower(escape_field(error_text))

-- Whether an earlier attempt's error holds the text: a history entry is
-- CODE DT[.ATTEMPTS][<TAB>ACTOR[<TAB>ERROR]], its fields escaped (common.lua).
local function entry_error(line)
  -- A claim's third field is its release and host, not an error.
  if string.sub(line, 1, 1) == 'c' then return nil end
  local first = string.find(line, '\t', 1, true)
  local second = first and string.find(line, '\t', first + 1, true)
  return second and string.sub(line, second + 1) or nil
end

local function history_error_holds(history)
  -- A history far longer than any script writes was not written by one: not read.
  if not history or not string.find(string.lower(history), escaped_error, 1, true) then
    return false
  end
  for line in string.gmatch(history, '[^\n]+') do
    local text = entry_error(line)
    if text and string.find(string.lower(text), escaped_error, 1, true) then return true end
  end
  return false
end

-- What the job's history tells of its worker and creation time (the moves
-- do not store them), read once per entry and only when asked.
local function facts_of(job_key, f)
  if f.facts == nil then
    local history = f.history
    if not history and redis.call('HSTRLEN', job_key, 'history') <= MAX_HISTORY then
      history = redis.call('HGET', job_key, 'history')
    end
    f.facts = history_facts(history or '')
  end
  return f.facts
end

-- The history's newest claim entry (its actor and its note, `err`, as written), or nil when it holds none.
local function newest_claim(job_key, f)
  if f.claim == nil then
    local history = f.history
    if not history and redis.call('HSTRLEN', job_key, 'history') <= MAX_HISTORY then
      history = redis.call('HGET', job_key, 'history')
    end
    local entries = history and history ~= '' and parse_history(history) or {}
    f.claim = false
    for i = #entries, 1, -1 do
      if entries[i].code == 'c' then f.claim = entries[i]; break end
    end
  end
  return f.claim or nil
end

-- A match's payload head: a long payload's preview field when it has one (not the payload itself).
local function payload_head(job_key, payload)
  if payload then return cut_utf8(payload, 120), #payload end
  local length = redis.call('HSTRLEN', job_key, 'payload')
  local head = ''
  if length <= 1024 then
    head = redis.call('HGET', job_key, 'payload') or ''
  elseif redis.call('HSTRLEN', job_key, 'preview') <= 1024 then
    head = redis.call('HGET', job_key, 'preview') or ''
  end
  return cut_utf8(head, 120), length
end
local asc = order == 'asc'
local position
if cursor_score ~= '' then
  local before, present = count_before(cursor_score, cursor_id)
  if asc then position = before + (present and 1 or 0) else position = before - 1 end
elseif asc then
  position = redis.call('ZCOUNT', set, '-inf', '(' .. low)
else
  position = redis.call('ZCOUNT', set, '-inf', high) - 1
end
local in_window = redis.call('ZCOUNT', set, low, high)

local function clock_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function json_matches(payload)
  if #payload > JSON_MAX then return nil end
  local escaped = string.find(payload, '\\', 1, true) ~= nil
  if not escaped then
    if json.key_text and not string.find(payload, json.key_text, 1, true) then return false end
    if json.value_text and not string.find(payload, json.value_text, 1, true) then return false end
  end
  if json.digits and not string.find(payload, json.digits, 1, true) then return false end
  local ok, doc = pcall(cjson.decode, payload)
  if not ok then return nil end
  local v = doc
  for _, seg in ipairs(json.path) do
    if type(v) ~= 'table' then return false end
    v = v[seg]
    if v == nil then return false end
  end
  local kind = json.kind
  if kind == 'null' then return v == cjson.null end
  if kind == 'bool' then return type(v) == 'boolean' and tostring(v) == json.text end
  if type(v) == 'number' and (kind == 'num' or kind == 'any') then return v == json.number end
  if type(v) == 'string' and (kind == 'str' or kind == 'any') then return v == json.text end
  return false
end

local started = clock_us()
local reply = {'OK', in_window, 0, cursor_score, cursor_id, 0, 0, 0, high, 0, ''}
local looked, missing, unreadable, matched = 0, 0, 0, 0
local bytes_since_check = 0
local last_score, last_id = cursor_score, cursor_id
local done = false
local CHUNK = 200
while looked < max_looked and matched < max_matches do
  local chunk
  if asc then
    chunk = redis.call('ZRANGE', set, position, position + CHUNK - 1, 'WITHSCORES')
  elseif position < 0 then
    chunk = {}
  else
    chunk = redis.call('ZRANGE', set, math.max(position - CHUNK + 1, 0), position, 'WITHSCORES')
    -- Walk it from its end: descending.
    local reversed = {}
    for i = #chunk - 1, 1, -2 do
      reversed[#reversed + 1] = chunk[i]
      reversed[#reversed + 1] = chunk[i + 1]
    end
    chunk = reversed
  end
  if #chunk == 0 then done = true; break end
  local stop = false
  for i = 1, #chunk, 2 do
    local id, score = chunk[i], chunk[i + 1]
    local n = tonumber(score)
    if (asc and n > high_n) or ((not asc) and n < low_n) then done = true; stop = true; break end
    looked = looked + 1
    position = asc and position + 1 or position - 1
    local previous_score, previous_id = last_score, last_id
    last_score, last_id = score, id
    local ok = id_prefix == nil or string.sub(id, 1, #id_prefix) == id_prefix
    local f
    local job_key = PREFIX .. 'job:' .. id
    if ok then
      local read, why = fields_to_read(job_key)
      local got = read and redis.pcall('HMGET', job_key, unpack(read))
      if why == 'unreadable' then
        unreadable = unreadable + 1
        ok = false
      elseif type(got) ~= 'table' or got.err then
        missing = missing + 1
        ok = false
      else
        f = {}
        for n, name in ipairs(read) do f[name] = got[n] end
        if not (f.state or f.attempts) and redis.call('EXISTS', job_key) == 0 then
          missing = missing + 1
          ok = false
        end
      end
    end
    if ok and group ~= nil then ok = f.fsig == group end
    if f and f.history then bytes_since_check = bytes_since_check + #f.history end
    if ok and error_text ~= nil then
      ok = (f.last_error and string.find(string.lower(f.last_error), error_text, 1, true) ~= nil)
        or history_error_holds(f.history)
    end
    if ok and worker_text ~= nil then
      local worker = facts_of(job_key, f).worker or f.worker
      ok = worker and string.find(worker, worker_text, 1, true) ~= nil
    end
    if ok and (release_token ~= nil or host_text ~= nil) then
      local claim = newest_claim(job_key, f)
      local note = claim and claim.err or ''
      if release_token ~= nil then
        ok = claim ~= nil and (string.match(note, '^(%d+)') or '-') == release_token
      end
      if ok and host_text ~= nil then
        local host = string.match(note, '^%S+ (.+)$')
        if host then host = unescape_field(host)
        elseif note ~= '' then host = string.match(unescape_field(claim.actor), '^([^:]+):') end
        ok = host == host_text
      end
    end
    if ok and (created_min ~= nil or created_max ~= nil) then
      local created = to_int(facts_of(job_key, f).created_at or f.created_at)
      ok = created ~= nil and (created_min == nil or created >= created_min)
        and (created_max == nil or created <= created_max)
    end
    local payload
    if ok and needs_payload then
      payload = f.payload or ''
      bytes_since_check = bytes_since_check + #payload
      if needle ~= nil then
        local from = (looked == 1 and id == resume_id) and resume_from or 1
        local suspended
        ok = false
        while from <= #payload or from == 1 do
          local piece = #payload - from < FIND_SLICE + #needle and payload or
            string.sub(payload, from, from + FIND_SLICE + #needle - 2)
          if string.find(piece, needle, piece == payload and from or 1, true) then ok = true; break end
          if piece == payload then break end
          from = from + FIND_SLICE
          if from <= #payload and clock_us() - started >= budget_us then suspended = from; break end
        end
        if suspended then
          -- Out of budget inside this payload: the next call begins with this entry, at this byte.
          looked = looked - 1
          position = asc and position - 1 or position + 1
          last_score, last_id = previous_score, previous_id
          reply[11] = suspended .. ':' .. id
          stop = true
          break
        end
      end
      if ok and json ~= nil then
        local verdict = json_matches(payload)
        if verdict == nil then unreadable = unreadable + 1 end
        ok = verdict == true
      end
    end
    if ok and lean then
      reply[#reply + 1] = id
      reply[#reply + 1] = score
      reply[#reply + 1] = f.state or ''
      reply[#reply + 1] = f.attempts or ''
      reply[#reply + 1] = ''
      reply[#reply + 1] = 0
      reply[#reply + 1] = ''
      reply[#reply + 1] = ''
      matched = matched + 1
    elseif ok then
      local head, length = payload_head(job_key, payload)
      reply[#reply + 1] = id
      reply[#reply + 1] = score
      reply[#reply + 1] = f.state or ''
      reply[#reply + 1] = f.attempts or ''
      reply[#reply + 1] = head
      reply[#reply + 1] = length
      local last_error = f.last_error
      if last_error == nil and redis.call('HSTRLEN', job_key, 'last_error') <= MAX_ERROR then
        last_error = redis.call('HGET', job_key, 'last_error')
      end
      reply[#reply + 1] = cut_utf8(last_error or '', 300)
      reply[#reply + 1] = cut_utf8(facts_of(job_key, f).worker or f.worker or '', 200)
      matched = matched + 1
    end
    if looked >= max_looked or matched >= max_matches then stop = true; break end
    if looked % 32 == 0 or bytes_since_check >= 4096 then
      bytes_since_check = 0
      if clock_us() - started >= budget_us then stop = true; break end
    end
  end
  if stop then break end
end
-- Nothing is left beyond the last entry looked at: say so now rather than
-- costing the caller one more call.
if not done then
  if asc then
    local next_entry = redis.call('ZRANGE', set, position, position, 'WITHSCORES')
    done = next_entry[1] == nil or tonumber(next_entry[2]) > high_n
  else
    local next_entry = position >= 0 and redis.call('ZRANGE', set, position, position, 'WITHSCORES') or {}
    done = next_entry[1] == nil or tonumber(next_entry[2]) < low_n
  end
end
reply[3], reply[4], reply[5], reply[6], reply[7], reply[8] = looked, last_score, last_id, done and 1 or 0, missing, unreadable
reply[10] = clock_us() - started
return reply
