--@include common.lua
-- recover_expired (sweeper, batch): up to `limit` active jobs whose lease
-- deadline has passed, earliest first, go back to pending or, with their
-- attempts spent, to failed. Call it in a loop while it reports more.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 limit (1..1000), 2 actor,
--       3 skip (ids this loop already skipped as inconsistent; they stay
--       at the head of the set, so later calls start after them)
-- Reply: {'OK', to_pending, to_failed, missing, skipped, more (0 | 1)}
-- Ids whose hash is missing are removed from active (missing); jobs whose
-- hash says another state are left for the integrity check (skipped).
-- Errors (nothing written): bad keys or limit.
local limit, actor = to_int(ARGV[1]), ARGV[2]
local skip = to_int(ARGV[3] or '0')
local err = check_keys(nil)
if err then return err end
if skip == nil or skip < 0 then return bad_arg('skip must be an integer >= 0') end
if limit == nil or limit < 1 or limit > 1000 then return bad_arg('limit must be an integer in 1..1000') end

local now = now_ms()
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', skip, limit)
local counts = {pending = 0, failed = 0, missing = 0, skipped = 0}
for _, id in ipairs(ids) do
  local job_key = PREFIX .. 'job:' .. id
  local f = redis.call('HMGET', job_key, 'state', 'attempts')
  if redis.call('EXISTS', job_key) == 0 then
    redis.call('ZREM', KEYS[2], id)
    counts.missing = counts.missing + 1
  elseif f[1] ~= 'active' then
    counts.skipped = counts.skipped + 1
  else
    local to = recover_one(job_key, id, f[2], now)
    emit(KEYS[5], 'recover', id, 'active', to, f[2] or '', actor, now)
    counts[to] = counts[to] + 1
  end
end
local more = #ids == limit and 1 or 0
return {'OK', counts.pending, counts.failed, counts.missing, counts.skipped, more}
