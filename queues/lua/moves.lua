-- Generated from queues/protocol_moves.py by `python -m queues.protocol_moves`: edit the table there,
-- never this file (a test fails while the two differ). Included by common.lua.

-- move_row(move, to): for a move the table lets lead to `to`, the letter of its history entry
-- (section 9 of PROTOCOL.md), the field of <prefix>counts it adds one to and the field of the minute
-- and hour hashes it adds one to, each '' when it has none; nil when the move does not lead there.
local function move_row(move, to)
  if move == 'enqueue' and to == 'pending' then return 'e', 'enqueue', 'e' end
  if move == 'claim' and to == 'active' then return 'c', 'claim', '' end
  if move == 'extend' and to == 'active' then return '', '', '' end
  if move == 'complete' and to == 'done' then return 'd', 'complete', 'c' end
  if move == 'fail' and to == 'pending' then return 'f', 'fail:pending', '' end
  if move == 'fail' and to == 'failed' then return 'F', 'fail:failed', 'f' end
  if move == 'release' and to == 'pending' then return 'r', 'release', '' end
  if move == 'corrupt' and to == 'failed' then return 'k', 'corrupt', '' end
  if move == 'retry' and to == 'pending' then return 'R', 'retry', '' end
  if move == 'recover' and to == 'pending' then return 'v', 'recover:pending', 'r' end
  if move == 'recover' and to == 'failed' then return 'V', 'recover:failed', 'r' end
  if move == 'promote' and to == 'pending' then return 'p', 'promote', '' end
  if move == 'cancel' and to == 'failed' then return 'x', 'cancel', '' end
  if move == 'delete' and to == '' then return '', 'delete', '' end
  if move == 'rerun' and to == 'pending' then return 'u', 'rerun', '' end
  if move == 'edit' and to == 'pending' then return 'E', 'edit:pending', '' end
  if move == 'edit' and to == 'failed' then return 'Y', 'edit:failed', '' end
  if move == 'restore' and to == 'pending' then return 'S', 'restore:pending', '' end
  if move == 'restore' and to == 'failed' then return 'Z', 'restore:failed', '' end
  if move == 'clone' and to == 'pending' then return 'l', 'clone', '' end
  if move == 'purge' and to == '' then return '', 'purge', '' end
  if move == 'pause' and to == 'paused' then return '', 'pause', '' end
  if move == 'resume' and to == '' then return '', 'resume', '' end
  if move == 'remove_key' and to == '' then return '', 'remove_key', '' end
  return nil
end
-- Whether the table knows the move.
local function move_known(move)
  return move == 'enqueue' or move == 'claim' or move == 'extend' or move == 'complete' or
    move == 'fail' or move == 'release' or move == 'corrupt' or move == 'retry' or
    move == 'recover' or move == 'promote' or move == 'cancel' or move == 'delete' or
    move == 'rerun' or move == 'edit' or move == 'restore' or move == 'clone' or
    move == 'purge' or move == 'pause' or move == 'resume' or move == 'remove_key'
end
-- Every move counter field, as the counts read returns them.
local function counted_fields()
  return {
    'enqueue', 'claim', 'complete', 'fail:pending', 'fail:failed', 'release',
    'corrupt', 'retry', 'recover:pending', 'recover:failed', 'promote', 'cancel',
    'delete', 'rerun', 'edit:pending', 'edit:failed', 'restore:pending', 'restore:failed',
    'clone', 'purge', 'pause', 'resume', 'remove_key',
  }
end
