#!lua
--@include common.lua
-- clone (operator): a new job, under an id the caller gives, in the same queue as the job it is cloned
-- from, with that job's payload (byte for byte) or an edited one, due now or after a delay. The source
-- job is read, never written: it may be in any state, even active. The new job's history starts with a
-- clone entry whose note names the source ("clone of ID").
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 the source job's hash, 7 the new job's hash
-- ARGV: 1 id (the source), 2 expected state (pending | active | done | failed), 3 expected attempts
--       ('' = any), 4 the new id, 5 payload ('' = the source's; else '=' followed by the new payload, at
--       most 1048576 bytes), 6 delay_ms (0..315360000000), 7 max_attempts ('' = the source's, else
--       1..1000000), 8 actor
-- Reply: {'OK', state, attempts, '', new id, due_ms}  state and attempts: the source's, unchanged
--        {'REFUSED', reason, state, attempts}  reason: missing | state | attempts (the source as for
--        every operator move) | exists (the new id is taken; state and attempts are that job's, or
--        'wrongtype:TYPE' and '' for a key of another type) | no_payload | payload_too_large (the
--        source's payload field is missing, or longer than 1048576 bytes)
--        {'REFUSED', 'wrongtype', key, type}
-- Errors (nothing written): bad keys, expected state, new id, payload, delay_ms or max_attempts.
-- Writes: the new hash (as enqueue writes one), its pending entry and a 'clone' event.
local unknown_move = check_moves('clone')
if unknown_move then return unknown_move end
--@include operator_args.lua
--@include payload_versions.lua
local new_id, given = ARGV[4], ARGV[5]
if new_id == nil or new_id == '' then return bad_arg('the new job id is required') end
if #KEYS ~= 7 or KEYS[7] ~= PREFIX .. 'job:' .. new_id then return bad_arg('KEYS[7] must be ' .. PREFIX .. 'job:' .. new_id) end
if new_id == id then return bad_arg('the new job id must differ from the id of the job cloned') end
if given == nil then return bad_arg('payload is required (empty for the source job\'s)') end
if given ~= '' and string.sub(given, 1, 1) ~= '=' then return bad_arg("payload must be empty or '=' and the bytes") end
if #given - 1 > MAX_PAYLOAD_BYTES then return bad_arg('payload must be at most ' .. MAX_PAYLOAD_BYTES .. ' bytes') end
local delay, bad = int_arg(ARGV[6], 'delay_ms', 0, MAX_DELAY_MS)
if bad then return bad end
if ARGV[7] == nil then return bad_arg('max_attempts is required (may be empty)') end
local new_max = nil
if ARGV[7] ~= '' then
  local n, bad2 = int_arg(ARGV[7], 'max_attempts', 1, MAX_TRIES)
  if bad2 then return bad2 end
  new_max = n
end
local refused = check_types(1, 2, 3, 4, 5)
if refused then return refused end
local refusal, state, attempts = check_seen(KEYS[6], id, {pending = true, active = true, done = true, failed = true},
                                            expect_state, expect_attempts)
if refusal then return refusal end
local taken = redis.call('TYPE', KEYS[7]).ok
if taken == 'hash' then
  local f = redis.call('HMGET', KEYS[7], 'state', 'attempts')
  return refuse('exists', f[1] or '', f[2] or '')
elseif taken ~= 'none' then
  return refuse('exists', 'wrongtype:' .. taken, '')
end
local payload
if given == '' then
  if redis.call('HEXISTS', KEYS[6], 'payload') == 0 then return refuse('no_payload', state, attempts) end
  if redis.call('HSTRLEN', KEYS[6], 'payload') > MAX_PAYLOAD_BYTES then
    return refuse('payload_too_large', state, attempts)
  end
  payload = redis.call('HGET', KEYS[6], 'payload')
else
  payload = string.sub(given, 2)
end
local max_attempts = new_max
if not max_attempts then
  local source_max = to_int(redis.call('HGET', KEYS[6], 'max_attempts') or '')
  -- Another writer's value out of bounds: the clone gets the default, as enqueue would give it.
  max_attempts = (source_max and source_max >= 1 and source_max <= MAX_TRIES) and source_max or DEFAULT_MAX_ATTEMPTS
end

local now = now_ms()
local due = now + delay
redis.call('HSET', KEYS[7], unpack(new_job_fields(payload, max_attempts)))
redis.call('ZADD', KEYS[1], due, new_id)
emit(KEYS[5], 'clone', new_id, '', 'pending', 0, ARGV[8] or '', now, KEYS[7],
     escape_field(cut_utf8('clone of ' .. id, HISTORY_ERROR_BYTES)))
return {'OK', state, attempts, '', new_id, tostring(due)}
