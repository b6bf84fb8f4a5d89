#!lua
--@include common.lua
-- purge (operator, batch): delete up to `limit` done or failed jobs whose
-- move into that state is older than `older_than_ms`, oldest first. Call it
-- in a loop while it reports more. With `up_to_ms`, ages are measured from
-- that server time instead of now: a confirmed purge deletes only jobs that
-- were there when it was counted, however many finish meanwhile.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 state ('done' | 'failed'), 2 older_than_ms (0..99999999999999),
--       3 limit (1..1000), 4 actor,
--       5 skip (0..99999999999999: ids this loop already skipped as
--       inconsistent; they stay at the head of the set, so later calls start
--       after them),
--       6 up_to_ms ('' = now, else 0..99999999999999; a later time than now
--       counts as now)
-- Reply: {'OK', deleted, missing, skipped, more (0 | 1)}
--        {'REFUSED', 'wrongtype', key, type}  nothing was written
-- Each deleted job's 'purge' event carries the attempts the job had.
-- Errors (nothing written): bad keys, state, older_than_ms, limit, skip or up_to_ms.
local unknown_move = check_moves('purge')
if unknown_move then return unknown_move end
local state, actor = ARGV[1], ARGV[4] or ''
local err = check_keys(nil)
if err then return err end
if state ~= 'done' and state ~= 'failed' then return bad_arg('state must be done or failed') end
local older, bad = int_arg(ARGV[2], 'older_than_ms', 0, MAX_INT)
if bad then return bad end
local limit, bad2 = int_arg(ARGV[3], 'limit', 1, MAX_BATCH)
if bad2 then return bad2 end
local skip, bad3 = int_arg(ARGV[5] or '0', 'skip', 0, MAX_INT)
if bad3 then return bad3 end
local up_to = nil
if (ARGV[6] or '') ~= '' then
  local bad4
  up_to, bad4 = int_arg(ARGV[6], 'up_to_ms', 0, MAX_INT)
  if bad4 then return bad4 end
end
local set_index = STATE_SET[state]
local refused = check_types(set_index, 5)
if refused then return refused end

local now = now_ms()
local top = now
if up_to and up_to < now then top = up_to end
local set = KEYS[set_index]
local ids = redis.call('ZRANGEBYSCORE', set, '-inf', top - older, 'LIMIT', skip, limit)
local deleted, missing, skipped = 0, 0, 0
for _, id in ipairs(ids) do
  local job_key = PREFIX .. 'job:' .. id
  local kind = redis.call('TYPE', job_key).ok
  if kind == 'none' then
    redis.call('ZREM', set, id)
    missing = missing + 1
  elseif kind ~= 'hash' then
    skipped = skipped + 1
  else
    local f = redis.call('HMGET', job_key, 'state', 'attempts')
    if f[1] ~= state then
      skipped = skipped + 1
    else
      redis.call('ZREM', set, id)
      failure_leave(job_key)
      -- UNLINK, not DEL: the same keyspace after, but a huge key (another writer's) is freed in the
      -- background instead of while Redis waits.
      redis.call('UNLINK', job_key)
      emit(KEYS[5], 'purge', id, state, '', f[2] or '', actor, now, nil)
      deleted = deleted + 1
    end
  end
end
local more = #ids == limit and 1 or 0
return {'OK', deleted, missing, skipped, more}
