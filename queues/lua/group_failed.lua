#!lua
--@include common.lua
-- group_failed (batch): puts failed jobs that are in no failure group (they
-- failed before the queue's runtime kept groups, or under one that keeps
-- none) into the group of their last_error, at the time they failed. Walks
-- the failed set by rank from `start`; call it again with the `next` it
-- returns while it reports more. A job already in a group is left alone, so
-- running it twice, or beside the moves, groups every job once.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 start (rank in the failed set, 0..), 2 limit (1..1000)
-- Reply: {'OK', grouped, looked_at, next start, more (0 | 1)}
--        {'REFUSED', 'wrongtype', key, its type}   the failed set or the index
-- Errors (nothing written): bad keys, start or limit.
local err = check_keys(nil)
if err then return err end
local start, bad = int_arg(ARGV[1], 'start', 0, MAX_INT)
if bad then return bad end
local limit, bad2 = int_arg(ARGV[2], 'limit', 1, MAX_BATCH)
if bad2 then return bad2 end
local refused = check_types(4) or wrong_type(PREFIX .. 'failures', 'zset')
if refused then return refused end

local entries = redis.call('ZRANGE', KEYS[4], start, start + limit - 1, 'WITHSCORES')
local grouped = 0
for i = 1, #entries, 2 do
  local id, score = entries[i], entries[i + 1]
  local job_key = PREFIX .. 'job:' .. id
  if redis.call('TYPE', job_key).ok == 'hash' and redis.call('HGET', job_key, 'state') == 'failed'
      and redis.call('HEXISTS', job_key, 'fsig') == 0
      and redis.call('HSTRLEN', job_key, 'last_error') <= MAX_ERROR_BYTES then
    local plan = failure_plan(redis.call('HGET', job_key, 'last_error') or '')
    local ts = to_int(redis.call('HGET', job_key, 'finished_at')) or math.floor(tonumber(score) or 0)
    if plan then
      failure_enter(job_key, id, plan, ts)
      grouped = grouped + 1
    end
  end
end
local looked = #entries / 2
return {'OK', grouped, looked, start + looked, looked == limit and 1 or 0}
