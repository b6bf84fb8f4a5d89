#!lua flags=no-writes
--@include common.lua
--@include why_evidence.lua
-- why_queue (read): the evidence of why a queue is or is not draining, in a
-- fixed number of commands (see why_evidence.lua); queues/why.py decides.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 queue prefix
-- ARGV: (none)
-- Reply: {now_ms (integer), evidence (JSON text: counts, due and lease times,
--         the pause, up to 20 live workers with heartbeat, held, concurrency
--         and last claim refusal, the last expired worker, 6 minutes of
--         arrivals and claims, corrupt and cancelled totals)}
--        {'REFUSED', 'wrongtype', key, type}  a queue key of another type
local err = check_keys(nil)
if err then return err end
local refused = check_types(1, 2, 3, 4)
if refused then return refused end
local now = now_ms()
return {now, cjson.encode(queue_evidence(now))}
