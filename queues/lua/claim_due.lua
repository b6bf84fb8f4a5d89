-- The claim move's arguments, its pause check and its walk, shared by claim and finish_claim (which
-- claims after it has reported): the same checks and the same writes in both.

-- lease_ms, claim_id and count, or the error to return.
local function claim_args(lease_arg, claim_id, count_arg)
  local lease, bad = int_arg(lease_arg, 'lease_ms', 1, MAX_LEASE_MS)
  if bad then return nil, nil, nil, bad end
  if claim_id == nil or not string.match(claim_id, '^[0-9a-f]+$') or #claim_id > 64 then
    return nil, nil, nil, bad_arg('claim_id must be 1..64 characters 0-9 a-f')
  end
  local count, bad2 = int_arg(count_arg, 'count', 1, MAX_BATCH)
  if bad2 then return nil, nil, nil, bad2 end
  return lease, claim_id, count, nil
end

-- The PAUSED reply while the queue is paused (its key PREFIX .. 'paused' exists, of any type), else nil.
local function paused_reply()
  local paused_key = PREFIX .. 'paused'
  local paused_type = redis.call('TYPE', paused_key).ok
  if paused_type == 'none' then return nil end
  if paused_type ~= 'hash' then return {'PAUSED', '', '', ''} end
  local p = redis.call('HMGET', paused_key, 'since_ms', 'actor', 'reason')
  return {'PAUSED', p[1] or '', p[2] or '', p[3] or ''}
end

-- A host in an attempt's note: a space separates it from the release, so it is escaped with the rest.
local function note_part(text)
  return (string.gsub(cut_utf8(text, 64), '[%z\1-\32\127%%]',
    function(c) return string.format('%%%02X', string.byte(c)) end))
end

-- What the claimed attempts record of the worker (PROTOCOL.md, section 9): 'N' or 'N HOST', N the number
-- of its release in PREFIX .. 'releases' ('-' when it told none) and the host from its registry entry,
-- left out when the worker id begins with 'HOST:' (as the Python runtime's do). A few bytes, so a
-- typical job's hash stays a listpack. nil when the worker registered neither: "release unknown".
-- A read: claim and finish_claim call it among their checks, before their first write.
local function attempt_note(worker)
  if worker == '' then return nil end
  -- pcall: a key of another type (not written by register_worker) is a worker that told nothing.
  local f = redis.pcall('HMGET', PREFIX .. 'worker:' .. worker, 'release_n', 'host')
  if type(f) ~= 'table' or f.err then return nil end
  local release_n, host = f[1] or '', f[2] or ''
  if host ~= '' and string.sub(worker, 1, #host + 1) == host .. ':' then host = '' end
  if not string.match(release_n, '^%d+$') then release_n = '' end
  if release_n == '' and host == '' then return nil end
  local note = release_n == '' and '-' or release_n
  if host ~= '' then note = note .. ' ' .. note_part(host) end
  return note
end

-- Claims up to `count` due jobs at `now` (the caller has checked the arguments, the types of KEYS 1, 2,
-- 4 and 5, and that the queue is not paused) and returns claim's OK or EMPTY reply.
local function claim_due(now, lease, claim_id, worker, count, note)
  local deadline = now + lease
  local reply = {'OK', tostring(deadline)}
  local got, looked = 0, 0
  local budget = count + 100

  -- Why a job cannot be claimed, or nil; `f` its hash fields (state, attempts, payload) when it is a hash.
  local function unclaimable(kind, score, f)
    if kind ~= 'hash' then return 'its key is a ' .. kind .. ', not a hash' end
    if f[1] ~= 'pending' then
      return 'state ' .. (f[1] and ('"' .. cut_utf8(f[1], 64) .. '"') or 'missing') .. ' in pending'
    end
    local attempts = f[2] and to_int(f[2])
    if f[2] and (attempts == nil or attempts < 0 or attempts >= MAX_INT) then
      return 'attempts "' .. cut_utf8(f[2], 64) .. '" is not an integer in 0..' .. (MAX_INT - 1)
    end
    if tonumber(score) > MAX_INT then return 'due time ' .. score .. ' is out of range' end
    return nil
  end

  local function set_aside(id, job_key, why, f)
    local plan = f and failure_plan('corrupt: ' .. why)
    redis.call('ZREM', KEYS[1], id)
    redis.call('ZADD', KEYS[4], now, id)
    if f then
      keep_last_error(job_key, 'corrupt: ' .. why)
      redis.call('HSET', job_key, 'state', 'failed', 'last_error', 'corrupt: ' .. why)
      failure_enter(job_key, id, plan, now)
      emit(KEYS[5], 'corrupt', id, 'pending', 'failed', f[2] and cut_utf8(f[2], 64) or '', worker, now, job_key)
    else
      emit(KEYS[5], 'corrupt', id, 'pending', 'failed', '', worker, now, nil)
    end
  end

  -- Walks pending from its head (every id looked at leaves pending, so the
  -- head moves on) and returns the first claimable job's score, '' when there
  -- is none in range, or nil when the budget ran out.
  local function walk(max_score, take)
    while looked < budget do
      local want = math.min(budget - looked, take and (count - got) or 1)
      if take and got >= count then return nil end
      local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', max_score, 'WITHSCORES', 'LIMIT', 0, want)
      if #ids == 0 then return '' end
      for i = 1, #ids, 2 do
        local id, score = ids[i], ids[i + 1]
        local job_key = PREFIX .. 'job:' .. id
        looked = looked + 1
        -- A job taken gets its history entry next: read it in the same HMGET. A look at the next due job
        -- (the EMPTY answer's) reads the three fields alone.
        local kind, f, history = job_fields_maybe_history(job_key, take, 'state', 'attempts', 'payload')
        if kind == 'none' then
          redis.call('ZREM', KEYS[1], id)
        else
          local why = unclaimable(kind, score, f)
          if why then
            set_aside(id, job_key, why, f)
          elseif not take then
            return score
          else
            local attempts = (to_int(f[2]) or 0) + 1
            local payload = f[3] or ''
            redis.call('ZREM', KEYS[1], id)
            redis.call('ZADD', KEYS[2], deadline, id)
            emit(KEYS[5], 'claim', id, 'pending', 'active', attempts, worker, now, job_key, note,
                 {'state', 'active', 'attempts', attempts, 'claim_id', claim_id, history = history})
            count_wait(PREFIX, now, math.max(0, now - tonumber(score)))
            reply[#reply + 1] = id
            reply[#reply + 1] = tostring(attempts)
            reply[#reply + 1] = payload
            got = got + 1
          end
        end
      end
    end
    return nil
  end

  local due = walk(now, true)
  if got > 0 then return reply end
  if due == nil then return {'EMPTY', tostring(now), tostring(now)} end
  local upcoming = walk('+inf', false)
  if upcoming == nil then return {'EMPTY', tostring(now), tostring(now)} end
  if upcoming ~= '' then upcoming = string.format('%d', math.floor(tonumber(upcoming))) end
  return {'EMPTY', upcoming, tostring(now)}
end
