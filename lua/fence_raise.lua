-- Raise round of a fenced acquisition, on one master: only while we still
-- hold the lock there, lift the fence counter to at least the token T the
-- client derived (the max of the counters its quorum returned).
-- KEYS[1] lock key, KEYS[2] fence counter key ({R}:fence)
-- ARGV[1] our token, ARGV[2] T
-- Returns 1 when the counter is now >= T under our hold, 0 when we do not hold
-- the lock on this master (it then must not count toward the quorum).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
local target = tonumber(ARGV[2])
if current < target then
  redis.call('SET', KEYS[2], ARGV[2])
end
return 1
