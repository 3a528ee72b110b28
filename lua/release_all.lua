-- SPDX-License-Identifier: Apache-2.0
-- Delete, on one master, every given key that holds our token, with its
-- holder description when that is ours. Used where a hold or an attempt
-- spans several keys: a multi-name lock's release, and the clean-up of a
-- semaphore attempt (every slot but the one it keeps). The token is new per
-- attempt, so a key holding it is ours, from that attempt.
-- KEYS[1..n] the keys, then, when the hold wrote descriptions, their holder
-- keys in the same order.
-- ARGV[1] token, ARGV[2] n
-- Publishes nothing: no mutex waiter listens for these keys' releases, and
-- a semaphore's stray slots freed no permit anyone counted.
-- Returns 1 when every key was ours (a multi-name hold still held here),
-- else 0 (the keys that were ours are deleted all the same).
local n = tonumber(ARGV[2])
local cleared = 0
for i = 1, n do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    cleared = cleared + 1
    local about = KEYS[n + i] and redis.call('GET', KEYS[n + i])
    if about and string.sub(about, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then redis.call('DEL', KEYS[n + i]) end
  end
end
return cleared == n and 1 or 0
