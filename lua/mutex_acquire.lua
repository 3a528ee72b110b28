-- SPDX-License-Identifier: Apache-2.0
-- Acquire the plain RedLock mutex on one master.
-- KEYS[1] lock key (holds the holder's random token)
-- KEYS[2] fence counter key ({R}:fence)
-- ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] '1' to also draw a fencing counter
-- Returns: 'OK' (status) when acquired unfenced, the new counter value when
-- acquired fenced, nil when another holder has the key. A key of another type
-- is someone else's data: it is reported, never overwritten.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if ARGV[3] == '1' then
    return redis.call('INCR', KEYS[2])
  end
  return redis.status_reply('OK')
end
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'string' then
  return redis.error_reply('WRONGTYPE lock key holds a ' .. kind .. ', not a lock token')
end
return false
