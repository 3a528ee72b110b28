-- SPDX-License-Identifier: Apache-2.0
-- Shared by the scripts that list a waiter on a wake list (mutex_acquire.lua,
-- semaphore_acquire.lua, and mutex_release.lua for a releaser joining the
-- line): included at build time where a script says
-- `--#include lib/list_waiter.lua` (cmake/embed_lua.cmake).

-- Puts `waiter` on the wake list with `score` (ZADD NX: a waiter keeps its
-- place) and its deadline `now + lapse`, and lets both keys live as long as
-- their latest entry: where less than `lapse` is left, one and a half, so
-- that most listings only read the TTL. Nothing is written where either key
-- holds another type (the user's own data): the waiter is then not listed,
-- and retries on its timer.
local function list_waiter(list, deadlines, waiter, score, now, lapse)
  local added = redis.pcall('ZADD', list, 'NX', score, waiter)
  if type(added) == 'table' then return end
  if type(redis.pcall('ZADD', deadlines, now + lapse, waiter)) == 'table' then
    if added == 1 then redis.call('ZREM', list, waiter) end
    return
  end
  for _, key in ipairs({ list, deadlines }) do
    if redis.call('PTTL', key) < lapse then redis.call('PEXPIRE', key, lapse + math.floor(lapse / 2)) end
  end
end
