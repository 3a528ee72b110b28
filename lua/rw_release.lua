-- SPDX-License-Identifier: Apache-2.0
-- Release one hold of a read-write lock on one master (rw_acquire.lua):
-- delete our field, and drop every lapsed one with it (a reader that died
-- holding; rw_acquire.lua drops them too, but a release that left one behind
-- would neither delete the key nor wake the writer waiting for it). The key
-- goes when no live hold is left, and otherwise lives no longer than the
-- latest deadline left (a reader that extended to a minute and released
-- must not leave a hash of dead readers for that minute, which every other
-- kind would find in its way). A writer that gives up waiting also takes
-- its mark down.
-- KEYS[1] lock key, KEYS[2] the waiting writer's mark ({R}:writer)
-- ARGV[1] token (the hold's field), ARGV[2] the writer's waiter id ('' for none)
-- ARGV[3] the release channel ({R}:released), ARGV[4] this release's id (''
-- for none: the clean-up of an abandoned attempt wakes no one)
-- Wakes the waiters when the release freed something one of them waits
-- for: a writer's hold (readers may wait), or the last live hold (a writer
-- may wait). A reader's release with other readers left frees nothing
-- anyone waits for.
-- Returns 1 when our hold was there and live, 0 otherwise. A hash that is
-- not a read-write lock's is someone else's (or another kind's): reported,
-- nothing touched.
if ARGV[2] ~= '' and redis.call('GET', KEYS[2]) == ARGV[2] then
  redis.call('DEL', KEYS[2])
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local prefix = string.sub(fields[i], 1, 2)
  if (prefix ~= 'r:' and prefix ~= 'w:') or not tonumber(fields[i + 1]) then
    return redis.error_reply('WRONGTYPE lock key holds a hash that is not a read-write lock')
  end
end
local ours, freed, live, latest = false, false, 0, now
for i = 1, #fields, 2 do
  local deadline = tonumber(fields[i + 1])
  if fields[i] == ARGV[1] or deadline <= now then
    redis.call('HDEL', KEYS[1], fields[i])
    if fields[i] == ARGV[1] then ours = deadline > now end
    freed = freed or deadline > now
  else
    live = live + 1
    if deadline > latest then latest = deadline end
  end
end
if live == 0 and #fields > 0 then
  redis.call('DEL', KEYS[1])
  freed = true
elseif live > 0 and redis.call('PTTL', KEYS[1]) > latest - now then
  -- Only ever shorter, and never shorter than a live hold's deadline.
  redis.call('PEXPIRE', KEYS[1], latest - now)
end
local writer = string.sub(ARGV[1], 1, 2) == 'w:'
if freed and (ARGV[4] or '') ~= '' and (live == 0 or (ours and writer)) then
  redis.call('PUBLISH', ARGV[3], ARGV[4])
end
return ours and 1 or 0
