#!lua
--@include common.lua
-- retry_failed (operator, batch): up to `limit` failed jobs, oldest failure
-- first, go back to pending (due now) with `extra_attempts` more tries, as
-- retry does one by one. Call it in a loop while it reports more.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 limit (1..1000), 2 extra_attempts (1..1000000), 3 actor,
--       4 failed before ms ('' = any, else 0..99999999999999; only jobs that
--       failed before this server time move, so jobs failing again during a
--       long run are not retried twice by it),
--       5 skip (0..99999999999999: ids this loop already skipped as
--       inconsistent; they stay at the head of the set, so later calls start
--       after them)
-- Reply: {'OK', moved, missing, skipped, more (0 | 1)}
--        {'REFUSED', 'wrongtype', key, type}  nothing was written
-- Errors (nothing written): bad keys, limit, extra_attempts, cutoff or skip.
local unknown_move = check_moves('retry')
if unknown_move then return unknown_move end
local actor = ARGV[3] or ''
local cutoff = ARGV[4] or ''
local err = check_keys(nil)
if err then return err end
local limit, bad = int_arg(ARGV[1], 'limit', 1, MAX_BATCH)
if bad then return bad end
local extra, bad2 = int_arg(ARGV[2], 'extra_attempts', 1, MAX_TRIES)
if bad2 then return bad2 end
local skip, bad3 = int_arg(ARGV[5] or '0', 'skip', 0, MAX_INT)
if bad3 then return bad3 end
if cutoff ~= '' then
  local _, bad4 = int_arg(cutoff, 'failed before', 0, MAX_INT)
  if bad4 then return bad4 end
end
local refused = check_types(1, 4, 5)
if refused then return refused end

local now = now_ms()
local max_score = cutoff == '' and '+inf' or ('(' .. cutoff)
local ids = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', max_score, 'LIMIT', skip, limit)
local moved, missing, skipped = 0, 0, 0
for _, id in ipairs(ids) do
  local job_key = PREFIX .. 'job:' .. id
  local kind = redis.call('TYPE', job_key).ok
  if kind == 'none' then
    redis.call('ZREM', KEYS[4], id)
    missing = missing + 1
  elseif kind ~= 'hash' or redis.call('HGET', job_key, 'state') ~= 'failed' then
    skipped = skipped + 1
  else
    local attempts = redis.call('HGET', job_key, 'attempts') or ''
    redis.call('ZREM', KEYS[4], id)
    redis.call('ZADD', KEYS[1], now, id)
    redis.call('HSET', job_key, 'state', 'pending', 'max_attempts', math.min((to_int(attempts) or 0) + extra, MAX_INT))
    failure_leave(job_key)
    emit(KEYS[5], 'retry', id, 'failed', 'pending', attempts, actor, now, job_key)
    moved = moved + 1
  end
end
local more = #ids == limit and 1 or 0
return {'OK', moved, missing, skipped, more}
