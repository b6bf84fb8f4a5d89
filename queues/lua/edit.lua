#!lua
--@include common.lua
-- edit (operator): a pending or failed job's payload (and max_attempts) changes, and a failed job is
-- retried in the same step when asked (failed -> pending, due now). The payload it replaces is kept as
-- a version (payload_versions.lua). An active job is refused: its worker may be running it.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 expected state ('pending' | 'failed'), 3 expected attempts ('' = any),
--       4 payload (at most 1048576 bytes), 5 max_attempts ('' = unchanged, else 1..1000000; with a
--       retry or a new value it must be above the attempts), 6 retry ('1' | '0'; '1' only from
--       'failed'), 7 actor
-- Reply: {'OK', state, attempts, version}  version: the number the replaced payload is kept under
--        ('' when the payload stayed the same)
--        {'REFUSED', reason, state, attempts}  reason: missing | state | attempts | running (the job
--        is active) | unchanged (nothing would change) | max_attempts (not above the attempts) |
--        keep_too_large (the payload replaced is over 1048576 bytes: it could not be kept) |
--        versions (the versions index is not one the scripts wrote)
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys, expected state, payload, max_attempts or retry.
local unknown_move = check_moves('edit')
if unknown_move then return unknown_move end
--@include operator_args.lua
--@include payload_versions.lua
local payload, retry = ARGV[4], ARGV[6]
if payload == nil then return bad_arg('payload is required') end
if #payload > MAX_PAYLOAD_BYTES then return bad_arg('payload must be at most ' .. MAX_PAYLOAD_BYTES .. ' bytes') end
if ARGV[5] == nil then return bad_arg('max_attempts is required (may be empty)') end
local new_max = nil
if ARGV[5] ~= '' then
  local n, bad = int_arg(ARGV[5], 'max_attempts', 1, MAX_TRIES)
  if bad then return bad end
  new_max = n
end
if retry ~= '0' and retry ~= '1' then return bad_arg("retry must be '1' or '0'") end
if retry == '1' and expect_state ~= 'failed' then return bad_arg('only a failed job can be retried') end
local refused = check_types(1, 4, 5)
if refused then return refused end
local refusal, state, attempts = check_seen(KEYS[6], id, {pending = true, failed = true}, expect_state, expect_attempts)
if refusal then
  if refusal[3] == 'active' then refusal[2] = 'running' end
  return refusal
end
local tries = to_int(attempts) or 0
local old_max = to_int(redis.call('HGET', KEYS[6], 'max_attempts') or '') or DEFAULT_MAX_ATTEMPTS
local max_attempts = new_max or old_max
if retry == '1' and not new_max and max_attempts <= tries then max_attempts = math.min(tries + 1, MAX_INT) end
if (new_max or retry == '1') and max_attempts <= tries then return refuse('max_attempts', state, attempts) end
-- A payload too long to keep is never read whole: it differs from any payload an edit may write.
if redis.call('HSTRLEN', KEYS[6], 'payload') > VERSIONS_MAX_BYTES then return refuse('keep_too_large', state, attempts) end
local old = redis.call('HGET', KEYS[6], 'payload') or ''
local changed = old ~= payload
if not changed and retry == '0' and max_attempts == old_max then return refuse('unchanged', state, attempts) end
local versions
if changed then
  versions = read_versions(KEYS[6])
  if not versions then return refuse('versions', state, attempts) end
end

local now = now_ms()
local actor = ARGV[7] or ''
local kept = ''
if changed then
  kept = keep_version(KEYS[6], versions, old, now, 'edit', actor)
  set_payload(KEYS[6], payload)
end
if max_attempts ~= old_max then redis.call('HSET', KEYS[6], 'max_attempts', max_attempts) end
local to = state
if retry == '1' then
  redis.call('ZREM', KEYS[4], id)
  redis.call('ZADD', KEYS[1], now, id)
  redis.call('HSET', KEYS[6], 'state', 'pending')
  failure_leave(KEYS[6])
  to = 'pending'
end
emit(KEYS[5], 'edit', id, state, to, attempts, actor, now, KEYS[6])
return {'OK', to, attempts, kept}
