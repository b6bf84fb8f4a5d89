--@include common.lua
-- purge (operator, batch): delete up to `limit` done or failed jobs whose
-- move into that state is older than `older_than_ms`, oldest first. Call it
-- in a loop while it reports more.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 state ('done' | 'failed'), 2 older_than_ms (integer >= 0),
--       3 limit (1..1000), 4 actor,
--       5 skip (ids this loop already skipped as inconsistent; they stay
--       at the head of the set, so later calls start after them)
-- Reply: {'OK', deleted, missing, skipped, more (0 | 1)}
-- Errors (nothing written): bad keys, state, older_than_ms or limit.
local state, older, limit, actor = ARGV[1], to_int(ARGV[2]), to_int(ARGV[3]), ARGV[4]
local skip = to_int(ARGV[5] or '0')
local err = check_keys(nil)
if err then return err end
if state ~= 'done' and state ~= 'failed' then return bad_arg('state must be done or failed') end
if older == nil or older < 0 then return bad_arg('older_than_ms must be an integer >= 0') end
if skip == nil or skip < 0 then return bad_arg('skip must be an integer >= 0') end
if limit == nil or limit < 1 or limit > 1000 then return bad_arg('limit must be an integer in 1..1000') end

local now = now_ms()
local set = KEYS[STATE_SET[state]]
local ids = redis.call('ZRANGEBYSCORE', set, '-inf', now - older, 'LIMIT', skip, limit)
local deleted, missing, skipped = 0, 0, 0
for _, id in ipairs(ids) do
  local job_key = PREFIX .. 'job:' .. id
  local current = redis.call('HGET', job_key, 'state')
  if redis.call('EXISTS', job_key) == 0 then
    redis.call('ZREM', set, id)
    missing = missing + 1
  elseif current ~= state then
    skipped = skipped + 1
  else
    redis.call('ZREM', set, id)
    redis.call('DEL', job_key)
    emit(KEYS[5], 'purge', id, state, '', '', actor, now)
    deleted = deleted + 1
  end
end
local more = #ids == limit and 1 or 0
return {'OK', deleted, missing, skipped, more}
