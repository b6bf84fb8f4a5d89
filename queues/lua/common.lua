-- Shared by every EchoMQ script: `--@include common.lua` on a script's first
-- line is replaced by this file's text before the script is loaded, so each
-- script that reaches Redis is self-contained (see PROTOCOL.md, "Scripts").

-- Server time in ms: leases and due times use the Redis clock, never a worker's.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The queue's capped event stream: one entry per job move, so followers can
-- resume from the last id they saw.
local EVENTS_MAXLEN = 10000
local function emit(events_key, move, id, from, to, attempts, actor, ts)
  redis.call('XADD', events_key, 'MAXLEN', '~', EVENTS_MAXLEN, '*',
    'move', move, 'id', id, 'from', from, 'to', to,
    'attempts', tostring(attempts), 'actor', actor, 'ts', tostring(ts))
end

local function refuse(reason, state, attempts)
  return {'REFUSED', reason, state or '', attempts or ''}
end

local function bad_arg(message)
  return redis.error_reply('ERR emq: ' .. message)
end

local function to_int(value)
  local n = tonumber(value)
  if n == nil or n ~= math.floor(n) or n ~= n then return nil end
  return n
end

-- KEYS[1..4] are the pending, active, done and failed sorted sets.
local STATE_SET = {pending = 1, active = 2, done = 3, failed = 4}

-- Fencing: a worker may extend, complete, fail or release a job only while
-- it is active, in the active set, with the attempts its claim returned, and
-- with its claim id when the hash carries one (a job claimed by a runtime
-- that stores only the three core fields is fenced by attempts alone).
-- Returns nil when the caller holds the lease, else a refusal reply.
local function check_lease(job_key, active_key, id, token_attempts, claim_id)
  if redis.call('EXISTS', job_key) == 0 then return refuse('missing') end
  local f = redis.call('HMGET', job_key, 'state', 'attempts', 'claim_id')
  if f[1] ~= 'active' then return refuse('state', f[1], f[2]) end
  if tonumber(f[2]) ~= token_attempts then return refuse('token', f[1], f[2]) end
  if f[3] and f[3] ~= claim_id then return refuse('token', f[1], f[2]) end
  if not redis.call('ZSCORE', active_key, id) then return refuse('state', f[1], f[2]) end
  return nil
end

-- Compare-and-move for operator actions: the job must still be in the state
-- the operator saw (and have the attempts they saw, when given) and be a
-- member of that state's set. `allowed` lists the states the move starts
-- from; nil (delete) admits any state, even one no set stands for, so that an
-- operator can remove a job another writer left inconsistent.
-- Returns (refusal or nil, state, attempts).
local function check_seen(job_key, id, allowed, expect_state, expect_attempts)
  if redis.call('EXISTS', job_key) == 0 then return refuse('missing') end
  local f = redis.call('HMGET', job_key, 'state', 'attempts')
  local state, attempts = f[1] or '', f[2] or ''
  if state ~= expect_state then return refuse('state', state, attempts) end
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
  local names = {'pending', 'active', 'done', 'failed', 'events'}
  for i, name in ipairs(names) do
    if KEYS[i] ~= PREFIX .. name then return bad_arg('KEYS[' .. i .. '] must be ' .. PREFIX .. name) end
  end
  local sixth = job_id and (PREFIX .. 'job:' .. job_id) or PREFIX
  if KEYS[6] ~= sixth then return bad_arg('KEYS[6] must be ' .. sixth) end
  return nil
end

-- A lapsed lease: back to pending (due now) while attempts remain, else to
-- failed. Used by recover (one job) and recover_expired (a batch).
local function recover_one(job_key, id, attempts, now)
  local max_attempts = to_int(redis.call('HGET', job_key, 'max_attempts')) or 3
  redis.call('ZREM', KEYS[2], id)
  if (to_int(attempts) or 0) < max_attempts then
    redis.call('ZADD', KEYS[1], now, id)
    redis.call('HSET', job_key, 'state', 'pending', 'last_error', 'lease expired')
    return 'pending'
  end
  redis.call('ZADD', KEYS[4], now, id)
  redis.call('HSET', job_key, 'state', 'failed', 'last_error', 'lease expired', 'finished_at', now)
  return 'failed'
end
