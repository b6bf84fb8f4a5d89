--@include common.lua
-- count_older (read): how many jobs of a state entered it at least
-- `older_than_ms` ago, as a purge (or any "act on all matching" by age) would
-- select them now. O(log N).
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 state, 2 older_than_ms (integer >= 0)
-- Reply: {now_ms, count}
-- Errors: bad keys, state or older_than_ms.
local err = check_keys(nil)
if err then return err end
local state, older = ARGV[1], to_int(ARGV[2])
local set = KEYS[STATE_SET[state] or 0]
if set == nil then return bad_arg('state must be pending, active, done or failed') end
if older == nil or older < 0 then return bad_arg('older_than_ms must be an integer >= 0') end
local now = now_ms()
return {now, redis.call('ZCOUNT', set, '-inf', now - older)}
