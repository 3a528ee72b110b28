-- SPDX-License-Identifier: Apache-2.0
-- Delete, on one master, every given key that holds our token, with its
-- holder description when that is ours. Used where a hold or an attempt
-- spans several keys: a multi-name lock's release, and the clean-up of a
-- semaphore attempt (every slot but the one it keeps). The token is new per
-- attempt, so a key holding it is ours, from that attempt.
-- ARGV[1] token, ARGV[2] n, ARGV[3] 'wake' when this is a holder's release
-- (a set of names), '' for a clean-up: an abandoned attempt freed nothing
-- anyone was refused for, and a semaphore's stray slots no permit anyone
-- counted.
-- KEYS[1..n] the keys; with 'wake', KEYS[n+1..3n] each key's wake list and
-- its deadlines, in pairs, and ARGV[4..n+3] each key's release channel; then,
-- when the hold wrote descriptions, their holder keys in the same order.
-- With 'wake', each name this call frees wakes its first live mutex waiter,
-- as mutex_release.lua does for one name: a waiter on one name of a set
-- listens only on that name's list.
-- Returns 1 when every key was ours (a multi-name hold still held here),
-- else 0 (the keys that were ours are deleted all the same).
--#include lib/wake_first_waiter.lua
local n = tonumber(ARGV[2])
local wake = ARGV[3] == 'wake'
local holders = wake and 3 * n or n
local cleared = 0
for i = 1, n do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    cleared = cleared + 1
    local about = KEYS[holders + i] and redis.call('GET', KEYS[holders + i])
    if about and string.sub(about, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then redis.call('DEL', KEYS[holders + i]) end
    if wake then
      local head = first_live_waiter(KEYS[n + 2 * i - 1], KEYS[n + 2 * i])
      if head then name_waiter(ARGV[3 + i], head, ARGV[1]) end
    end
  end
end
return cleared == n and 1 or 0
