-- SPDX-License-Identifier: Apache-2.0
-- A campaign that won proclaims its epoch, on one master: only while our
-- token still holds the leader lock here, record '<token> epoch <T>[ <words>]'
-- as the holder description ({R}:holder, which extend lengthens and the
-- release deletes with the hold) and publish the change to the observers.
-- KEYS[1] lock key, KEYS[2] holder description ({R}:holder)
-- ARGV[1] token, ARGV[2] 'epoch <T>[ <words>]', ARGV[3] the observers'
-- channel ({R}:leader), ARGV[4] the message ('<T> <token>')
-- Returns 1 when recorded and published, 0 when the lock is not ours here.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local left = redis.call('PTTL', KEYS[1])
if left <= 0 then
  return 0
end
redis.call('SET', KEYS[2], ARGV[1] .. ' ' .. ARGV[2], 'PX', left)
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
