-- Release the mutex on one master if, and only if, we still hold it.
-- KEYS[1] lock key; ARGV[1] token, ARGV[2] release channel ({R}:released)
-- Returns 1 when our key was deleted, 0 when it was gone or someone else's.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], 'released')
  return 1
end
return 0
