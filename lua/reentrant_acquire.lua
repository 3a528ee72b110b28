-- SPDX-License-Identifier: Apache-2.0
-- Acquire or re-enter a reentrant lock on one master (layout compatible with
-- Redisson's hash lock: field '<client id>:<owner id>', value = hold count).
-- One more field, ':hold-id', names the request that took the hold here: the
-- owner field is the same at every acquisition, so a clean-up or release that
-- arrives late (on a connection the client has since dropped) must be able to
-- tell our older holds from the one we hold now (reentrant_release.lua).
-- KEYS[1] lock key (hash), KEYS[2] fence counter key, KEYS[3] holder
-- description (written on a first acquisition with ARGV[6], see
-- mutex_acquire.lua)
-- ARGV[1] owner field, ARGV[2] ttl ms, ARGV[3] '1' to draw a fence counter,
-- ARGV[4] 'first' (the client holds no level yet) or 'reenter',
-- ARGV[5] hold id: this request's id ('first'; it grows with every request of
-- the client) or the id of the hold being re-entered ('reenter'),
-- ARGV[6] who is acquiring, in words ('' or absent: nothing to write)
-- Returns 'OK' or the fence counter when granted, nil when someone else
-- holds it (or, on 'reenter', when we no longer hold it here), and nil when
-- a later request of ours already ran here (this one arrived late).
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE lock key holds a ' .. kind .. ', not a reentrant lock')
end
-- Expiry only ever moves later: a re-entry or a new acquisition with a
-- shorter ttl must not cut short a hold the client still counts on.
local function lengthen(key, ttl)
  if redis.call('PTTL', key) < tonumber(ttl) then redis.call('PEXPIRE', key, ttl) end
end
local ours = kind == 'hash' and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1
if ours and tonumber(redis.call('HGET', KEYS[1], ':hold-id') or '0') > tonumber(ARGV[5]) then
  return false
end
if ARGV[4] == 'reenter' then
  -- Only where we still hold it: never re-create a lock we lost here.
  if not ours then return false end
  redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
  redis.call('HSET', KEYS[1], ':hold-id', ARGV[5])
  lengthen(KEYS[1], ARGV[2])
  return redis.status_reply('OK')
end
if kind == 'hash' and not ours then
  return false
end
-- Free, or a leftover of our own earlier hold: the client's count is 1 now.
redis.call('HSET', KEYS[1], ARGV[1], 1, ':hold-id', ARGV[5])
lengthen(KEYS[1], ARGV[2])
if (ARGV[6] or '') ~= '' then
  redis.call('SET', KEYS[3], ARGV[1] .. ' ' .. ARGV[6], 'PX', redis.call('PTTL', KEYS[1]))
end
if ARGV[3] == '1' then
  return redis.call('INCR', KEYS[2])
end
return redis.status_reply('OK')
