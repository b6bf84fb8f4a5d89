#!lua flags=no-writes
--@include common.lua
-- count_older (read): how many jobs of a state entered it at least
-- `older_than_ms` ago, as a purge (or any "act on all matching" by age) would
-- select them now. O(log N).
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 state, 2 older_than_ms (0..99999999999999)
-- Reply: {now_ms, count} (integers)
--        {'REFUSED', 'wrongtype', key, type}  the state's set is not a sorted set
-- Errors: bad keys, state or older_than_ms.
local err = check_keys(nil)
if err then return err end
local state = ARGV[1]
local set_index = STATE_SET[state or '']
if set_index == nil then return bad_arg('state must be pending, active, done or failed') end
local older, bad = int_arg(ARGV[2], 'older_than_ms', 0, MAX_INT)
if bad then return bad end
local refused = check_types(set_index)
if refused then return refused end
local now = now_ms()
return {now, redis.call('ZCOUNT', KEYS[set_index], '-inf', now - older)}
