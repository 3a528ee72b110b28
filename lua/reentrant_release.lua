-- Release one level of a reentrant or fair lock on one master.
-- KEYS[1] lock key (hash), KEYS[2] wait queue, KEYS[3] waiter deadlines
-- (fair locks; absent otherwise)
-- ARGV[1] owner field, ARGV[2] release channel, ARGV[3] '1' for the last level,
-- ARGV[4] '1' for a holder's release: leave the queue and wake the next
-- waiter; '0' when cleaning up an abandoned attempt (keep our place in line,
-- wake nobody); ARGV[5] this release's id (the message, so that a waiter
-- acts once on the copies every master sends)
-- The client's own hold count decides which level is the last: counts on the
-- masters may differ after failed re-entries, so the last release deletes
-- whatever count is left, and earlier ones never go below 1.
-- Returns 1 when our hold was found here, 0 otherwise (nothing changed).
local last_by_holder = ARGV[3] == '1' and ARGV[4] == '1'
if last_by_holder then
  -- A holder leaves the fair queue on every master, also where it does not
  -- hold the lock (its leave at grant time may not have reached this one):
  -- a stale entry would let its next acquisition jump the line here.
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if ARGV[3] == '1' then
  redis.call('DEL', KEYS[1])
  if last_by_holder then
    local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
    if head then
      -- Fair: wake only the head, on its client's own channel (suffixed with
      -- the client id, the part of the owner field before the first ':').
      redis.call('PUBLISH', ARGV[2] .. ':' .. string.match(head, '^[^:]*'), head)
    else
      redis.call('PUBLISH', ARGV[2], ARGV[5])
    end
  end
  return 1
end
if tonumber(redis.call('HGET', KEYS[1], ARGV[1])) > 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
end
return 1
