#!lua flags=no-writes
--@include common.lua
-- page (read): one page of a state's jobs with their fields, O(log N + page),
-- and bounded in bytes: no row reads a field value longer than 1024 bytes
-- (4096 for last_error). A row shows the payload when it is at most 1024
-- bytes long, else its `preview` field, else only its length (HSTRLEN, O(1)):
-- the payload of a large job is never read.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 state, 2 order ('asc' | 'desc' by score), 3 mode:
--         'offset'  ARGV[4] = offset (rank in this order, 0..99999999999999)
--         'after'   ARGV[4] = cursor score, ARGV[5] = cursor id: the page that
--                   follows that entry (stable while jobs flow: it does not
--                   shift when entries before it come or go)
--         'before'  same cursor: the page that precedes that entry
--       6 limit (1..500), 7 payload head bytes (0..4096)
-- Reply: {now_ms, total, start_rank, has_more (0 | 1), then per job 10 values:
--         id, score, state, attempts, payload head, payload length,
--         last_error head (at most 200 bytes), last_error length,
--         key type ('hash', 'none' when the id's hash is missing, or another
--         Redis type), head source ('payload' | 'preview' | 'none')}
--        {'REFUSED', 'wrongtype', key, type}  the state's set is not a sorted set
-- Field values longer than their bound come back as '' (their lengths are
-- given for the payload and last_error). Integers are replies of type
-- integer; everything else is a bulk string (a score as Redis prints it).
local err = check_keys(nil)
if err then return err end
local state, order, mode = ARGV[1], ARGV[2], ARGV[3]
local set_index = STATE_SET[state or '']
if set_index == nil then return bad_arg('state must be pending, active, done or failed') end
local set = KEYS[set_index]
if order ~= 'asc' and order ~= 'desc' then return bad_arg('order must be asc or desc') end
local limit, bad = int_arg(ARGV[6], 'limit', 1, 500)
if bad then return bad end
local head, bad2 = int_arg(ARGV[7], 'payload head', 0, 4096)
if bad2 then return bad2 end
local start, skip_through
if mode == 'offset' then
  local bad3
  start, bad3 = int_arg(ARGV[4], 'offset', 0, MAX_INT)
  if bad3 then return bad3 end
elseif mode == 'after' or mode == 'before' then
  local id = ARGV[5]
  if not string.match(ARGV[4] or '', '^%-?%d+$') and not string.match(ARGV[4] or '', '^[+-]?inf$') or id == nil or id == '' then
    return bad_arg('a cursor needs a score (an integer, inf or -inf) and an id')
  end
else
  return bad_arg('mode must be offset, after or before')
end
local refused = check_types(set_index)
if refused then return refused end

local asc = order == 'asc'
local function range(a, b)
  if asc then return redis.call('ZRANGE', set, a, b, 'WITHSCORES') end
  return redis.call('ZREVRANGE', set, a, b, 'WITHSCORES')
end
local function rank_of(id)
  if asc then return redis.call('ZRANK', set, id) end
  return redis.call('ZREVRANK', set, id)
end
-- How many entries come before `score` in this order.
local function count_before(score)
  if asc then return redis.call('ZCOUNT', set, '-inf', '(' .. score) end
  return redis.call('ZCOUNT', set, '(' .. score, '+inf')
end

local total = redis.call('ZCARD', set)
if mode ~= 'offset' then
  local score, id = tonumber(ARGV[4]), ARGV[5]
  local current = redis.call('ZSCORE', set, id)
  local rank
  if current and tonumber(current) == score then
    rank = rank_of(id)
  else
    -- The cursor's job has moved on: start at its score; for 'after', skip
    -- entries of the same score that sort up to its id.
    rank = count_before(ARGV[4])
    if mode == 'after' then
      skip_through = {score, id}
      rank = rank - 1
    end
  end
  if mode == 'after' then start = rank + 1 else start = math.max(rank - limit, 0) end
  if mode == 'before' then limit = math.min(limit, rank) end
end

local SMALL = 1024
local ERROR_READ = 4096
local ERROR_HEAD = 200
-- What a row shows of a job's hash, reading no value longer than its bound.
-- The payload's length is asked first: a key of another type answers it
-- with an error, and only then is its type asked.
local function row_of(job_key)
  local payload_length = redis.pcall('HSTRLEN', job_key, 'payload')
  if type(payload_length) == 'table' then
    return {'', '', '', 0, '', 0, redis.call('TYPE', job_key).ok, 'none'}
  end
  local lengths = {state = redis.call('HSTRLEN', job_key, 'state'), attempts = redis.call('HSTRLEN', job_key, 'attempts'),
                   last_error = redis.call('HSTRLEN', job_key, 'last_error'), payload = payload_length}
  local wanted = {}
  for _, name in ipairs({'state', 'attempts', 'payload'}) do
    if lengths[name] <= SMALL then wanted[#wanted + 1] = name end
  end
  if lengths.last_error <= ERROR_READ then wanted[#wanted + 1] = 'last_error' end
  if payload_length > SMALL then
    lengths.preview = redis.call('HSTRLEN', job_key, 'preview')
    if lengths.preview > 0 and lengths.preview <= SMALL then wanted[#wanted + 1] = 'preview' end
  end
  local values = {}
  if #wanted > 0 then
    local got = redis.call('HMGET', job_key, unpack(wanted))
    for i, name in ipairs(wanted) do values[name] = got[i] end
  end
  local kind = 'hash'
  if not (values.state or values.attempts or values.payload) and redis.call('EXISTS', job_key) == 0 then
    kind = 'none'
  end
  local shown, source = '', 'none'
  if values.payload then
    shown, source = values.payload, 'payload'
  elseif values.preview then
    shown, source = values.preview, 'preview'
  end
  return {values.state or '', values.attempts or '', cut_utf8(shown, head), payload_length,
          cut_utf8(values.last_error or '', ERROR_HEAD), lengths.last_error, kind, source}
end

local reply = {now_ms(), total, start, 0}
local taken, looked, position = 0, 0, start
while taken < limit and looked < limit + 1000 do
  local chunk = range(position, position + limit - 1)
  if #chunk == 0 then break end
  for i = 1, #chunk, 2 do
    local id, score = chunk[i], chunk[i + 1]
    looked = looked + 1
    position = position + 1
    local skip = false
    if skip_through and tonumber(score) == skip_through[1] then
      skip = (asc and id <= skip_through[2]) or ((not asc) and id >= skip_through[2])
    end
    if not skip and taken < limit then
      reply[#reply + 1] = id
      reply[#reply + 1] = score
      for _, value in ipairs(row_of(PREFIX .. 'job:' .. id)) do reply[#reply + 1] = value end
      taken = taken + 1
    end
  end
end
if position < total then reply[4] = 1 end
return reply
