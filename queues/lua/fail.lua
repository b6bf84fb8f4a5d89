--@include common.lua
-- fail: the lease holder's handler failed. While attempts < max_attempts the
-- job goes back to pending, due after backoff_ms * 2^(attempts-1) (capped at
-- one hour); otherwise it goes to failed. The error is kept as last_error.
-- A job without max_attempts (another runtime's three-field job) gets 3.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 attempts (the fencing token), 3 claim_id, 4 error text,
--       5 backoff_ms (integer >= 0), 6 actor
-- Reply: {'OK', 'pending' | 'failed', due_or_failed_ms}
--        {'REFUSED', reason, state, attempts}  reason: missing | state | token
-- Errors (nothing written): bad keys, attempts or backoff_ms.
--@include lease_args.lua
local message, actor = ARGV[4] or '', ARGV[6]
local backoff = to_int(ARGV[5])
if backoff == nil or backoff < 0 then return bad_arg('backoff_ms must be an integer >= 0') end

local refused = check_lease(KEYS[6], KEYS[2], id, token, claim_id)
if refused then return refused end

local max_attempts = to_int(redis.call('HGET', KEYS[6], 'max_attempts')) or 3
local now = now_ms()
redis.call('ZREM', KEYS[2], id)
if token < max_attempts then
  local due = now + math.floor(math.min(backoff * 2 ^ (token - 1), 3600000))
  redis.call('ZADD', KEYS[1], due, id)
  redis.call('HSET', KEYS[6], 'state', 'pending', 'last_error', message)
  emit(KEYS[5], 'fail', id, 'active', 'pending', token, actor, now)
  return {'OK', 'pending', tostring(due)}
end
redis.call('ZADD', KEYS[4], now, id)
redis.call('HSET', KEYS[6], 'state', 'failed', 'last_error', message, 'finished_at', now)
emit(KEYS[5], 'fail', id, 'active', 'failed', token, actor, now)
return {'OK', 'failed', tostring(now)}
