--@include common.lua
-- page (read): one page of a state's jobs with their fields, O(log N + page).
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1 state, 2 order ('asc' | 'desc' by score), 3 mode:
--         'offset'  ARGV[4] = offset (rank in this order)
--         'after'   ARGV[4] = cursor score, ARGV[5] = cursor id: the page that
--                   follows that entry (stable while jobs flow: it does not
--                   shift when entries before it come or go)
--         'before'  same cursor: the page that precedes that entry
--       6 limit (1..500), 7 payload head bytes (0..4096)
-- Reply: {now_ms, total, start_rank, has_more, then per job 8 values:
--         id, score, state, attempts, payload head, payload length,
--         last_error head, exists (1 | 0)}
local err = check_keys(nil)
if err then return err end
local state, order, mode = ARGV[1], ARGV[2], ARGV[3]
local limit, head = to_int(ARGV[6]), to_int(ARGV[7])
local set = KEYS[STATE_SET[state] or 0]
if set == nil then return bad_arg('state must be pending, active, done or failed') end
if order ~= 'asc' and order ~= 'desc' then return bad_arg('order must be asc or desc') end
if limit == nil or limit < 1 or limit > 500 then return bad_arg('limit must be an integer in 1..500') end
if head == nil or head < 0 or head > 4096 then return bad_arg('payload head must be in 0..4096') end

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
local start
local skip_through = nil
if mode == 'offset' then
  start = to_int(ARGV[4])
  if start == nil or start < 0 then return bad_arg('offset must be an integer >= 0') end
elseif mode == 'after' or mode == 'before' then
  local score, id = tonumber(ARGV[4]), ARGV[5]
  if score == nil or id == nil or id == '' then return bad_arg('a cursor needs a score and an id') end
  local current = redis.call('ZSCORE', set, id)
  local rank
  if current and tonumber(current) == score then
    rank = rank_of(id)
  else
    -- The cursor's job has moved on: start at its score; for 'after', skip
    -- entries of the same score that sort up to its id.
    rank = count_before(ARGV[4])
    if mode == 'after' then skip_through = {score, id} end
    if mode == 'after' then rank = rank - 1 end
  end
  if mode == 'after' then start = rank + 1 else start = math.max(rank - limit, 0) end
  if mode == 'before' then limit = math.min(limit, rank) end
else
  return bad_arg('mode must be offset, after or before')
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
      local job_key = PREFIX .. 'job:' .. id
      local f = redis.call('HMGET', job_key, 'state', 'attempts', 'payload', 'last_error')
      local exists = (f[1] or f[2] or f[3]) and 1 or redis.call('EXISTS', job_key)
      local payload = f[3] or ''
      reply[#reply + 1] = id
      reply[#reply + 1] = score
      reply[#reply + 1] = f[1] or ''
      reply[#reply + 1] = f[2] or ''
      reply[#reply + 1] = string.sub(payload, 1, head)
      reply[#reply + 1] = #payload
      reply[#reply + 1] = string.sub(f[4] or '', 1, 200)
      reply[#reply + 1] = exists
      taken = taken + 1
    end
  end
end
if position < total then reply[4] = 1 end
return reply
