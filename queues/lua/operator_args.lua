-- The arguments every operator move starts with: ARGV[1] id, ARGV[2] the
-- state the operator saw, ARGV[3] the attempts they saw ('' = any).
local id, expect_state, expect_attempts = ARGV[1], ARGV[2], ARGV[3]
do
  local err = check_keys(id)
  if err then return err end
end
if expect_state == nil or expect_state == '' then return bad_arg('expected state is required') end
if expect_attempts == nil then return bad_arg('expected attempts is required (may be empty)') end
