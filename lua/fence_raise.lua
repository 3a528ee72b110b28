-- SPDX-License-Identifier: Apache-2.0
-- Raise round of a fenced acquisition, on one master: only while we still
-- own the lock there (string key with our token, or hash with our field),
-- lift the fence counter to at least the token T the client derived (the max
-- of the counters its quorum returned). A multi-name lock raises every name
-- in the same call, each to its own T.
-- KEYS[1..n] lock keys, KEYS[n+1..2n] their fence counter keys ({R}:fence)
-- ARGV[1] our token or owner field, ARGV[2..n+1] each name's T
-- Returns 1 when every counter is now >= its T under our hold, 0 when we do
-- not own every lock on this master (it then must not count toward the
-- quorum; nothing is raised).
local n = #KEYS / 2
for i = 1, n do
  local kind = redis.call('TYPE', KEYS[i])['ok']
  local ours = (kind == 'string' and redis.call('GET', KEYS[i]) == ARGV[1])
    or (kind == 'hash' and redis.call('HEXISTS', KEYS[i], ARGV[1]) == 1)
  if not ours then
    return 0
  end
end
for i = 1, n do
  local current = tonumber(redis.call('GET', KEYS[n + i]) or '0')
  local target = tonumber(ARGV[i + 1])
  if current < target then
    redis.call('SET', KEYS[n + i], ARGV[i + 1])
  end
end
return 1
