-- SPDX-License-Identifier: Apache-2.0
-- Read-only view of one lock on one master, for `redlock status`.
-- KEYS[1] lock key, KEYS[2] fence counter key, KEYS[3] fair wait queue
-- Returns { type, holder, pttl in ms, fence counter (or ''), waiters }:
-- holder is the token of a mutex, or 'field=count,...' of a reentrant/fair
-- lock; waiters lists a fair queue in order.
local kind = redis.call('TYPE', KEYS[1])['ok']
local holder = ''
if kind == 'string' then
  holder = redis.call('GET', KEYS[1])
elseif kind == 'hash' then
  local kv = redis.call('HGETALL', KEYS[1])
  local parts = {}
  for i = 1, #kv, 2 do
    -- (':hold-id' is bookkeeping, not a holder: reentrant_acquire.lua)
    if kv[i]:sub(1, 1) ~= ':' then parts[#parts + 1] = kv[i] .. '=' .. kv[i + 1] end
  end
  holder = table.concat(parts, ',')
end
local fence = redis.call('GET', KEYS[2]) or ''
local waiters = table.concat(redis.call('ZRANGE', KEYS[3], 0, -1), ',')
return { kind, holder, redis.call('PTTL', KEYS[1]), fence, waiters }
