#!lua flags=no-writes
--@include common.lua
-- stats (read): one consistent snapshot of a queue's counts.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- Reply: {now_ms, pending, active, done, failed, due (pending with due <= now),
--         lapsed (active with lease deadline < now), oldest_due_ms or '',
--         next_due_ms or '' (earliest pending job not yet due),
--         last_event_id or '', paused ('1' or '0'), paused_since_ms or '',
--         paused_by or '', paused_reason or '',
--         next_deadline_ms or '' (earliest lease deadline >= now: when the next lease lapses)}
--        {'REFUSED', 'wrongtype', key, type}  a queue key of another type
local err = check_keys(nil)
if err then return err end
local refused = check_types(1, 2, 3, 4, 5)
if refused then return refused end
local now = now_ms()
local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1)
local next_due = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local next_deadline = redis.call('ZRANGEBYSCORE', KEYS[2], now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local last = redis.call('XREVRANGE', KEYS[5], '+', '-', 'COUNT', 1)
local paused_key = PREFIX .. 'paused'
local paused_type = redis.call('TYPE', paused_key).ok
local pause = {'', '', ''}
if paused_type == 'hash' then
  local p = redis.call('HMGET', paused_key, 'since_ms', 'actor', 'reason')
  pause = {p[1] or '', p[2] or '', p[3] or ''}
end
return {
  now,
  redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]), redis.call('ZCARD', KEYS[4]),
  redis.call('ZCOUNT', KEYS[1], '-inf', now),
  redis.call('ZCOUNT', KEYS[2], '-inf', '(' .. now),
  oldest[2] or '', next_due[2] or '',
  last[1] and last[1][1] or '',
  paused_type == 'none' and '0' or '1', pause[1], pause[2], pause[3],
  next_deadline[2] or '',
}
