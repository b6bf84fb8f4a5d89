#!lua flags=no-writes
--@include common.lua
-- job (read): a job's hash and its score in each of the four sets, at one
-- instant, bounded in bytes: the payload comes back whole only when it is at
-- most `payload_bytes` long (else its preview, or nothing), the history is
-- left to the history read, and no other value longer than 4096 bytes is
-- read. A hash of more than 64 fields is read by the names the protocol
-- knows only.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id, 2 payload_bytes (0..16777216: the longest payload to return whole)
-- Reply: {now_ms, pending score, active score, done score, failed score
--         ('' where not a member), key type ('hash', 'none' or another type),
--         payload length, payload (whole, or the preview, or ''),
--         payload whole (1 | 0), field count (HLEN),
--         then per other field (not payload, history, versions or version:N): name, value
--         ('' when longer than 4096 bytes), value length; then the fields
--         the moves do not store, as the job's history and sets tell them:
--         created_at, worker, claimed_at (from the history) and finished_at
--         (the score in done or failed) in place of any stored value, and
--         max_attempts 3 when the hash has none}
local id = ARGV[1]
local err = check_keys(id)
if err then return err end
local limit, bad = int_arg(ARGV[2] or '65536', 'payload_bytes', 0, 16777216)
if bad then return bad end
local refused = check_types(1, 2, 3, 4)
if refused then return refused end

local reply = {now_ms()}
for i = 1, 4 do reply[#reply + 1] = redis.call('ZSCORE', KEYS[i], id) or '' end
local kind = redis.call('TYPE', KEYS[6]).ok
reply[#reply + 1] = kind
if kind ~= 'hash' then
  for _, v in ipairs({0, '', 0, 0}) do reply[#reply + 1] = v end
  return reply
end

local length = redis.call('HSTRLEN', KEYS[6], 'payload')
local payload, whole = '', 0
if length <= limit and redis.call('HEXISTS', KEYS[6], 'payload') == 1 then
  payload, whole = redis.call('HGET', KEYS[6], 'payload'), 1
elseif redis.call('HSTRLEN', KEYS[6], 'preview') <= 1024 then
  payload = redis.call('HGET', KEYS[6], 'preview') or ''
end
local count = redis.call('HLEN', KEYS[6])
for _, v in ipairs({length, payload, whole, count}) do reply[#reply + 1] = v end

local names
if count <= 64 then
  names = redis.call('HKEYS', KEYS[6])
else
  names = {'state', 'attempts', 'max_attempts', 'created_at', 'claim_id', 'worker', 'claimed_at',
           'finished_at', 'last_error', 'preview'}
end
-- The fields the moves no longer write, as the history and the sets tell
-- them; they stand in for stored values, which may be stale.
local derived = {}
if redis.call('HSTRLEN', KEYS[6], 'history') <= 16384 then
  derived = history_facts(redis.call('HGET', KEYS[6], 'history') or '')
end
local finished = reply[4] ~= '' and reply[4] or reply[5]
if finished ~= '' then derived.finished_at = finished end
local function add(name, value, n)
  reply[#reply + 1] = name
  reply[#reply + 1] = value
  reply[#reply + 1] = n
end
for _, name in ipairs(names) do
  -- The payload's kept versions are the versions read's (payload_versions.lua), as the history is the history read's.
  if name ~= 'payload' and name ~= 'history' and name ~= 'versions' and string.sub(name, 1, 8) ~= 'version:' then
    local value = derived[name]
    derived[name] = nil
    if value then
      add(name, value, #value)
    else
      local n = redis.call('HSTRLEN', KEYS[6], name)
      if n > 0 or redis.call('HEXISTS', KEYS[6], name) == 1 then
        add(name, n <= 4096 and redis.call('HGET', KEYS[6], name) or '', n)
      end
    end
  end
end
for _, name in ipairs({'created_at', 'worker', 'claimed_at', 'finished_at'}) do
  if derived[name] then add(name, derived[name], #derived[name]) end
end
if redis.call('HEXISTS', KEYS[6], 'max_attempts') == 0 then add('max_attempts', tostring(DEFAULT_MAX_ATTEMPTS), 1) end
return reply
