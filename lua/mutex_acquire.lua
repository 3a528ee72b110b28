-- SPDX-License-Identifier: Apache-2.0
-- Acquire the plain RedLock mutex on one master.
-- KEYS[1] lock key (holds the holder's random token)
-- KEYS[2] fence counter key ({R}:fence)
-- KEYS[3] wake list ({R}:wake: waiters by the time they began, a sorted set)
-- KEYS[4] wake list deadlines ({R}:wake:until: server time each entry lapses)
-- KEYS[5] holder description ({R}:holder), with ARGV[7]
-- ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] '1' to also draw a fencing counter,
-- 'line' to only join the wake list, never taking the lock, whatever else
-- is given (a client whose release of this lock has just woken a waiter,
-- asking for it again: it lets that waiter have it rather than race it,
-- docs/algorithm.md section 10)
-- ARGV[4] waiter id ('' or absent: not a waiter), ARGV[5] its score (when it
-- began, the same on every master), ARGV[6] how long its entry lives (ms)
-- ARGV[7] who is acquiring, in words ('' or absent: nothing to write); kept
-- as '<token> <description>' for as long as the key (status.lua)
-- Returns: 'OK' (status) when acquired unfenced, the new counter value when
-- acquired fenced, nil when another holder has the key (and always when
-- only joining the line). A key of another type
-- is someone else's data: it is reported, never overwritten.
-- The wake list only decides whom a release wakes (mutex_release.lua): it
-- never decides who gets the lock, which is SET NX alone.
--#include lib/list_waiter.lua
local waiter = ARGV[4] or ''
local takes = ARGV[3] ~= 'line'
if takes and redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if waiter ~= '' then
    -- Its deadline goes with it (a winner that never waited: one call).
    -- pcall: a key of another type there is the user's, not a list.
    if redis.pcall('ZREM', KEYS[3], waiter) == 1 then redis.pcall('ZREM', KEYS[4], waiter) end
  end
  if (ARGV[7] or '') ~= '' then
    redis.call('SET', KEYS[5], ARGV[1] .. ' ' .. ARGV[7], 'PX', ARGV[2])
  end
  if ARGV[3] == '1' then
    return redis.call('INCR', KEYS[2])
  end
  return redis.status_reply('OK')
end
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'string' and kind ~= 'none' then
  return redis.error_reply('WRONGTYPE lock key holds a ' .. kind .. ', not a lock token')
end
if waiter ~= '' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  list_waiter(KEYS[3], KEYS[4], waiter, ARGV[5], now, tonumber(ARGV[6]))
end
return false
