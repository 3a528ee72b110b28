-- SPDX-License-Identifier: Apache-2.0
-- Extend a multi-name lock on one master: every key that holds our token is
-- lengthened to at least now + ttl (never shortened, as extend.lua), with
-- its holder description when that is ours.
-- KEYS[1..n] the lock keys, then, when the hold wrote descriptions, their
-- holder keys in the same order. ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] n
-- Returns 1 when every key was ours (the lock still holds here), else 0.
local n = tonumber(ARGV[3])
local ttl = tonumber(ARGV[2])
local all = 1
for i = 1, n do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
    local about = KEYS[n + i] and redis.call('GET', KEYS[n + i])
    if about and string.sub(about, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then
      redis.call('PEXPIRE', KEYS[n + i], redis.call('PTTL', KEYS[i]))
    end
  else
    all = 0
  end
end
return all
