-- A lease holder's outcomes, shared by complete, complete_many, fail and finish_claim, so that each
-- writes exactly what the move of its name writes. The caller has checked the lease (check_lease) and
-- the types of the queue keys it touches, and for a failure has read its fail_plan, all before its
-- first write.

-- active -> done: the job's fields, its event and history entry (the caller moves the id from
-- active to done, one job or a batch at once).
local function complete_job(job_key, id, token, actor, now, history)
  emit(KEYS[5], 'complete', id, 'active', 'done', token, actor, now, job_key, nil,
       {'state', 'done', history = history})
end

-- What a failure reads before the first write: whether attempts remain (back to pending) and, when
-- none does, the failure group it enters. A job without an integer max_attempts gets 3.
local function fail_plan(job_key, token, message)
  local max_attempts = to_int(redis.call('HGET', job_key, 'max_attempts')) or 3
  if token < max_attempts then return {retry = true} end
  return {retry = false, group = failure_plan(message)}
end

-- active -> pending (due after the backoff) or failed, as the plan says; returns that state and the
-- due or failed time.
local function fail_job(job_key, id, token, message, backoff, actor, now, plan)
  keep_last_error(job_key, message)
  redis.call('ZREM', KEYS[2], id)
  if plan.retry then
    local due = now + math.floor(math.min(backoff * 2 ^ math.min(token - 1, 31), 3600000))
    redis.call('ZADD', KEYS[1], due, id)
    redis.call('HSET', job_key, 'state', 'pending', 'last_error', message)
    emit(KEYS[5], 'fail', id, 'active', 'pending', token, actor, now, job_key)
    return 'pending', due
  end
  redis.call('ZADD', KEYS[4], now, id)
  redis.call('HSET', job_key, 'state', 'failed', 'last_error', message)
  failure_enter(job_key, id, plan.group, now)
  emit(KEYS[5], 'fail', id, 'active', 'failed', token, actor, now, job_key)
  return 'failed', now
end
