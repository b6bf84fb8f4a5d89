#!lua
--@include common.lua
-- remove_key (operator): delete one of the queue's four state sets that
-- another writer left as another type than a sorted set, so the queue can be
-- read and moved again (every script refuses the whole queue meanwhile). It
-- is compare-and-move on the key's type: the operator saw it hold TYPE; a key
-- that holds anything else since (a sorted set again, nothing, another type)
-- is left alone. A job key of another type than a hash is removed by delete.
-- The event is written when the events key can take it (a stream or none).
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 prefix
-- ARGV: 1 which set (pending | active | done | failed), 2 the type the operator saw, 3 actor
-- Reply: {'OK', 'removed', type}
--        {'REFUSED', 'missing', '', ''}     the key does not exist
--        {'REFUSED', 'state', type, ''}     it holds another type than the operator saw, or a sorted set
-- Errors (nothing written): bad keys, an unknown set, a type that is empty or 'zset'.
local unknown_move = check_moves('remove_key')
if unknown_move then return unknown_move end
do
  local err = check_keys(nil)
  if err then return err end
end
local which, expect_type = ARGV[1], ARGV[2]
local index = STATE_SET[which or '']
if not index then return bad_arg('which set must be pending, active, done or failed') end
if expect_type == nil or expect_type == '' or expect_type == 'zset' or expect_type == 'none' then
  return bad_arg('the type the operator saw is required, and is not zset or none')
end
local kind = redis.call('TYPE', KEYS[index]).ok
if kind == 'none' then return refuse('missing') end
if kind ~= expect_type then return refuse('state', kind, '') end
local events_usable = redis.call('TYPE', KEYS[5]).ok
events_usable = events_usable == 'stream' or events_usable == 'none'

-- UNLINK, not DEL: the same keyspace after, but a huge key (another writer's) is freed in the
-- background instead of while Redis waits.
redis.call('UNLINK', KEYS[index])
if events_usable then
  emit(KEYS[5], 'remove_key', which, 'wrongtype:' .. kind, '', '', ARGV[3] or '', now_ms(), nil)
end
return {'OK', 'removed', kind}
