-- SPDX-License-Identifier: Apache-2.0
-- Shared by the scripts whose release frees a string key that mutex waiters
-- wait for (mutex_release.lua, release_all.lua): included at build time
-- where a script says `--#include lib/wake_first_waiter.lua`
-- (cmake/embed_lua.cmake), so the logic is written once.

-- The first live waiter on a wake list ({R}:wake, scored by when each
-- waiter began) whose deadlines are in `deadlines` ({R}:wake:until), and
-- the server time in ms (nil, nil when the list is empty). Most releases
-- have no one waiting (one ZRANGE then), and the first entry is usually live
-- (a ZSCORE against the clock): only a lapsed first entry costs the sweep of
-- every lapsed one.
-- A key of another type at either name is the user's own: read through
-- pcall, it makes the list empty (the list only decides whom a release
-- wakes), and with a head returned both keys are sorted sets, safe to write.
local function first_live_waiter(list, deadlines)
  local range = redis.pcall('ZRANGE', list, 0, 0)
  if range.err then return nil, nil end
  local head = range[1]
  if not head then return nil, nil end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local deadline = redis.pcall('ZSCORE', deadlines, head)
  if type(deadline) == 'table' then return nil, nil end  -- an error reply
  if tonumber(deadline or '0') <= now then
    for _, lapsed in ipairs(redis.call('ZRANGEBYSCORE', deadlines, '-inf', now)) do
      redis.call('ZREM', list, lapsed)
      redis.call('ZREM', deadlines, lapsed)
    end
    redis.call('ZREM', list, head)  -- lapsed, or without a deadline
    head = redis.call('ZRANGE', list, 0, 0)[1]
  end
  return head, now
end

-- Wakes waiter `head` ('<client id>:<n>') on its client's channel
-- (`channel` .. ':' .. client id) with '=<head> <token>': the token of the
-- release tells one release's copies (one per master) from the next one's.
local function name_waiter(channel, head, token)
  local client = string.match(head, '^(.*):[^:]*$')
  redis.call('PUBLISH', channel .. ':' .. client, '=' .. head .. ' ' .. token)
end
