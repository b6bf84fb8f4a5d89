#!lua flags=no-writes
--@include common.lua
-- states (read): the state and attempts of some given jobs of one queue,
-- O(ids), reading no value longer than 1024 bytes: what a page needs to tell
-- the operator that a row it still shows has moved on.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: job ids (at most 500)
-- Reply: {now_ms (integer), then per id 3 values: state, attempts ('' when
--         absent, the key is not a hash, or the value is longer than 1024
--         bytes), key type ('hash', 'none' when missing, or the Redis type)}
-- Errors: bad keys, more than 500 ids.
local err = check_keys(nil)
if err then return err end
if #ARGV > 500 then return bad_arg('at most 500 ids') end
local SMALL = 1024
local out = {now_ms()}
for _, id in ipairs(ARGV) do
  local job_key = PREFIX .. 'job:' .. id
  local kind = redis.call('TYPE', job_key).ok
  local state, attempts = '', ''
  if kind == 'hash' then
    if redis.call('HSTRLEN', job_key, 'state') <= SMALL then state = redis.call('HGET', job_key, 'state') or '' end
    if redis.call('HSTRLEN', job_key, 'attempts') <= SMALL then
      attempts = redis.call('HGET', job_key, 'attempts') or ''
    end
  end
  out[#out + 1] = state
  out[#out + 1] = attempts
  out[#out + 1] = kind
end
return out
