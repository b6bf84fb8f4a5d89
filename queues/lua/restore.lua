#!lua
--@include common.lua
-- restore (operator): a pending or failed job's payload becomes, byte for byte, one of its kept
-- versions (payload_versions.lua); the payload it replaces is kept as a version in turn. An active
-- job is refused: its worker may be running it.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 expected state ('pending' | 'failed'), 3 expected attempts ('' = any),
--       4 version (its number, 1..99999999999999), 5 actor
-- Reply: {'OK', state, attempts, version}  version: the number the replaced payload is kept under
--        {'REFUSED', reason, state, attempts}  reason: missing | state | attempts | running |
--        no_version (the job keeps no such version) | unchanged (the payload already holds it) |
--        keep_too_large | versions (as edit)
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys, expected state or version.
local unknown_move = check_moves('restore')
if unknown_move then return unknown_move end
--@include operator_args.lua
--@include payload_versions.lua
local seq, bad = int_arg(ARGV[4], 'version', 1, MAX_INT)
if bad then return bad end
local refused = check_types(1, 4, 5)
if refused then return refused end
local refusal, state, attempts = check_seen(KEYS[6], id, {pending = true, failed = true}, expect_state, expect_attempts)
if refusal then
  if refusal[3] == 'active' then refusal[2] = 'running' end
  return refusal
end
local versions = read_versions(KEYS[6])
if not versions then return refuse('versions', state, attempts) end
local listed = false
for _, v in ipairs(versions) do
  if v.seq == seq then listed = true end
end
local field = 'version:' .. string.format('%d', seq)
if not listed or redis.call('HEXISTS', KEYS[6], field) == 0 then return refuse('no_version', state, attempts) end
if redis.call('HSTRLEN', KEYS[6], 'payload') > VERSIONS_MAX_BYTES then return refuse('keep_too_large', state, attempts) end
local restored = redis.call('HGET', KEYS[6], field)
local old = redis.call('HGET', KEYS[6], 'payload') or ''
if restored == old then return refuse('unchanged', state, attempts) end

local now = now_ms()
local actor = ARGV[5] or ''
local kept = keep_version(KEYS[6], versions, old, now, 'restore', actor)
set_payload(KEYS[6], restored)
emit(KEYS[5], 'restore', id, state, state, attempts, actor, now, KEYS[6])
return {'OK', state, attempts, kept}
