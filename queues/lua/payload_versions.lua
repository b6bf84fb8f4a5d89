-- A job's earlier payloads, kept in its own hash so that they live and die with the job (PROTOCOL.md,
-- section 2a). Included by the moves that replace a payload (edit, restore).
--   versions      the index: one line per kept version, oldest first,
--                 SEQ \t TS \t BYTES \t MOVE \t ACTOR (ACTOR escaped as a history field)
--   version:SEQ   the bytes the payload held before the move at TS replaced it
-- At most VERSIONS_MAX versions and VERSIONS_MAX_BYTES bytes of them per job: the oldest go first. A
-- payload longer than VERSIONS_MAX_BYTES cannot be kept, so a move that would replace one is refused
-- (never a payload lost): the newest version is always kept.
local VERSIONS_MAX = 8
local VERSIONS_MAX_BYTES = 1048576
local MAX_PAYLOAD_BYTES = 1048576
local VERSIONS_INDEX_MAX_BYTES = 8192

-- The index as a list of {seq, ts, bytes, line}, or nil when it is not one these scripts wrote.
local function read_versions(job_key)
  if redis.call('HSTRLEN', job_key, 'versions') > VERSIONS_INDEX_MAX_BYTES then return nil end
  local list = {}
  for line in string.gmatch(redis.call('HGET', job_key, 'versions') or '', '[^\n]+') do
    local seq, ts, bytes = string.match(line, '^(%d+)\t(%d+)\t(%d+)\t%a+\t[^\t]*$')
    if not seq or #seq > 14 then return nil end
    list[#list + 1] = {seq = tonumber(seq), ts = ts, bytes = tonumber(bytes), line = line}
  end
  if #list > VERSIONS_MAX then return nil end
  return list
end

-- Keeps `old` (the payload being replaced, at most VERSIONS_MAX_BYTES) as the newest version, drops the
-- oldest while the cap is passed, and returns the new version's number. `list` is read_versions' answer.
local function keep_version(job_key, list, old, ts, move, actor)
  local seq = (#list > 0 and list[#list].seq or 0) + 1
  local line = string.format('%d\t%d\t%d\t%s\t%s', seq, ts, #old, move, escape_field(cut_utf8(actor, MAX_ACTOR_BYTES)))
  list[#list + 1] = {seq = seq, bytes = #old, line = line}
  local total = 0
  for _, v in ipairs(list) do total = total + v.bytes end
  while #list > VERSIONS_MAX or total > VERSIONS_MAX_BYTES do
    local dropped = table.remove(list, 1)
    total = total - dropped.bytes
    redis.call('HDEL', job_key, 'version:' .. string.format('%d', dropped.seq))
  end
  local lines = {}
  for i, v in ipairs(list) do lines[i] = v.line end
  redis.call('HSET', job_key, 'version:' .. string.format('%d', seq), old, 'versions', table.concat(lines, '\n'))
  return string.format('%d', seq)
end

-- The payload becomes `payload`, with the preview a page reads in place of a long one.
local function set_payload(job_key, payload)
  redis.call('HSET', job_key, 'payload', payload)
  local preview = preview_of(payload)
  if preview then
    redis.call('HSET', job_key, 'preview', preview)
  else
    redis.call('HDEL', job_key, 'preview')
  end
end
