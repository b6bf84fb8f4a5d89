-- The arguments every lease holder's move starts with: ARGV[1] id,
-- ARGV[2] attempts and ARGV[3] claim_id (together, the fencing token).
local id, claim_id = ARGV[1], ARGV[3] or ''
local token = to_int(ARGV[2])
do
  local err = check_keys(id)
  if err then return err end
end
if token == nil or token < 1 then return bad_arg('attempts must be an integer >= 1') end
