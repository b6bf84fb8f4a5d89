-- Shared by every EchoMQ script: the line `--@include common.lua` is replaced
-- by this file's text before the script is loaded, so each script that
-- reaches Redis is self-contained (see PROTOCOL.md, "Calling a script").

-- The moves a script may record: move_row, move_known, counted_fields.
--@include moves.lua

-- Server time in ms: leases and due times use the Redis clock, never a worker's.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Integers, in ARGV and in hash fields alike: an optional '-' and 1 to 14
-- ASCII digits. Lua's tonumber would also take ' 12', '1e3', '0x3', 'inf'
-- and 'nan'; 14 digits stay exact in a double and print without an exponent
-- (Lua writes numbers with %.14g), so every integer a script stores reads
-- back as the same digits.
local MAX_INT = 99999999999999
local function to_int(value)
  if type(value) ~= 'string' or #value > 15 or not string.match(value, '^%-?%d+$') then return nil end
  if #value == 15 and string.sub(value, 1, 1) ~= '-' then return nil end
  return tonumber(value)
end

-- A cut of at most `max_bytes` bytes that never splits a UTF-8 character:
-- it steps back over at most three continuation bytes (10xxxxxx).
local function cut_utf8(text, max_bytes)
  if #text <= max_bytes then return text end
  local n = max_bytes
  while n > max_bytes - 3 do
    local b = string.byte(text, n + 1)
    if b < 0x80 or b >= 0xC0 then break end
    n = n - 1
  end
  return string.sub(text, 1, n)
end

local MAX_ACTOR_BYTES = 128
local MAX_ERROR_BYTES = 4096
-- Bounds of the arguments, the same in every script and in the Python client.
local MAX_LEASE_MS = 86400000
local MAX_DELAY_MS = 315360000000
local MAX_TRIES = 1000000
local MAX_BATCH = 1000
-- A payload longer than this also gets a `preview` field, its first
-- PREVIEW_BYTES bytes (cut at a character boundary), so that a page shows it
-- without reading the payload.
local PREVIEW_BYTES = 256
local function preview_of(payload)
  if #payload > PREVIEW_BYTES then return cut_utf8(payload, PREVIEW_BYTES) end
  return nil
end

-- Claims allowed when a job has no max_attempts field.
local DEFAULT_MAX_ATTEMPTS = 3
-- A new job's fields, as HSET arguments. Each field costs every job its name
-- and value, so what can be read elsewhere is not written: max_attempts only
-- when it is not the default, and no created_at (the history's enqueue entry
-- holds that time; see store_history).
local function new_job_fields(payload, max_attempts)
  -- new_job: emit's append_history reads no history of a hash the move is making (not an HSET argument).
  local fields = {'state', 'pending', 'attempts', 0, 'payload', payload, new_job = true}
  if max_attempts ~= DEFAULT_MAX_ATTEMPTS then
    fields[#fields + 1] = 'max_attempts'
    fields[#fields + 1] = max_attempts
  end
  local preview = preview_of(payload)
  if preview then
    fields[#fields + 1] = 'preview'
    fields[#fields + 1] = preview
  end
  return fields
end

-- Control bytes (0x00-0x1F, 0x7F) and '%' as %XX, so that a history entry
-- is one line of tab-separated fields whatever an actor or error holds.
local ESCAPED_IN_FIELD = '[%z\1-\31\127%%]'
local function escape_field(text)
  -- Most texts need no escape: a find is a third of a gsub with its function.
  if not string.find(text, ESCAPED_IN_FIELD) then return text end
  return (string.gsub(text, ESCAPED_IN_FIELD, function(c) return string.format('%%%02X', string.byte(c)) end))
end

-- A job's own history: one field of its hash, newline-separated entries, the
-- newest last, that lives and dies with the job and costs a reader O(its own
-- length) however busy the queue's event stream is. It is written compactly,
-- so that the history of a job that ran once or twice, with an error, stays
-- within the 64 bytes a Redis listpack holds per value (a longer value turns
-- the hash into a hashtable, about three times the memory):
--   entry = CODE DT ['.' ATTEMPTS] ['\t' ACTOR ['\t' ERROR]]
-- CODE one letter naming the move and the state it went to (move_row), DT
-- the ms since the first entry's time (the first entry: the time itself),
-- ATTEMPTS written when it differs from what the move implies (a claim: the
-- entry before's plus one, when that is an integer; any other move: the
-- entry before's; before the first entry it is 0), ACTOR written when it differs from
-- the entry before (else the same; before the first entry '') or when an
-- ERROR follows. A fail entry (f, F) without an ERROR has the error of the
-- next fail entry, and the newest fail entry's error is the job's last_error:
-- a move leaves the error where it already is, and a move that overwrites
-- last_error with another text first writes the old one into that entry
-- (keep_last_error), at most HISTORY_ERROR_BYTES of it.
-- At most HISTORY_MAX_ENTRIES entries and HISTORY_MAX_BYTES bytes: the
-- oldest go first, the new first entry taking the absolute time (and when the
-- enqueue entry goes, the hash gets the created_at it stood for).
local HISTORY_MAX_ENTRIES = 32
local HISTORY_MAX_BYTES = 4096
local HISTORY_ERROR_BYTES = 256

-- The attempts an entry of `code` implies when it does not write its own: a
-- claim adds one to the attempts before it, every other move keeps them.
local function implied_attempts(code, before)
  if code ~= 'c' then return before end
  local n = to_int(before)
  return n and string.format('%d', n + 1) or before
end

-- A claim entry's note as it is written (PROTOCOL.md, section 9): nil (left out) when the claim before it
-- in the history was by the same actor with the same note, which this one then has; '-' when that claim
-- had a note and this one has none (a worker that now tells nothing); else the note itself.
local function written_note(claim_actor, claim_note, actor, note)
  if claim_actor ~= actor then return note end
  if note == claim_note then return nil end
  return note or '-'
end

-- The note a claim entry has, from what it wrote: its own, else the note of the claim before it when that
-- one was by the same actor, else none.
local function effective_note(claim_actor, claim_note, actor, written)
  if written then return written end
  if claim_actor == actor then return claim_note end
  return nil
end

-- The entries that make a job (enqueue, clone): while one is the first entry, its time is when the job
-- was created.
local function is_creation_code(code)
  return code == (move_row('enqueue', 'pending')) or code == (move_row('clone', 'pending'))
end

-- The entries of a history field (absolute times, every field filled in; a claim's err its note, as
-- effective_note gives it), or nil when a line does not parse: such a history was not written by a script.
local function parse_history(text)
  local entries, base, attempts, actor = {}, nil, '0', ''
  local claim_actor, claim_note
  for line in string.gmatch(text, '[^\n]+') do
    local tab = string.find(line, '\t', 1, true)
    local code, dt, rest = string.match(tab and string.sub(line, 1, tab - 1) or line, '^(%a)(%-?%d+)(.*)$')
    if not code or (rest ~= '' and string.sub(rest, 1, 1) ~= '.') then return nil end
    attempts = rest ~= '' and string.sub(rest, 2) or implied_attempts(code, attempts)
    local err
    if tab then
      local fields = string.sub(line, tab + 1)
      local tab2 = string.find(fields, '\t', 1, true)
      actor = tab2 and string.sub(fields, 1, tab2 - 1) or fields
      err = tab2 and string.sub(fields, tab2 + 1) or nil
    end
    local ts = base and base + tonumber(dt) or tonumber(dt)
    base = base or ts
    if code == 'c' then
      err = effective_note(claim_actor, claim_note, actor, err)
      claim_actor, claim_note = actor, err
    end
    entries[#entries + 1] = {code = code, ts = ts, attempts = attempts, actor = actor, err = err}
  end
  return entries
end

-- A history field's text as it was before escape_field.
local function unescape_field(text)
  return (string.gsub(text, '%%([0-9A-F][0-9A-F])', function(h) return string.char(tonumber(h, 16)) end))
end

-- What a history says of the fields the moves no longer write (an older
-- script, or another runtime, may have written them, and fields are never
-- cleared, so a reader takes these first): created_at, the enqueue (or clone) entry's
-- time while it is the first entry; claimed_at and worker, the newest
-- claim's time and actor. Each is a string, or absent when the history
-- does not tell.
local function history_facts(text)
  local facts = {}
  local entries = text and text ~= '' and parse_history(text)
  if not entries then return facts end
  if entries[1] and is_creation_code(entries[1].code) then facts.created_at = string.format('%d', entries[1].ts) end
  for i = #entries, 1, -1 do
    if entries[i].code == 'c' then
      facts.claimed_at, facts.worker = string.format('%d', entries[i].ts), unescape_field(entries[i].actor)
      break
    end
  end
  return facts
end

-- Entries (attempts, actor and error already escaped) as the field's text; then its lines, and the
-- length of each line's time.
local function format_history(entries)
  local lines, dt_lengths, base, attempts, actor = {}, {}, nil, '0', ''
  local claim_actor, claim_note
  for i, e in ipairs(entries) do
    local dt = string.format('%d', base and e.ts - base or e.ts)
    local line = e.code .. dt
    dt_lengths[i] = #dt
    base = base or e.ts
    if e.attempts ~= implied_attempts(e.code, attempts) then line = line .. '.' .. e.attempts end
    local err = e.err
    if e.code == 'c' then
      err = written_note(claim_actor, claim_note, e.actor, e.err)
      claim_actor, claim_note = e.actor, effective_note(claim_actor, claim_note, e.actor, err)
    end
    if err or e.actor ~= actor then line = line .. '\t' .. e.actor end
    if err then line = line .. '\t' .. err end
    lines[i], attempts, actor = line, e.attempts, e.actor
  end
  return table.concat(lines, '\n'), lines, dt_lengths
end

-- What appending needs to know of a history field, in one pass and without
-- building entries: the first entry's time, the attempts and actor in effect
-- after the last entry, the number of entries, the newest claim's time, and
-- that claim's actor and note (effective_note); nil when it does not parse.
local function scan_history(text)
  local base, attempts, actor, count, claimed = nil, '0', '', 0, nil
  local claim_actor, claim_note
  for line in string.gmatch(text, '[^\n]+') do
    local code, dt, rest, fields = string.match(line, '^(%a)(%-?%d+)([^\t]*)(.*)$')
    if not code or (rest ~= '' and string.byte(rest, 1) ~= 46) then return nil end
    attempts = rest ~= '' and string.sub(rest, 2) or implied_attempts(code, attempts)
    if fields ~= '' then actor = string.match(fields, '^\t([^\t]*)') end
    local ts = base and base + tonumber(dt) or tonumber(dt)
    base = base or ts
    if code == 'c' then
      claimed = ts
      claim_note = effective_note(claim_actor, claim_note, actor, string.match(fields, '^\t[^\t]*\t(.*)$'))
      claim_actor = actor
    end
    count = count + 1
  end
  return base, attempts, actor, count, claimed, claim_actor, claim_note
end

-- HSET of the history text and the fields a move sets (`fields`: nil, or field, value pairs), in one call;
-- the move's fields first, so a new job's hash is laid out as it always was (history last).
local function hset_history(job_key, text, fields)
  if not fields then
    redis.call('HSET', job_key, 'history', text)
    return
  end
  local args = {}
  for i = 1, #fields do args[i] = fields[i] end
  args[#args + 1] = 'history'
  args[#args + 1] = text
  redis.call('HSET', job_key, unpack(args))
end

-- Stores entries as the history field, dropping the oldest while there are
-- too many or the text is too long; a dropped enqueue (or clone) entry leaves its time
-- as created_at; `fields` (nil, or field, value pairs) go in the same HSET. Returns the text stored.
local function store_history(job_key, entries, fields)
  local first = entries[1]
  -- Past the newest HISTORY_MAX_ENTRIES, all at once: a history not written by a script may hold thousands of
  -- short lines, and formatting it again per dropped line would hold Redis for seconds.
  if #entries > HISTORY_MAX_ENTRIES then
    entries = {unpack(entries, #entries - HISTORY_MAX_ENTRIES + 1)}
  end
  local text, lines, dt_lengths = format_history(entries)
  if #entries > 1 and #text > HISTORY_MAX_BYTES then
    -- Past the drops that cannot be enough, at once: after the oldest `drop` go, a line but the new first
    -- one keeps all but its time's digits (at least one), as the entry before it stays; the first claim
    -- after it may lose its note and actor (no claim before it is left). Lines of a few hundred bytes
    -- would otherwise be formatted again per dropped line, up to 32 times for each job of a batch.
    local n, beyond, next_claim = #entries, {}, {}
    beyond[n + 1] = 0
    for j = n, 1, -1 do
      beyond[j] = beyond[j + 1] + 2 + #lines[j] - dt_lengths[j]
      next_claim[j] = entries[j].code == 'c' and j or next_claim[j + 1]
    end
    local drop = 0
    while drop < n - 1 do
      local first, claim = drop + 1, next_claim[drop + 1]
      local least = #format_history({entries[first]}) + beyond[first + 1]
      if claim and claim > first then least = least - (2 + #lines[claim] - dt_lengths[claim]) + 3 end
      if least <= HISTORY_MAX_BYTES then break end
      drop = drop + 1
    end
    if drop > 0 then
      entries = {unpack(entries, drop + 1)}
      text = format_history(entries)
    end
  end
  while #entries > 1 and #text > HISTORY_MAX_BYTES do
    table.remove(entries, 1)
    text = format_history(entries)
  end
  if is_creation_code(first.code) and entries[1] ~= first and redis.call('HEXISTS', job_key, 'created_at') == 0 then
    redis.call('HSET', job_key, 'created_at', string.format('%d', first.ts))
  end
  hset_history(job_key, text, fields)
  return text
end

-- The job's history field when a script could have written it, else nil: one far longer is never read.
local HISTORY_READ_MAX = 2 * HISTORY_MAX_BYTES
local function read_history(job_key)
  if redis.call('HSTRLEN', job_key, 'history') > HISTORY_READ_MAX then return nil end
  return redis.call('HGET', job_key, 'history') or nil
end

-- Call before a move overwrites last_error with `new_error`: when the newest
-- fail entry leaves its error to last_error and last_error is about to
-- change, that entry gets the old text written out (cut to
-- HISTORY_ERROR_BYTES), so the history loses no attempt's error.
-- A last_error longer than any script writes (another writer's) is not read: the entry notes its length.
local function keep_last_error(job_key, new_error)
  local length = redis.call('HSTRLEN', job_key, 'last_error')
  if length == 0 then return end  -- no error yet (a first failure): nothing to keep, nothing to read
  local old_error
  if length > MAX_ERROR_BYTES then
    old_error = 'a last_error of ' .. length .. ' bytes, not read'
  else
    old_error = redis.call('HGET', job_key, 'last_error')
    if not old_error or old_error == new_error then return end
  end
  local text = read_history(job_key)
  local entries = text and text ~= '' and parse_history(text)
  if not entries then return end
  for i = #entries, 1, -1 do
    local code = entries[i].code
    if code == 'f' or code == 'F' then
      if entries[i].err then return end
      entries[i].err = escape_field(cut_utf8(old_error, HISTORY_ERROR_BYTES))
      store_history(job_key, entries)
      return
    end
  end
end

-- Appends the move's entry (`code` its letter, from move_row), writing `fields` (nil, or field, value
-- pairs the move sets) in the same HSET; `fields.new_job` (a move that makes the hash: it has no history
-- to read) and `fields.history` (read already) skip the read. Returns the newest claim's time in the
-- history (nil when it holds none), which complete and fail count the run from.
local function append_history(job_key, ts, code, move, attempts, actor, note, fields)
  local entry = {code = code, ts = ts, attempts = escape_field(tostring(attempts)),
                 actor = escape_field(actor), err = note}
  -- A history far longer than any script writes, or one that does not parse,
  -- was not written by one: it is replaced rather than extended.
  -- `fields.history`: the field as the move's checks read it (job_fields_history), false for none.
  local old
  if fields and fields.history ~= nil then
    old = fields.history or nil
  elseif not (fields and fields.new_job) then
    old = read_history(job_key)
  end
  local base, attempts_before, actor_before, count, claimed, claim_actor, claim_note
  if old and old ~= '' then
    base, attempts_before, actor_before, count, claimed, claim_actor, claim_note = scan_history(old)
  end
  if not base then
    hset_history(job_key, format_history({entry}), fields)
    return move == 'claim' and ts or nil
  end
  if move == 'claim' then
    claimed = ts
    note = written_note(claim_actor, claim_note, entry.actor, note)
  end
  local line = entry.code .. string.format('%d', ts - base)
  if entry.attempts ~= implied_attempts(entry.code, attempts_before) then line = line .. '.' .. entry.attempts end
  if note or entry.actor ~= actor_before then line = line .. '\t' .. entry.actor end
  if note then line = line .. '\t' .. note end
  if count < HISTORY_MAX_ENTRIES and #old + 1 + #line <= HISTORY_MAX_BYTES then
    hset_history(job_key, old .. '\n' .. line, fields)
    return claimed
  end
  -- Full: drop the oldest entries, the new first one taking the absolute time.
  local entries = parse_history(old)
  entries[#entries + 1] = entry
  store_history(job_key, entries, fields)
  return claimed
end

-- Every move appends one entry to the queue's capped event stream (followers
-- resume from the last id they saw) and, when the job's hash stays, one entry
-- to the job's history. `job_key` is nil for moves that delete the hash and
-- for extend (a heartbeat is an event, not history).
local EVENTS_MAXLEN = 10000
-- Adds `by` to a counter field with pcall: a key of another type (not written by a script), or a field that
-- holds no integer or would overflow, is left alone and the move still happens; nothing is asked first
-- (a TYPE per key would cost every move as much as the count).
--
-- A call that moves several jobs (finish_claim, claim, complete_many, enqueue_many) calls count_batch() before
-- its first write and count_flush() before its reply: in between, counts are added up in Lua and written
-- once per key and field, in the order first counted, so a batch of n jobs sends a few HINCRBYs instead
-- of about a dozen per job. (For one job the tables cost more than they save: such a call counts directly.)
-- `keep_ms` (the minute and hour keys): when the field is new (its new value is what was added), the key
-- gets that lifetime unless it has one (NX).
local batched = nil
local function count_into(key, field, by, keep_ms)
  local b = batched
  if b then
    local fields = b.by[key]
    if not fields then
      fields = {}
      b.by[key], b.order[key], b.keep[key] = fields, {}, keep_ms
      b.keys[#b.keys + 1] = key
    end
    local before = fields[field]
    if not before then b.order[key][#b.order[key] + 1] = field end
    fields[field] = (before or 0) + by
    return
  end
  local value = redis.pcall('HINCRBY', key, field, by)
  if keep_ms and value == by then redis.call('PEXPIRE', key, keep_ms, 'NX') end
end
-- Durations (waits and runs) in a batch are kept as a count per value (`spans`) and counted once per value at
-- the flush: a batch's jobs share a few ms, and bucketing one value costs more than adding it to a table.
local flush_spans
local function count_batch()
  batched = {keys = {}, by = {}, order = {}, keep = {}, spans = {}}
end
local function count_flush()
  local b = batched
  if not b then return end
  flush_spans(b.spans)
  batched = nil
  for _, key in ipairs(b.keys) do
    local fields = b.by[key]
    for _, field in ipairs(b.order[key]) do count_into(key, field, fields[field], b.keep[key]) end
  end
end
-- Counters that outlive every reader: the hash <prefix>counts, one field per
-- move (move_row's counter field: a move that leads to more than one state, per state:
-- 'fail:pending', 'recover:failed'), counted by the move itself, in the
-- queue's slot, so every console process reads the same totals and a restart
-- loses none. A counts key of another type (not written by a script) is left
-- alone: the move still happens.
local function count_move(events_key, field)
  if field == '' then return end
  count_into(string.sub(events_key, 1, -7) .. 'counts', field, 1)
end

-- History that outlives every reader: per minute and per hour, counts of
-- the moves a chart shows, in hashes PREFIX .. 'm:' .. minute (kept 48 h) and
-- PREFIX .. 'h:' .. hour (kept 90 days), minute and hour counted from the
-- Unix epoch by the server's clock. Fields: e (enqueued), c (completed),
-- f (failed for good), r (recovered), and the latency buckets W<b> and R<b>
-- (latency.lua; older scripts wrote w0..w10, claims by the WAIT_BUCKETS_MS
-- their wait fell in). A key of another type is left alone. Keys expire by
-- themselves, so nothing trims them.
local MINUTE_KEEP_MS = 48 * 3600000
local HOUR_KEEP_MS = 90 * 86400000
local WAIT_BUCKETS_MS = {100, 500, 1000, 5000, 10000, 30000, 60000, 300000, 900000, 3600000}
local function count_slot(key, field, keep_ms, n)
  -- A field's first count may be its key's first: the key then gets its lifetime (NX: one it has stays).
  count_into(key, field, n or 1, keep_ms)
end
-- A call counts several things at one time (a move and its wait or run, a batch): the two keys of a
-- time are built once per call.
local series_keys = {}
local function count_series(prefix, ts, field, n)
  local slot = series_keys[ts]
  if not slot or slot[3] ~= prefix then
    slot = {prefix .. 'm:' .. math.floor(ts / 60000), prefix .. 'h:' .. math.floor(ts / 3600000), prefix}
    series_keys[ts] = slot
  end
  count_slot(slot[1], field, MINUTE_KEEP_MS, n)
  count_slot(slot[2], field, HOUR_KEEP_MS, n)
end
--@include latency.lua
local function bucket_of(ms)
  for i, upper in ipairs(WAIT_BUCKETS_MS) do
    if ms <= upper then return i - 1 end
  end
  return #WAIT_BUCKETS_MS
end
-- Durations since the first move, for histograms: in <prefix>counts, fields
-- '<kind>:<bucket>' (the buckets of WAIT_BUCKETS_MS, then longer) and
-- '<kind>:sum' (ms); kind is 'wait' (due -> claimed) or 'run' (claimed ->
-- complete or fail).
-- `n`: how many durations of `ms` (1 when absent).
local function count_duration(prefix, kind, ms, n)
  -- Another writer's due time of -inf, or a claimed_at far in the past, would add an infinite or huge
  -- duration: a duration counts as 10 years at most.
  if ms ~= ms then return end
  n = n or 1
  ms = math.min(math.max(ms, 0), MAX_DELAY_MS)
  local key = prefix .. 'counts'
  count_into(key, kind .. ':' .. bucket_of(ms), n)
  count_into(key, kind .. ':sum', math.floor(ms) * n)
end
-- A duration goes into <prefix>counts (count_duration) and into the minute and hour as its latency bucket
-- (latency.lua, W for a wait and R for a run; the series read folds those into w0..w10 beside the w0..w10
-- older scripts wrote). `n`: how many of `ms`.
local function count_durations(prefix, ts, kind, ms, n)
  count_duration(prefix, kind, ms, n)
  record_latency(prefix, ts, kind == 'wait' and 'W' or 'R', ms, n)
end
local function count_span(prefix, ts, kind, ms)
  local b = batched
  if not b or ms ~= ms then return count_durations(prefix, ts, kind, ms, 1) end
  local span
  for _, s in ipairs(b.spans) do
    if s.prefix == prefix and s.ts == ts and s.kind == kind then span = s break end
  end
  if not span then
    span = {prefix = prefix, ts = ts, kind = kind, by = {}, order = {}}
    b.spans[#b.spans + 1] = span
  end
  local before = span.by[ms]
  if not before then span.order[#span.order + 1] = ms end
  span.by[ms] = (before or 0) + 1
end
flush_spans = function(spans)
  for _, span in ipairs(spans) do
    for _, ms in ipairs(span.order) do count_durations(span.prefix, span.ts, span.kind, ms, span.by[ms]) end
  end
end
-- A claim's wait (due -> claimed).
local function count_wait(prefix, ts, waited_ms)
  count_span(prefix, ts, 'wait', waited_ms)
end

-- How long a job ran (its claim to now), when complete or fail finishes it:
-- from the history's newest claim, else (a job claimed by an older script or
-- another runtime) its claimed_at field.
local function count_run(events_key, job_key, move, ts, claimed)
  if not job_key or (move ~= 'complete' and move ~= 'fail') then return end
  claimed = claimed or to_int(redis.call('HGET', job_key, 'claimed_at') or '')
  local now = tonumber(ts)
  if claimed and now and now >= claimed then
    local prefix = string.sub(events_key, 1, -7)
    count_span(prefix, now, 'run', now - claimed)
  end
end
-- The script's check_moves has refused a move the table does not know before
-- the first write; this stops one that was never declared (a script's bug)
-- before its event is written.
-- `note` (a claim's only, already escaped): the attempt's release and host, the entry's third field.
-- `fields` (field, value pairs; only with `job_key`): what the move sets in the job's hash, written in the
-- history entry's HSET, one call instead of two on the moves every job makes.
local function emit(events_key, move, id, from, to, attempts, actor, ts, job_key, note, fields)
  local code, field, series = move_row(move, to)
  if not code then
    error('emq: the move ' .. tostring(move) .. ' -> ' .. tostring(to) .. ' is not in queues/protocol_moves.py')
  end
  actor = cut_utf8(actor or '', MAX_ACTOR_BYTES)
  attempts = cut_utf8(tostring(attempts), 64)
  redis.call('XADD', events_key, 'MAXLEN', '~', EVENTS_MAXLEN, '*',
    'move', move, 'id', id, 'from', from, 'to', to,
    'attempts', attempts, 'actor', actor, 'ts', type(ts) == 'number' and string.format('%d', ts) or tostring(ts))
  if fields and not job_key then error('emq: emit was given fields to write without the job key') end
  local claimed = job_key and append_history(job_key, ts, code, move, attempts, actor, note, fields)
  count_move(events_key, field)
  count_run(events_key, job_key, move, ts, claimed)
  if series ~= '' then count_series(string.sub(events_key, 1, -7), ts, series) end
end

local function refuse(reason, state, attempts)
  return {'REFUSED', reason, state or '', attempts or ''}
end

local function bad_arg(message)
  return redis.error_reply('ERR emq: ' .. message)
end

-- A worker's id as the registry keeps it (a member of PREFIX .. 'workers' and part of a key name):
-- the error to answer, or nil when the id is one.
local function bad_worker_id(id)
  if id == nil or id == '' or #id > 256 or string.find(id, '[{}%z\1-\32\127]') then
    return bad_arg('worker id must be 1..256 bytes without braces, spaces or control characters')
  end
end

-- Every script that moves jobs names the moves it records as its first check,
-- before any write: a move queues/protocol_moves.py does not list (so
-- moves.lua gives it no history code or counter) is refused whole, never
-- found half-way through emit after the job has moved.
local function check_moves(...)
  for _, move in ipairs({...}) do
    if not move_known(move) then
      return bad_arg('the move ' .. move .. ' is not in the protocol table (queues/protocol_moves.py)')
    end
  end
  return nil
end

-- An integer argument within bounds, or nil and the error to return.
local function int_arg(value, name, minimum, maximum)
  local n = to_int(value)
  if n == nil or n < minimum or n > maximum then
    return nil, bad_arg(name .. ' must be an integer in ' .. minimum .. '..' .. maximum)
  end
  return n
end

-- The expected state that matches a job hash without a state field (keys.ABSENT_STATE in Python).
local ABSENT_STATE = '~absent'

-- KEYS[1..4] are the pending, active, done and failed sorted sets.
local STATE_SET = {pending = 1, active = 2, done = 3, failed = 4}

-- Redis does not roll back a script that errors half-way, and any command on
-- a key of another type errors. So every script checks the type of each key
-- it may touch before its first write: a key of another type is refused
-- whole, as {'REFUSED', 'wrongtype', key, its type}, and nothing is written.
local KEY_TYPE = {'zset', 'zset', 'zset', 'zset', 'stream', 'hash'}
local function wrong_type(key, expected)
  local actual = redis.call('TYPE', key).ok
  if actual ~= 'none' and actual ~= expected then return {'REFUSED', 'wrongtype', key, actual} end
  return nil
end
-- check_types(1, 5, 6): KEYS[1], KEYS[5] and KEYS[6] hold their type or do not exist.
local function check_types(...)
  for _, i in ipairs({...}) do
    local refused = wrong_type(KEYS[i], KEY_TYPE[i])
    if refused then return refused end
  end
  return nil
end

-- A job key's type and, when it is a hash, its fields `...` (the first one `state`; nil otherwise). The
-- fields are read first, a job's hash being what the key nearly always holds, and the type is asked only
-- when they do not tell (no state field, or a key of another type): one call for the usual job, not two.
local function job_fields(job_key, ...)
  local f = redis.pcall('HMGET', job_key, ...)
  if not f.err and f[1] then return 'hash', f end
  local kind = redis.call('TYPE', job_key).ok
  if kind ~= 'hash' then return kind, nil end
  return kind, f.err and redis.call('HMGET', job_key, ...) or f
end

-- job_fields of three fields and, in the same HMGET, the history field when a script could have written it
-- (read_history: HSTRLEN first, so a far longer one is never read): two calls for the usual job instead of
-- job_fields then read_history's three. Returns kind, fields (nil unless a hash), history (false: none, or
-- too long to read). Only for a move whose next write to the hash is its history entry's.
local function job_fields_history(job_key, a, b, c)
  local length = redis.pcall('HSTRLEN', job_key, 'history')
  if type(length) ~= 'number' or length > HISTORY_READ_MAX then
    local kind, f = job_fields(job_key, a, b, c)
    return kind, f, false
  end
  local f = redis.call('HMGET', job_key, a, b, c, 'history')
  if not f[1] then
    local kind = redis.call('TYPE', job_key).ok
    if kind ~= 'hash' then return kind, nil, false end
  end
  return 'hash', f, f[4] or false
end

-- job_fields, and the history too when `with_history` (job_fields_history): a move that writes an entry.
local function job_fields_maybe_history(job_key, with_history, a, b, c)
  if with_history then return job_fields_history(job_key, a, b, c) end
  return job_fields(job_key, a, b, c)
end

-- Fencing: a worker may extend, complete, fail or release a job only while
-- it is active, in the active set, with the attempts its claim returned, and
-- with its claim id when the hash carries one (a job claimed by a runtime
-- that stores only the three core fields is fenced by attempts alone).
-- Returns nil when the caller holds the lease, else a refusal reply.
-- `with_history`: also return the job's history field as job_fields_history reads it, for the move's entry.
local function check_lease(job_key, active_key, id, token_attempts, claim_id, with_history)
  local kind, f, history = job_fields_maybe_history(job_key, with_history, 'state', 'attempts', 'claim_id')
  if kind == 'none' then return refuse('missing') end
  if kind ~= 'hash' then return {'REFUSED', 'wrongtype', job_key, kind} end
  if f[1] ~= 'active' then return refuse('state', f[1], f[2]) end
  if to_int(f[2]) ~= token_attempts then return refuse('token', f[1], f[2]) end
  if f[3] and f[3] ~= claim_id then return refuse('token', f[1], f[2]) end
  if not redis.call('ZSCORE', active_key, id) then return refuse('state', f[1], f[2]) end
  return nil, history
end

-- Compare-and-move for operator actions: the job must still be in the state
-- the operator saw (and have the attempts they saw, when given) and be a
-- member of that state's set. `allowed` lists the states the move starts
-- from; nil (delete) admits any state, even one no set stands for, so that an
-- operator can remove a job another writer left inconsistent.
-- Returns (refusal or nil, state, attempts).
local function check_seen(job_key, id, allowed, expect_state, expect_attempts)
  local kind, f = job_fields(job_key, 'state', 'attempts')
  if kind == 'none' then return refuse('missing') end
  if kind ~= 'hash' then return {'REFUSED', 'wrongtype', job_key, kind} end
  local state, attempts = f[1] or '', f[2] or ''
  -- '~absent' is what an operator saw of a hash without a state field (or an empty one): delete's
  -- compare-and-move against "no state" (PROTOCOL.md, section 7). No other move's states allow ''.
  if state ~= expect_state and not (expect_state == ABSENT_STATE and state == '') then
    return refuse('state', state, attempts)
  end
  if expect_attempts ~= '' and attempts ~= expect_attempts then return refuse('attempts', state, attempts) end
  if allowed == nil then return nil, state, attempts end
  if not allowed[state] or not redis.call('ZSCORE', KEYS[STATE_SET[state]], id) then
    return refuse('state', state, attempts)
  end
  return nil, state, attempts
end

-- Every script takes KEYS = pending, active, done, failed, events and then
-- either the job's hash (single-job moves) or the queue prefix itself (moves
-- that pick their jobs, which build job keys as prefix .. 'job:' .. id; the
-- prefix is declared so that a cluster routes the call to the queue's slot).
local PREFIX = string.sub(KEYS[5] or '', 1, -7)
local function check_keys(job_id)
  if #KEYS < 6 or string.sub(KEYS[5] or '', -7) ~= ':events' then
    return bad_arg('KEYS must be the queue\'s pending, active, done, failed, events and job key (or prefix)')
  end
  local names = {'pending', 'active', 'done', 'failed', 'events'}
  for i, name in ipairs(names) do
    if KEYS[i] ~= PREFIX .. name then return bad_arg('KEYS[' .. i .. '] must be ' .. PREFIX .. name) end
  end
  if job_id == '' then return bad_arg('job id must not be empty') end
  local sixth = job_id and (PREFIX .. 'job:' .. job_id) or PREFIX
  if KEYS[6] ~= sixth then return bad_arg('KEYS[6] must be ' .. sixth) end
  return nil
end

--@include grouping.lua

-- A lapsed lease: back to pending (due now) while attempts remain, else to
-- failed (into the failure group of "lease expired"). Used by recover (one job) and recover_expired (a batch); the caller
-- has checked the job key is a hash and emits the event.
local function recover_one(job_key, id, attempts, now)
  local max_attempts = to_int(redis.call('HGET', job_key, 'max_attempts')) or 3
  local plan = (to_int(attempts) or 0) < max_attempts and nil or failure_plan('lease expired')
  keep_last_error(job_key, 'lease expired')
  redis.call('ZREM', KEYS[2], id)
  if (to_int(attempts) or 0) < max_attempts then
    redis.call('ZADD', KEYS[1], now, id)
    redis.call('HSET', job_key, 'state', 'pending', 'last_error', 'lease expired')
    return 'pending'
  end
  redis.call('ZADD', KEYS[4], now, id)
  redis.call('HSET', job_key, 'state', 'failed', 'last_error', 'lease expired')
  failure_enter(job_key, id, plan, now)
  return 'failed'
end
