-- SPDX-License-Identifier: Apache-2.0
-- Shared by the scripts that put a fair waiter in line (fair_acquire.lua, a
-- poll; reentrant_release.lua, a failed poll's clean-up giving back a hold a
-- release handed it): included at build time where a script says
-- `--#include lib/fair_line.lua` (cmake/embed_lua.cmake).

-- Puts `field` in line (or keeps it there) with its score, its drop-out
-- deadline now + `timeout` ms and its `terms` (fair_acquire.lua) in the
-- line's three keys. They expire on their own once nobody has polled for two
-- waiter timeouts, and never sooner than a waiter with a longer timeout
-- needs them: this only lengthens their expiry, to two of its own timeouts,
-- and only once a quarter of that is used up (not three writes at every
-- poll). One PTTL stands for all three: they are written, expired and
-- emptied together (every script removes an entry from all three).
local function stand_in_line(queue, deadlines, terms_key, field, score, now, timeout, terms)
  redis.call('ZADD', queue, score, field)
  redis.call('ZADD', deadlines, now + tonumber(timeout), field)
  redis.call('HSET', terms_key, field, terms)
  local keep = 2 * tonumber(timeout)
  if redis.call('PTTL', queue) < keep * 3 / 4 then
    for _, k in ipairs({queue, deadlines, terms_key}) do redis.call('PEXPIRE', k, keep) end
  end
end
