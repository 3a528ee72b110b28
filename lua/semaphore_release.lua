-- SPDX-License-Identifier: Apache-2.0
-- Clean up a semaphore attempt on one master: delete every given slot that
-- holds our token (the attempt's token is new, so a slot with it is ours,
-- from this attempt), with its holder description when it is ours.
-- KEYS[1..n] the slots to clear (every slot but the one we keep), then,
-- when the attempt wrote descriptions, their holder keys in the same order.
-- ARGV[1] token, ARGV[2] n
-- Publishes nothing: only a holder's release frees a permit someone waited
-- for (mutex_release.lua, on the kept slot).
-- Returns how many slots were ours.
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
return cleared
