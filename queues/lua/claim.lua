--@include common.lua
-- claim: move up to `count` due pending jobs, earliest due first, to active
-- with a lease; each claim increments attempts, which is the fencing token.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 lease_ms (integer >= 1), 2 claim_id (random, non-empty; stored
--       beside attempts so that a claim lost in a failover cannot hand the
--       same token out twice), 3 worker (actor), 4 count (1..1000)
-- Reply: {'OK', lease_deadline_ms, id1, attempts1, payload1, id2, ...}
--        {'EMPTY', next_due_ms or ''}    nothing is due yet
-- Ids in pending whose hash is missing are removed (cleaned); jobs whose hash
-- disagrees with the set (state not pending, attempts not a number) are left
-- in place for the integrity check and skipped.
-- Errors (nothing written): bad keys, lease_ms, claim_id or count.
local lease, claim_id, worker, count = to_int(ARGV[1]), ARGV[2], ARGV[3], to_int(ARGV[4])
local err = check_keys(nil)
if err then return err end
if lease == nil or lease < 1 then return bad_arg('lease_ms must be an integer >= 1') end
if claim_id == nil or claim_id == '' then return bad_arg('claim_id is required') end
if count == nil or count < 1 or count > 1000 then return bad_arg('count must be an integer in 1..1000') end

local now = now_ms()
local deadline = now + lease
local reply = {'OK', tostring(deadline)}
local got, skipped, looked = 0, 0, 0
-- Bounded: at most count + 100 ids are looked at, however many are stale.
local budget = count + 100
while got < count and looked < budget do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', skipped, count - got)
  if #ids == 0 then break end
  for _, id in ipairs(ids) do
    looked = looked + 1
    local job_key = PREFIX .. 'job:' .. id
    local f = redis.call('HMGET', job_key, 'state', 'attempts', 'payload')
    if f[1] == false and f[2] == false and f[3] == false and redis.call('EXISTS', job_key) == 0 then
      redis.call('ZREM', KEYS[1], id)
    elseif f[1] ~= 'pending' or (f[2] and to_int(f[2]) == nil) then
      skipped = skipped + 1
    else
      local attempts = (to_int(f[2]) or 0) + 1
      redis.call('ZREM', KEYS[1], id)
      redis.call('ZADD', KEYS[2], deadline, id)
      redis.call('HSET', job_key, 'state', 'active', 'attempts', attempts,
        'claim_id', claim_id, 'worker', worker, 'claimed_at', now)
      emit(KEYS[5], 'claim', id, 'pending', 'active', attempts, worker, now)
      reply[#reply + 1] = id
      reply[#reply + 1] = tostring(attempts)
      reply[#reply + 1] = f[3] or ''
      got = got + 1
    end
  end
end
if got > 0 then return reply end
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {'EMPTY', head[2] or ''}
