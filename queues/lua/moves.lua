-- Generated from queues/protocol_moves.py by `python -m queues.protocol_moves`: edit the table there,
-- never this file (a test fails while the two differ). Included by common.lua.

-- MOVE_TARGET[move][to]: the moves a script may emit, and the states each leads to.
local MOVE_TARGET = {
  enqueue = {pending = true},
  claim = {active = true},
  extend = {active = true},
  complete = {done = true},
  fail = {pending = true, failed = true},
  release = {pending = true},
  corrupt = {failed = true},
  retry = {pending = true},
  recover = {pending = true, failed = true},
  promote = {pending = true},
  cancel = {failed = true},
  delete = {[''] = true},
  rerun = {pending = true},
  edit = {pending = true, failed = true},
  restore = {pending = true, failed = true},
  clone = {pending = true},
  purge = {[''] = true},
  pause = {paused = true},
  resume = {[''] = true},
  remove_key = {[''] = true},
}
-- MOVE_CODE[move][to]: the letter of the history entry (section 9 of PROTOCOL.md).
local MOVE_CODE = {
  enqueue = {pending = 'e'},
  claim = {active = 'c'},
  extend = {},
  complete = {done = 'd'},
  fail = {pending = 'f', failed = 'F'},
  release = {pending = 'r'},
  corrupt = {failed = 'k'},
  retry = {pending = 'R'},
  recover = {pending = 'v', failed = 'V'},
  promote = {pending = 'p'},
  cancel = {failed = 'x'},
  delete = {},
  rerun = {pending = 'u'},
  edit = {pending = 'E', failed = 'Y'},
  restore = {pending = 'S', failed = 'Z'},
  clone = {pending = 'l'},
  purge = {},
  pause = {},
  resume = {},
  remove_key = {},
}
-- COUNT_FIELD[move][to]: the field of <prefix>counts the move adds one to.
local COUNT_FIELD = {
  enqueue = {pending = 'enqueue'},
  claim = {active = 'claim'},
  complete = {done = 'complete'},
  fail = {pending = 'fail:pending', failed = 'fail:failed'},
  release = {pending = 'release'},
  corrupt = {failed = 'corrupt'},
  retry = {pending = 'retry'},
  recover = {pending = 'recover:pending', failed = 'recover:failed'},
  promote = {pending = 'promote'},
  cancel = {failed = 'cancel'},
  delete = {[''] = 'delete'},
  rerun = {pending = 'rerun'},
  edit = {pending = 'edit:pending', failed = 'edit:failed'},
  restore = {pending = 'restore:pending', failed = 'restore:failed'},
  clone = {pending = 'clone'},
  purge = {[''] = 'purge'},
  pause = {paused = 'pause'},
  resume = {[''] = 'resume'},
  remove_key = {[''] = 'remove_key'},
}
-- SERIES_FIELD[count field]: the field of the minute and hour hashes it adds one to.
local SERIES_FIELD = {
  enqueue = 'e',
  complete = 'c',
  ['fail:failed'] = 'f',
  ['recover:pending'] = 'r',
  ['recover:failed'] = 'r',
}
-- Every move counter field, as the counts read returns them.
local COUNTED = {
  'enqueue', 'claim', 'complete', 'fail:pending', 'fail:failed', 'release',
  'corrupt', 'retry', 'recover:pending', 'recover:failed', 'promote', 'cancel',
  'delete', 'rerun', 'edit:pending', 'edit:failed', 'restore:pending', 'restore:failed',
  'clone', 'purge', 'pause', 'resume', 'remove_key',
}
