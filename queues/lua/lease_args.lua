-- The arguments every lease holder's move starts with: ARGV[1] id,
-- ARGV[2] attempts and ARGV[3] claim_id (together, the fencing token).
local id, claim_id = ARGV[1], ARGV[3] or ''
local token
do
  local err = check_keys(id)
  if err then return err end
  local bad
  token, bad = int_arg(ARGV[2], 'attempts', 1, MAX_INT)
  if bad then return bad end
end
