-- SPDX-License-Identifier: Apache-2.0
-- Read-only view of one lock on one master, for `redlock status`.
-- KEYS[1] lock key, KEYS[2] fence counter key, KEYS[3] fair wait queue,
-- KEYS[4] holder description
-- Returns { type, token, pttl in ms, fence counter (or ''), owners, waiters,
-- holder description ('<owner> <words>' or '') }:
-- token is a mutex holder's value; owners is { field, count, ... } of a
-- reentrant/fair lock; waiters is a fair queue in order. Nested arrays, not
-- joined strings: an owner name may contain any character.
local kind = redis.call('TYPE', KEYS[1])['ok']
local token = ''
local owners = {}
if kind == 'string' then
  token = redis.call('GET', KEYS[1])
elseif kind == 'hash' then
  local kv = redis.call('HGETALL', KEYS[1])
  for i = 1, #kv, 2 do
    -- (':hold-id' is bookkeeping, not a holder: reentrant_acquire.lua)
    if kv[i]:sub(1, 1) ~= ':' then
      owners[#owners + 1] = kv[i]
      owners[#owners + 1] = kv[i + 1]
    end
  end
end
local fence = redis.call('GET', KEYS[2]) or ''
local waiters = redis.call('ZRANGE', KEYS[3], 0, -1)
local about = redis.call('GET', KEYS[4]) or ''
return { kind, token, redis.call('PTTL', KEYS[1]), fence, owners, waiters, about }
