-- SPDX-License-Identifier: Apache-2.0
-- Extend one hold of a read-write lock on one master (rw_acquire.lua): its
-- deadline moves to now + ttl if that is later (never earlier), and the
-- key lives at least that long.
-- KEYS[1] lock key; ARGV[1] token (the hold's field), ARGV[2] ttl in ms
-- Returns 1 when our hold was live and now lasts at least ttl, else 0 (a
-- lapsed hold is not revived: someone else may have held the lock since).
local deadline = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if deadline <= now then
  return 0
end
local ttl = tonumber(ARGV[2])
if deadline < now + ttl then
  redis.call('HSET', KEYS[1], ARGV[1], now + ttl)
end
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
