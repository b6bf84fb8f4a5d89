--@include common.lua
-- enqueue: add a new job, due now or after a delay.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 payload, 3 delay_ms (integer >= 0), 4 max_attempts (integer >= 1),
--       5 actor
-- Reply: {'OK', due_ms}
--        {'DUPLICATE', state, attempts}   the id exists; nothing was written,
--                                         so a retried enqueue is idempotent
-- Errors (nothing written): bad keys, bad delay_ms or max_attempts.
local id, payload, actor = ARGV[1], ARGV[2], ARGV[5]
local delay, max_attempts = to_int(ARGV[3]), to_int(ARGV[4])
local err = check_keys(id)
if err then return err end
if delay == nil or delay < 0 then return bad_arg('delay_ms must be an integer >= 0') end
if max_attempts == nil or max_attempts < 1 then return bad_arg('max_attempts must be an integer >= 1') end
if payload == nil then return bad_arg('payload is required') end

if redis.call('EXISTS', KEYS[6]) == 1 then
  local f = redis.call('HMGET', KEYS[6], 'state', 'attempts')
  return {'DUPLICATE', f[1] or '', f[2] or ''}
end

local now = now_ms()
local due = now + delay
redis.call('HSET', KEYS[6], 'state', 'pending', 'attempts', 0, 'payload', payload,
  'max_attempts', max_attempts, 'created_at', now)
redis.call('ZADD', KEYS[1], due, id)
emit(KEYS[5], 'enqueue', id, '', 'pending', 0, actor, now)
return {'OK', tostring(due)}
