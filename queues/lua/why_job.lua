#!lua flags=no-writes
--@include common.lua
--@include why_evidence.lua
-- why_job (read): the evidence of why a job is where it is, with its queue's
-- (why_evidence.lua), in a fixed number of commands: the job's score in each
-- set, its rank in pending (ZRANK), its core fields, last error and history
-- (each bounded), and the entry of the worker its newest claim names.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id
-- Reply: {now_ms (integer), evidence (JSON text: the queue's, with `job`:
--         scores, key_type, state, attempts, max_attempts, last_error (cut
--         to 512 bytes), rank, worker, claimed_at, the newest history entry,
--         the cancel and corrupt entries, and the worker's entry)}
--        {'REFUSED', 'wrongtype', key, type}  a queue key of another type
local id = ARGV[1]
local err = check_keys(id)
if err then return err end
local refused = check_types(1, 2, 3, 4)
if refused then return refused end
local now = now_ms()
local e = queue_evidence(now)
local j = {id = cut_utf8(id, WHY_TEXT_BYTES)}
local names = {'pending', 'active', 'done', 'failed'}
j.scores = {}
for i, name in ipairs(names) do j.scores[name] = redis.call('ZSCORE', KEYS[i], id) or '' end
if j.scores.pending ~= '' then j.rank = redis.call('ZRANK', KEYS[1], id) end
j.key_type = redis.call('TYPE', KEYS[6]).ok
if j.key_type == 'hash' then
  for _, field in ipairs({'state', 'attempts', 'max_attempts'}) do
    local value = bounded_field(KEYS[6], field, 64)
    j[field] = value or '(too long)'
  end
  local last_error, n = bounded_field(KEYS[6], 'last_error', MAX_ERROR_BYTES)
  j.last_error, j.last_error_length = cut_utf8(last_error or '', WHY_TEXT_BYTES), n
  local history = bounded_field(KEYS[6], 'history', 16384)
  local entries = history and history ~= '' and parse_history(history) or nil
  if entries then
    for i = #entries, 1, -1 do
      local entry = entries[i]
      local shown = {code = entry.code, ts = entry.ts, attempts = entry.attempts,
                     actor = cut_utf8(unescape_field(entry.actor), WHY_TEXT_BYTES)}
      if i == #entries then j.last_entry = shown end
      if entry.code == 'c' and not j.claim_entry then j.claim_entry = shown end
      if entry.code == 'x' and not j.cancel_entry then j.cancel_entry = shown end
      if entry.code == 'k' and not j.corrupt_entry then j.corrupt_entry = shown end
    end
  end
  local worker = j.claim_entry and j.claim_entry.actor or cut_utf8(bounded_field(KEYS[6], 'worker', 256) or '', 256)
  if worker ~= '' then
    j.worker = worker
    if #worker <= 256 and not string.find(worker, '[{}%z\1-\32\127]') then
      local key = PREFIX .. 'worker:' .. worker
      local w = {registered_until = '', key_type = redis.call('TYPE', key).ok}
      if w.key_type == 'hash' then
        local v = redis.call('HMGET', key, 'host', 'pid', 'heartbeat_ms', 'expires_ms', 'held', 'concurrency')
        w.host, w.pid, w.heartbeat_ms, w.expires_ms, w.held, w.concurrency =
          cut_utf8(v[1] or '', WHY_TEXT_BYTES), cut_utf8(v[2] or '', 32), cut_utf8(v[3] or '', 32),
          cut_utf8(v[4] or '', 32), cut_utf8(v[5] or '', 32), cut_utf8(v[6] or '', 32)
      end
      if redis.call('TYPE', PREFIX .. 'workers').ok == 'zset' then
        w.registered_until = redis.call('ZSCORE', PREFIX .. 'workers', worker) or ''
      end
      j.worker_entry = w
    end
  end
end
e.job = j
return {now, cjson.encode(e)}
