-- A fair-lock waiter that gives up leaves the queue on one master.
-- KEYS[1] wait queue, KEYS[2] waiter deadlines; ARGV[1] owner field
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
