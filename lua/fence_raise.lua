-- SPDX-License-Identifier: Apache-2.0
-- Raise round of a fenced acquisition, on one master: only while we still
-- own the lock there (string key with our token, or hash with our field),
-- lift the fence counter to at least the token T the client derived (the max
-- of the counters its quorum returned).
-- KEYS[1] lock key, KEYS[2] fence counter key ({R}:fence)
-- ARGV[1] our token or owner field, ARGV[2] T
-- Returns 1 when the counter is now >= T under our hold, 0 when we do not own
-- the lock on this master (it then must not count toward the quorum).
local kind = redis.call('TYPE', KEYS[1])['ok']
local ours = (kind == 'string' and redis.call('GET', KEYS[1]) == ARGV[1])
  or (kind == 'hash' and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1)
if not ours then
  return 0
end
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
local target = tonumber(ARGV[2])
if current < target then
  redis.call('SET', KEYS[2], ARGV[2])
end
return 1
