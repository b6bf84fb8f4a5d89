#!lua
--@include common.lua
-- admit_order: admit an exchange order as an ordinary pending job, at most once
-- per client order id and per order id. The script is the serialization: no
-- lock is taken, because no other command interleaves with it.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events,
--       6 job hash (prefix .. 'job:' .. order_id),
--       7 client order id index (prefix .. 'client_ids'; a hash client_order_id -> order_id)
-- ARGV: 1 command ('place'), 2 command version ('1'),
--       3 order_id ('ORD-' followed by 26 Crockford base32 characters, a ULID),
--       4 client_order_id (1..64 characters of A-Z a-z 0-9 . _ : -),
--       5 order (the job's payload: a JSON object whose "command", "version",
--         "order_id" and "client_order_id" equal ARGV 1..4),
--       6 max_attempts (1..1000000), 7 actor
-- Reply: {'ADMITTED', order_id, created_ms}
--        {'DUPLICATE', existing_order_id, 'client_order_id'}  the client order id was
--            admitted before (maybe under another order id); nothing was written
--        {'DUPLICATE', order_id, 'order_id'}  the order id exists; nothing was written
--        {'REFUSED', 'wrongtype', key, type}  a key it would write holds another type;
--            nothing was written
-- Errors (nothing written): bad keys, unknown command or version, malformed
-- order_id or client_order_id, an order that is not such a JSON object, bad max_attempts.
-- Writes, in order: the job hash (state pending, attempts 0, payload, max_attempts,
-- created_at, client_order_id, preview when the order is longer than 256 bytes,
-- history), the index entry, the pending entry (due now) and an 'enqueue' event.
local command, version, order_id, client_order_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local order, actor = ARGV[5], ARGV[7] or ''

local err = check_keys(order_id)
if err then return err end
if KEYS[7] ~= PREFIX .. 'client_ids' then return bad_arg('KEYS[7] must be ' .. PREFIX .. 'client_ids') end
if command ~= 'place' then return bad_arg('unknown command ' .. tostring(command) .. ' (known: place)') end
if version ~= '1' then return bad_arg('unknown version ' .. tostring(version) .. ' of place (known: 1)') end
if #order_id ~= 30 or not string.match(order_id, '^ORD%-[0-9A-HJKMNP-TV-Z]+$') then
  return bad_arg('order_id must be ORD- followed by 26 Crockford base32 characters')
end
if client_order_id == nil or #client_order_id < 1 or #client_order_id > 64
    or not string.match(client_order_id, '^[%w%._:%-]+$') then
  return bad_arg('client_order_id must be 1..64 characters of A-Z a-z 0-9 . _ : -')
end
local max_attempts, bad = int_arg(ARGV[6], 'max_attempts', 1, MAX_TRIES)
if bad then return bad end
local ok, decoded = pcall(cjson.decode, order or '')
if not ok or type(decoded) ~= 'table' then return bad_arg('order must be a JSON object') end
if decoded.command ~= command or tostring(decoded.version) ~= version
    or decoded.order_id ~= order_id or decoded.client_order_id ~= client_order_id then
  return bad_arg('order must carry the same command, version, order_id and client_order_id as ARGV')
end

local expected = {{KEYS[1], 'zset'}, {KEYS[5], 'stream'}, {KEYS[6], 'hash'}, {KEYS[7], 'hash'}}
for _, pair in ipairs(expected) do
  local actual = redis.call('TYPE', pair[1]).ok
  if actual ~= 'none' and actual ~= pair[2] then return {'REFUSED', 'wrongtype', pair[1], actual} end
end

local existing = redis.call('HGET', KEYS[7], client_order_id)
if existing then return {'DUPLICATE', existing, 'client_order_id'} end
if redis.call('EXISTS', KEYS[6]) == 1 then return {'DUPLICATE', order_id, 'order_id'} end

local now = now_ms()
redis.call('HSET', KEYS[6], 'state', 'pending', 'attempts', 0, 'payload', order,
  'max_attempts', max_attempts, 'created_at', now, 'client_order_id', client_order_id)
local preview = preview_of(order)
if preview then redis.call('HSET', KEYS[6], 'preview', preview) end
redis.call('HSET', KEYS[7], client_order_id, order_id)
redis.call('ZADD', KEYS[1], now, order_id)
emit(KEYS[5], 'enqueue', order_id, '', 'pending', 0, actor, now, KEYS[6])
return {'ADMITTED', order_id, tostring(now)}
