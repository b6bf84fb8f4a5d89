--@include common.lua
-- retry_failed (operator, batch): up to `limit` failed jobs, oldest failure
-- first, go back to pending (due now) with `extra_attempts` more tries, as
-- retry does one by one. Call it in a loop while it reports more.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 limit (1..1000), 2 extra_attempts (integer >= 1), 3 actor,
--       4 failed before ms ('' = any; only jobs that failed before this
--       server time move, so jobs failing again during a long run are not
--       retried twice by it),
--       5 skip (ids this loop already skipped as inconsistent; they stay
--       at the head of the set, so later calls start after them)
-- Reply: {'OK', moved, missing, skipped, more (0 | 1)}
-- Errors (nothing written): bad keys, limit, extra_attempts or cutoff.
local limit, extra, actor = to_int(ARGV[1]), to_int(ARGV[2]), ARGV[3]
local cutoff = ARGV[4] or ''
local skip = to_int(ARGV[5] or '0')
local err = check_keys(nil)
if err then return err end
if skip == nil or skip < 0 then return bad_arg('skip must be an integer >= 0') end
if limit == nil or limit < 1 or limit > 1000 then return bad_arg('limit must be an integer in 1..1000') end
if extra == nil or extra < 1 then return bad_arg('extra_attempts must be an integer >= 1') end
if cutoff ~= '' and to_int(cutoff) == nil then return bad_arg('failed before must be an integer or empty') end

local now = now_ms()
local max_score = cutoff == '' and '+inf' or ('(' .. cutoff)
local ids = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', max_score, 'LIMIT', skip, limit)
local moved, missing, skipped = 0, 0, 0
for _, id in ipairs(ids) do
  local job_key = PREFIX .. 'job:' .. id
  local f = redis.call('HMGET', job_key, 'state', 'attempts')
  if redis.call('EXISTS', job_key) == 0 then
    redis.call('ZREM', KEYS[4], id)
    missing = missing + 1
  elseif f[1] ~= 'failed' then
    skipped = skipped + 1
  else
    redis.call('ZREM', KEYS[4], id)
    redis.call('ZADD', KEYS[1], now, id)
    redis.call('HSET', job_key, 'state', 'pending', 'max_attempts', (to_int(f[2]) or 0) + extra)
    emit(KEYS[5], 'retry', id, 'failed', 'pending', f[2] or '', actor, now)
    moved = moved + 1
  end
end
local more = #ids == limit and 1 or 0
return {'OK', moved, missing, skipped, more}
