#!lua
--@include common.lua
--@include schedule_args.lua
-- schedule_delete: removes a schedule. The jobs its ticks enqueued stay where they are.
--
-- KEYS: 1 emq:{Q}:schedule:<name>, 2 emq:{Q}:schedules
-- ARGV: 1 name, 2 expected version ('' any)
-- Reply: {'OK', version}  ('' when only the set's entry was left, without its hash)
--        {'REFUSED', 'missing', '', ''}        no such schedule
--        {'REFUSED', 'changed', version, ''}   the stored version is not the expected one
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys or arguments.
local name = ARGV[1]
local bad = bad_schedule_name(name)
if bad then return bad end
local err = check_schedule_keys(name, 1, 2)
if err then return err end
local expected, bad_version = version_arg(ARGV[2])
if bad_version then return bad_version end
local refused = schedule_types(1, 2)
if refused then return refused end
if redis.call('EXISTS', KEYS[1]) == 0 then
  -- An entry of the set without its hash (another writer's) is removed, so that it stops looking due.
  if not redis.call('ZSCORE', KEYS[2], name) then return {'REFUSED', 'missing', '', ''} end
  redis.call('ZREM', KEYS[2], name)
  return {'OK', ''}
end
local version = schedule_version(KEYS[1])
if expected and expected ~= version then return {'REFUSED', 'changed', tostring(version), ''} end

redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], name)
return {'OK', tostring(version)}
