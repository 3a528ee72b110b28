-- SPDX-License-Identifier: Apache-2.0
-- Extend a lease on one master if, and only if, we still own the lock there.
-- Works for every kind: a string key holding our token (mutex) or a hash
-- with our owner field (reentrant, fair).
-- KEYS[1] lock key, KEYS[2] holder description (optional: lengthened with
-- the key when it is ours, see mutex_acquire.lua); ARGV[1] token or owner field, ARGV[2] ttl in ms,
-- ARGV[3] hash kinds: the hold id of the hold being extended (a hold taken
-- by a later request of ours is not this extend's: it may have arrived late,
-- on a connection the client has since dropped; reentrant_acquire.lua)
-- Never shortens: the expiry only moves later (to now + ttl) or stays. A
-- shorter ttl must not cut a hold the client counts on, whether this extend
-- succeeds on a quorum or not (docs/algorithm.md, "Lease rules").
-- KEYS[3] semaphores: the number of permits in use ({R}:permits), with
-- ARGV[4] that number: kept at least as long as the hold (semaphore_acquire.lua)
-- Returns 1 when the key is ours and expires no earlier than now + ttl, 0
-- when the key is gone or someone else's.
local kind = redis.call('TYPE', KEYS[1])['ok']
-- A read-write hold ('r:'/'w:' field) lapses at its own deadline, which only
-- rw_extend.lua moves: lengthening the key here would vouch for a hold that
-- still lapses at its old deadline.
if kind == 'hash' and string.find(ARGV[1], '^[rw]:') then
  return redis.error_reply('WRONGTYPE token names a read-write hold: extend it as one (rw_extend.lua)')
end
local ours = (kind == 'string' and redis.call('GET', KEYS[1]) == ARGV[1])
  or (kind == 'hash' and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1
      and tonumber(redis.call('HGET', KEYS[1], ':hold-id') or '0') <= tonumber(ARGV[3]))
if not ours then
  return 0
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local left = redis.call('PTTL', KEYS[1])
local about = KEYS[2] and redis.call('GET', KEYS[2])
if about and string.sub(about, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then
  redis.call('PEXPIRE', KEYS[2], left)
end
if KEYS[3] then
  local in_use, permits_left = redis.call('GET', KEYS[3]), redis.call('PTTL', KEYS[3])
  if (not in_use or in_use == ARGV[4]) and permits_left ~= -1 and permits_left < left then
    redis.call('SET', KEYS[3], ARGV[4], 'PX', left)
  end
end
return 1
