-- SPDX-License-Identifier: Apache-2.0
-- Acquire several names at once on one master: every one of them, or none.
-- ARGV[1] token (one per attempt, the same for every name), ARGV[2] ttl in
-- ms, ARGV[3] '1' to also draw each name's fence counter, ARGV[4] n, the
-- number of names, ARGV[5] who is acquiring, in words ('' or absent: none)
-- KEYS[1..n] the lock keys (sorted by the client), then their fence
-- counters (when fenced) and their holder descriptions (when described),
-- in the same order.
-- Returns 'OK' when all were free and are now ours, or (fenced) the array
-- of their new counters; nil when any of them is held (nothing is taken).
-- A key of another type is someone else's data: reported, never
-- overwritten, and nothing is taken.
local n = tonumber(ARGV[4])
local held = false
for i = 1, n do
  local kind = redis.call('TYPE', KEYS[i])['ok']
  if kind ~= 'none' then
    if kind ~= 'string' then
      return redis.error_reply('WRONGTYPE lock key holds a ' .. kind .. ', not a lock token')
    end
    held = true
  end
end
if held then
  return false
end
local fenced = ARGV[3] == '1'
local about = ARGV[5] or ''
local holders = fenced and 2 * n or n
local counters = {}
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  if about ~= '' then
    redis.call('SET', KEYS[holders + i], ARGV[1] .. ' ' .. about, 'PX', ARGV[2])
  end
  if fenced then
    counters[i] = redis.call('INCR', KEYS[n + i])
  end
end
if fenced then
  return counters
end
return redis.status_reply('OK')
