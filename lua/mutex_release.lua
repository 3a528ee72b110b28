-- SPDX-License-Identifier: Apache-2.0
-- Release the mutex on one master if, and only if, we still hold it.
-- KEYS[1] lock key; ARGV[1] token, ARGV[2] release channel ({R}:released),
-- ARGV[3] '1' to wake waiters (a real release), '0' when cleaning up an
-- abandoned attempt (waking then would only make contenders spin).
-- The message is the released token: it tells the copies every master sends
-- of one release apart from the next release.
-- Returns 1 when our key was deleted, 0 when it was gone or someone else's.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[3] == '1' then
    redis.call('PUBLISH', ARGV[2], ARGV[1])
  end
  return 1
end
return 0
