#!lua flags=no-writes
--@include common.lua
-- history (read): a job's own history field, at most 16384 bytes of it
-- (the moves never write more than 4096), so its cost is O(its own length)
-- whatever the queue's event stream holds.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id
-- Reply: {now_ms, key type, history length, history ('' when longer than
--         16384 bytes or absent), last_error ('' when longer than 8192 bytes
--         or absent): the error of the newest fail entry that does not carry
--         its own (PROTOCOL.md, section 9)}
local id = ARGV[1]
local err = check_keys(id)
if err then return err end
local kind = redis.call('TYPE', KEYS[6]).ok
if kind ~= 'hash' then return {now_ms(), kind, 0, '', ''} end
local length = redis.call('HSTRLEN', KEYS[6], 'history')
local text, last_error = '', ''
if length <= 16384 then text = redis.call('HGET', KEYS[6], 'history') or '' end
if redis.call('HSTRLEN', KEYS[6], 'last_error') <= 2 * MAX_ERROR_BYTES then
  last_error = redis.call('HGET', KEYS[6], 'last_error') or ''
end
return {now_ms(), kind, length, text, last_error}
