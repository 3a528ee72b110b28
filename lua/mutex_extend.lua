-- Extend the mutex's lease on one master if we still hold it.
-- KEYS[1] lock key; ARGV[1] token, ARGV[2] new ttl in ms
-- Returns 1 when extended, 0 when the key was gone or someone else's.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
