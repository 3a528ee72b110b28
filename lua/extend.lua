-- SPDX-License-Identifier: Apache-2.0
-- Extend a lease on one master if, and only if, we still own the lock there.
-- Works for every kind: a string key holding our token (mutex) or a hash
-- with our owner field (reentrant, fair).
-- KEYS[1] lock key; ARGV[1] token or owner field, ARGV[2] new ttl in ms
-- Returns 1 when extended, 0 when the key is gone or someone else's.
local kind = redis.call('TYPE', KEYS[1])['ok']
local ours = (kind == 'string' and redis.call('GET', KEYS[1]) == ARGV[1])
  or (kind == 'hash' and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1)
if ours then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
