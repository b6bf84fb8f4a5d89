#!lua
--@include common.lua
-- enqueue: add a new job, due now or after a delay.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 payload, 3 delay_ms (0..315360000000), 4 max_attempts (1..1000000),
--       5 actor
-- Reply: {'OK', due_ms}
--        {'DUPLICATE', state, attempts}   the id exists; nothing was written,
--                                         so a retried enqueue is idempotent
--        {'REFUSED', 'wrongtype', key, type}  nothing was written
-- Errors (nothing written): bad keys, delay_ms, max_attempts or payload.
-- Writes: the hash (state pending, attempts 0, payload, max_attempts unless
-- it is 3, preview when the payload is longer than 256 bytes, history; the
-- enqueue entry of the history holds the time created), the pending entry and
-- an 'enqueue' event.
local unknown_move = check_moves('enqueue')
if unknown_move then return unknown_move end
local id, payload, actor = ARGV[1], ARGV[2], ARGV[5] or ''
local err = check_keys(id)
if err then return err end
local delay, bad = int_arg(ARGV[3], 'delay_ms', 0, MAX_DELAY_MS)
if bad then return bad end
local max_attempts, bad2 = int_arg(ARGV[4], 'max_attempts', 1, MAX_TRIES)
if bad2 then return bad2 end
if payload == nil then return bad_arg('payload is required') end
local refused = check_types(1, 5, 6)
if refused then return refused end

if redis.call('EXISTS', KEYS[6]) == 1 then
  local f = redis.call('HMGET', KEYS[6], 'state', 'attempts')
  return {'DUPLICATE', f[1] or '', f[2] or ''}
end

local now = now_ms()
local due = now + delay
redis.call('ZADD', KEYS[1], due, id)
-- The job's fields go in the history entry's HSET (one call, and no history read of a hash not yet made).
emit(KEYS[5], 'enqueue', id, '', 'pending', 0, actor, now, KEYS[6], nil, new_job_fields(payload, max_attempts))
return {'OK', tostring(due)}
