-- SPDX-License-Identifier: Apache-2.0
-- Acquire a read-write lock on one master, in read (shared) or write
-- (exclusive) mode. The lock key is a hash: one field per hold, 'r:<hex>' for
-- a reader and 'w:<hex>' for the writer (the attempt's token, new per
-- attempt), whose value is the hold's deadline in server time (ms). Each
-- hold lapses at its own deadline, as a key at its TTL would: every script
-- first drops the lapsed ones, and the key's expiry is the latest deadline.
-- KEYS[1] lock key, KEYS[2] fence counter ({R}:fence), KEYS[3] the waiting
-- writer's mark ({R}:writer: '<waiter id>', expiring unless it retries)
-- ARGV[1] token (the field), ARGV[2] ttl in ms, ARGV[3] '1' to also draw the
-- fence counter, ARGV[4] 'read' or 'write', ARGV[5] the writer's waiter id
-- ('' for none: a writer that will not retry leaves no mark), ARGV[6] how
-- long the mark lives without a retry (ms)
-- A reader is refused while a writer holds, and while a writer waits (so a
-- stream of readers cannot starve it; the mark lapses if that writer goes
-- away). A writer is refused while anyone holds, or another writer's mark
-- is up.
-- Returns 'OK' (status), or the new fence counter when fenced; nil when
-- refused. A key of another type is someone else's data: reported, never
-- overwritten.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE lock key holds a ' .. kind .. ', not a read-write lock')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local readers, writers = 0, 0
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local prefix = string.sub(fields[i], 1, 2)
  local deadline = tonumber(fields[i + 1])
  if (prefix ~= 'r:' and prefix ~= 'w:') or not deadline then
    return redis.error_reply('WRONGTYPE lock key holds a hash that is not a read-write lock')
  end
  if deadline <= now then
    redis.call('HDEL', KEYS[1], fields[i])
  elseif prefix == 'r:' then
    readers = readers + 1
  else
    writers = writers + 1
  end
end
local mark = redis.call('GET', KEYS[3])
-- Our marks always expire: one that never does is someone else's data.
if mark and redis.call('PTTL', KEYS[3]) < 0 then
  return redis.error_reply('WRONGTYPE waiting writer key holds a string without expiry, not a writer mark')
end
local ttl = tonumber(ARGV[2])
local waiter = ARGV[5]
if ARGV[4] == 'read' then
  if writers > 0 or mark then
    return false
  end
else
  if writers > 0 or readers > 0 or (mark and mark ~= waiter) then
    if waiter ~= '' and (not mark or mark == waiter) then
      redis.call('SET', KEYS[3], waiter, 'PX', ARGV[6])
    end
    return false
  end
  if mark then
    redis.call('DEL', KEYS[3])
  end
end
redis.call('HSET', KEYS[1], ARGV[1], now + ttl)
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
if ARGV[3] == '1' then
  return redis.call('INCR', KEYS[2])
end
return redis.status_reply('OK')
