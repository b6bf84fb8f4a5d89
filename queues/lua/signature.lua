#!lua flags=no-writes
--@include common.lua
-- signature (read): the failure signature and group id each given error
-- text gets, exactly as the moves into failed compute them.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: 1.. error texts (at most 100)
-- Reply: {group id 1, signature 1, group id 2, signature 2, ...}
-- Errors: bad keys, more than 100 texts.
local err = check_keys(nil)
if err then return err end
if #ARGV > 100 then return bad_arg('at most 100 texts') end
local reply = {}
for _, text in ipairs(ARGV) do
  local group, sig = group_of(cut_utf8(text, MAX_ERROR_BYTES))
  reply[#reply + 1] = group
  reply[#reply + 1] = sig
end
return reply
