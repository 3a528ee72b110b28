-- SPDX-License-Identifier: Apache-2.0
-- A fair-lock waiter that won a quorum leaves the queue on one master
-- (granted masters keep it in line until then, see fair_acquire.lua; a
-- master that handed it the lock took it out of line already, and this is
-- then sent only for the ttl and the description, see src/locks/hold.cpp). A
-- waiter that gives up leaves through reentrant_release.lua instead, which
-- also passes the lock on.
-- KEYS[1] wait queue, KEYS[2] waiter deadlines, KEYS[3] hand-over terms,
-- KEYS[4] lock key, KEYS[5] holder description
-- ARGV[1] owner field, ARGV[2] ttl ms to extend our hold to where we hold the
-- lock ('' to leave it): a lock handed over by a release lives only until the
-- head's queue deadline, so that a head that died in line costs no more than
-- its queue timeout; the winner confirms it here.
-- ARGV[3] the hold id (the latest request id of the acquisition that won):
-- a place in line or a hold from a later request of ours is left alone (this
-- may arrive late, see reentrant_release.lua).
-- ARGV[4] who holds it, in words ('' or absent: nothing to write;
-- fair_acquire.lua), written where we hold the lock
-- Returns 1 when our hold was found (and extended or described) here, else 0.
local hold_id = tonumber(ARGV[3])
local terms = redis.call('HGET', KEYS[3], ARGV[1])
if terms and tonumber(string.match(terms, '^%d+')) > hold_id then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
-- The hold's own work, where it is ours: the ttl (a hold handed over for
-- its queue deadline only), and the description, whichever were given (a
-- hold handed over for its whole ttl still needs its description: the
-- releaser's script could not write it).
local about = ARGV[4] or ''
if (ARGV[2] ~= '' or about ~= '') and redis.call('HEXISTS', KEYS[4], ARGV[1]) == 1
    and tonumber(redis.call('HGET', KEYS[4], ':hold-id') or '0') <= hold_id then
  -- Never shorter than it is (docs/algorithm.md, "Lease rules").
  if ARGV[2] ~= '' and redis.call('PTTL', KEYS[4]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[4], ARGV[2])
  end
  if about ~= '' then
    redis.call('SET', KEYS[5], ARGV[1] .. ' ' .. about, 'PX', redis.call('PTTL', KEYS[4]))
  end
  return 1
end
return 0
