-- SPDX-License-Identifier: Apache-2.0
-- Read-only view of one lock on one master, for `redlock status`.
-- KEYS[1] lock key, KEYS[2] fence counter key, KEYS[3] fair wait queue,
-- KEYS[4] holder description, KEYS[5] a semaphore's number of permits in use
-- ({R}:permits)
-- Returns { type, token, pttl in ms, fence counter (or ''), owners, waiters,
-- holder description ('<owner> <words>' or ''), permits }:
-- token is a mutex holder's value; owners is { field, count, ... } of a
-- reentrant/fair lock; waiters is a fair queue in order. Nested arrays, not
-- joined strings: an owner name may contain any character. permits is {}
-- unless a semaphore named R is in use, then { number of permits, and for
-- each held slot: slot, token, pttl, fence counter (or ''), holder
-- description }. Its slot keys are built here from R, since their number is
-- only known here (standalone masters allow it; the script only reads).
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
-- Companions are read through pcall: a key of another type there (the
-- user's own data) shows as absent; only the lock key's type is reported.
local function text_or_empty(key)
  local value = redis.pcall('GET', key)
  return type(value) == 'string' and value or ''
end
local fence = text_or_empty(KEYS[2])
local waiters = redis.pcall('ZRANGE', KEYS[3], 0, -1)
if waiters.err then waiters = {} end
local about = text_or_empty(KEYS[4])
local in_use = KEYS[5] and text_or_empty(KEYS[5]) or ''
local permits = {}
if in_use ~= '' then
  permits[1] = in_use
  -- (bounded as the client bounds it, max_permits, whatever the record says)
  for i = 0, math.min(tonumber(in_use) or 0, 1024) - 1 do
    local slot = '{' .. KEYS[1] .. '}:permit:' .. i  -- keys::permit, keys::fence, keys::holder
    -- (a slot of another type is reported by acquisitions, not here)
    local holder = redis.call('TYPE', slot)['ok'] == 'string' and redis.call('GET', slot)
    if holder then
      local n = #permits
      permits[n + 1] = tostring(i)
      permits[n + 2] = holder
      permits[n + 3] = redis.call('PTTL', slot)
      for j, companion in ipairs({ ':fence', ':holder' }) do
        permits[n + 3 + j] = text_or_empty('{' .. slot .. '}' .. companion)
      end
    end
  end
end
return { kind, token, redis.call('PTTL', KEYS[1]), fence, owners, waiters, about, permits }
