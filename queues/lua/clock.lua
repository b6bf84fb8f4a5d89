#!lua flags=no-writes
--@include common.lua
-- clock (read): the time of the server that holds the queue, in ms.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- Reply: now_ms
local err = check_keys(nil)
if err then return err end
return now_ms()
