#!lua
--@include common.lua
-- recover_expired (sweeper, batch): up to `limit` active jobs whose lease
-- deadline has passed, earliest first, go back to pending or, with their
-- attempts spent, to failed. Call it in a loop while it reports more.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 limit (1..1000), 2 actor,
--       3 skip (0..99999999999999: ids this loop already skipped as
--       inconsistent; they stay at the head of the set, so later calls start
--       after them)
-- Reply: {'OK', to_pending, to_failed, missing, skipped, more (0 | 1),
--         next_deadline_ms (the earliest lease deadline still ahead in
--         active, 0 when none is; the sweeper's lease index keeps it)}
--        {'REFUSED', 'wrongtype', key, type}  nothing was written
-- Ids whose key is missing are removed from active (missing); jobs whose
-- hash says another state, or whose key is not a hash, are left for the
-- integrity check (skipped).
-- Errors (nothing written): bad keys, limit or skip.
local unknown_move = check_moves('recover')
if unknown_move then return unknown_move end
local actor = ARGV[2] or ''
local err = check_keys(nil)
if err then return err end
local limit, bad = int_arg(ARGV[1], 'limit', 1, MAX_BATCH)
if bad then return bad end
local skip, bad2 = int_arg(ARGV[3] or '0', 'skip', 0, MAX_INT)
if bad2 then return bad2 end
local refused = check_types(1, 2, 4, 5)
if refused then return refused end

local now = now_ms()
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', skip, limit)
local counts = {pending = 0, failed = 0, missing = 0, skipped = 0}
for _, id in ipairs(ids) do
  local job_key = PREFIX .. 'job:' .. id
  local kind = redis.call('TYPE', job_key).ok
  if kind == 'none' then
    redis.call('ZREM', KEYS[2], id)
    counts.missing = counts.missing + 1
  elseif kind ~= 'hash' or redis.call('HGET', job_key, 'state') ~= 'active' then
    counts.skipped = counts.skipped + 1
  else
    local attempts = redis.call('HGET', job_key, 'attempts') or ''
    local to = recover_one(job_key, id, attempts, now)
    emit(KEYS[5], 'recover', id, 'active', to, attempts, actor, now, job_key)
    counts[to] = counts[to] + 1
  end
end
local more = #ids == limit and 1 or 0
local ahead = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local next_deadline = ahead[2] and math.floor(tonumber(ahead[2])) or 0
return {'OK', counts.pending, counts.failed, counts.missing, counts.skipped, more, next_deadline}
