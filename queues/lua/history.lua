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
--         its own (PROTOCOL.md, section 9), then per release number a claim names:
--         number, label (from PREFIX .. 'releases'; at most 64)}
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
-- The labels of the releases its claims name by number (section 9), from PREFIX .. 'releases'.
local reply, wanted, seen = {now_ms(), kind, length, text, last_error}, {}, {}
for n in string.gmatch('\n' .. text, '\nc[^\t\n]*\t[^\t\n]*\t(%d+)') do
  if not seen[n] and #wanted < 64 then seen[n] = true; wanted[#wanted + 1] = n end
end
if #wanted > 0 then
  local fields = {}
  for i, n in ipairs(wanted) do fields[i] = 'N:' .. n end
  local labels = redis.pcall('HMGET', PREFIX .. 'releases', unpack(fields))
  if type(labels) == 'table' and not labels.err then
    for i, n in ipairs(wanted) do
      if labels[i] then reply[#reply + 1] = n; reply[#reply + 1] = labels[i] end
    end
  end
end
return reply
