-- A fair-lock waiter leaves the queue on one master: it gave up, or it won a
-- quorum (granted masters keep it until then, see fair_acquire.lua).
-- KEYS[1] wait queue, KEYS[2] waiter deadlines, KEYS[3] lock key
-- ARGV[1] owner field, ARGV[2] release channel, ARGV[3] '1' to tell the new
-- head when the lock is free here (a waiter that gave up may have been the
-- head, and no release will announce its successor)
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[3]) == 0 then
  local head = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
  if head then
    -- The head's client listens on the channel suffixed with its client id
    -- (the part of the owner field before the first ':').
    redis.call('PUBLISH', ARGV[2] .. ':' .. string.match(head, '^[^:]*'), head)
  end
end
return 1
