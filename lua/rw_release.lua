-- SPDX-License-Identifier: Apache-2.0
-- Release one hold of a read-write lock on one master (rw_acquire.lua):
-- delete our field; the key goes with its last hold. A writer that gives up
-- waiting also takes its mark down.
-- KEYS[1] lock key, KEYS[2] the waiting writer's mark ({R}:writer)
-- ARGV[1] token (the hold's field), ARGV[2] the writer's waiter id ('' for none)
-- ARGV[3] the release channel ({R}:released), ARGV[4] this release's id (''
-- for none: the clean-up of an abandoned attempt wakes no one)
-- Wakes the waiters when the release may let one in: a writer's release
-- (readers may wait), or the last hold's (a writer may wait). A reader's
-- release with other readers left frees nothing anyone waits for.
-- Returns 1 when our hold was there (and live), 0 otherwise.
if ARGV[2] ~= '' and redis.call('GET', KEYS[2]) == ARGV[2] then
  redis.call('DEL', KEYS[2])
end
local deadline = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local was_ours = redis.call('HDEL', KEYS[1], ARGV[1]) == 1
local empty = redis.call('HLEN', KEYS[1]) == 0
if empty then
  redis.call('DEL', KEYS[1])
end
if was_ours and (ARGV[4] or '') ~= '' and (empty or string.sub(ARGV[1], 1, 2) == 'w:') then
  redis.call('PUBLISH', ARGV[3], ARGV[4])
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if deadline > now then
  return 1
end
return 0
