--@include common.lua
-- job (read): a job's hash and its score in each of the four sets, at one instant.
--
-- KEYS: 1 pending, 2 active, 3 done, 4 failed, 5 events, 6 job hash
-- ARGV: 1 id
-- Reply: {now_ms, pending score, active score, done score, failed score
--         ('' where not a member), field1, value1, field2, value2, ...}
--        (no fields: the hash does not exist)
local id = ARGV[1]
local err = check_keys(id)
if err then return err end
local reply = {now_ms()}
for i = 1, 4 do reply[#reply + 1] = redis.call('ZSCORE', KEYS[i], id) or '' end
local fields = redis.call('HGETALL', KEYS[6])
for _, v in ipairs(fields) do reply[#reply + 1] = v end
return reply
