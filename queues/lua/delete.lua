#!lua
--@include common.lua
-- delete (operator): remove a job in the state the operator saw: its hash
-- and its id in every one of the four sets (so a job that an inconsistent
-- writer left in two sets is cleaned too). A worker holding it is refused.
-- A job key that another writer left as another type than a hash can be
-- deleted too: its expected state is then 'wrongtype:<type>' (for example
-- 'wrongtype:string'), as the job read reports it. A hash without a state
-- field (or with an empty one) is expected as '~absent'.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 expected state, 3 expected attempts ('' = any), 4 actor
-- Reply: {'OK', 'deleted', attempts}
--        {'REFUSED', reason, state, attempts}  reason: missing | state | attempts
--        {'REFUSED', 'wrongtype', key, type}  a queue key of another type
-- Errors (nothing written): bad keys or expected state.
local unknown_move = check_moves('delete')
if unknown_move then return unknown_move end
--@include operator_args.lua
local refused = check_types(1, 2, 3, 4, 5)
if refused then return refused end
local kind = redis.call('TYPE', KEYS[6]).ok
local state, attempts = 'wrongtype:' .. kind, ''
if kind == 'hash' then
  local refusal
  refusal, state, attempts = check_seen(KEYS[6], id, nil, expect_state, expect_attempts)
  if refusal then return refusal end
elseif kind == 'none' then
  return refuse('missing')
elseif expect_state ~= state then
  return refuse('state', state, '')
end

for i = 1, 4 do redis.call('ZREM', KEYS[i], id) end
if kind == 'hash' then failure_leave(KEYS[6]) end
-- UNLINK, not DEL: the same keyspace after, but a huge key (another writer's) is freed in the
-- background instead of while Redis waits.
redis.call('UNLINK', KEYS[6])
emit(KEYS[5], 'delete', id, state, '', attempts, ARGV[4] or '', now_ms(), nil)
return {'OK', 'deleted', attempts}
