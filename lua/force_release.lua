-- SPDX-License-Identifier: Apache-2.0
-- `redlock release --force`: remove every hold of one name on one master,
-- whoever holds it, and announce the release as the kinds' own releases do,
-- so that waiters retry at once. An operator's tool: the holders are not
-- asked, and one that is alive keeps running until its next renewal finds
-- its token gone. Fence counters ({R}:fence, a permit slot's) are never
-- touched: the next holder's fencing token must still be greater.
-- KEYS[1] lock key R, KEYS[2] holder description ({R}:holder), KEYS[3] and
-- KEYS[4] the wake list and its deadlines ({R}:wake, {R}:wake:until: mutex,
-- leader and semaphore waiters), KEYS[5] and KEYS[6] a fair lock's queue and
-- its waiters' deadlines ({R}:queue, {R}:timeout), KEYS[7] a semaphore's
-- number of permits in use ({R}:permits)
-- ARGV[1] the kind to remove: 'mutex' (a string key: a mutex, a name of a
-- set, a leader), 'owners' (reentrant, fair), 'rwlock', 'semaphore', or ''
-- for whatever is there; ARGV[2] this release's id (the same on every
-- master, so waiters count its copies), ARGV[3] the release channel
-- ({R}:released), ARGV[4] the leader channel ({R}:leader)
-- Permit slots are built here from R, as status.lua builds them.
-- Returns { found, then per hold removed: what, token, number, about }:
-- found is what the name holds here ('free', 'mutex', 'owners', 'rwlock',
-- 'semaphore', joined by '+' in the odd case of a semaphore and a lock key
-- under one name); what is 'mutex', 'owner' (number: its entry count),
-- 'reader', 'writer' or 'permit' (number: the slot); about is the holder's
-- description, if it wrote one. A hold of a kind other than ARGV[1] is left
-- alone (it shows in found, not among the removed). A key that is no lock
-- (someone else's data) is refused with WRONGTYPE, and nothing is touched.
--#include lib/wake_first_waiter.lua
local only = ARGV[1]
local function wanted(kind) return only == '' or only == kind end

-- What the lock key holds, read as status.lua and the acquire scripts read
-- it: a string is a token (ours are 32 hex digits, 's:' before a set's); a
-- hash is a read-write lock ('r:'/'w:' fields with deadlines) or owners
-- with entry counts (':hold-id' is bookkeeping).
local kind = redis.call('TYPE', KEYS[1])['ok']
local found, fields = 'free', nil
if kind == 'string' then
  local token, hex = redis.call('GET', KEYS[1]), string.rep('%x', 32)
  if not (string.match(token, '^' .. hex .. '$') or string.match(token, '^s:' .. hex .. '$')) then
    return redis.error_reply('WRONGTYPE lock key holds a string that is not a lock token')
  end
  found = 'mutex'
elseif kind == 'hash' then
  fields = redis.call('HGETALL', KEYS[1])
  local rw, counted = true, true
  for i = 1, #fields, 2 do
    local prefix = string.sub(fields[i], 1, 2)
    rw = rw and (prefix == 'r:' or prefix == 'w:') and tonumber(fields[i + 1]) ~= nil
    counted = counted and (string.sub(fields[i], 1, 1) == ':' or tonumber(fields[i + 1]) ~= nil)
  end
  if rw then found = 'rwlock' elseif counted then found = 'owners' else
    return redis.error_reply('WRONGTYPE lock key holds a hash that is not a lock')
  end
elseif kind ~= 'none' then
  return redis.error_reply('WRONGTYPE lock key holds a ' .. kind .. ', not a lock')
end
local in_use = redis.call('GET', KEYS[7])
if in_use then found = found == 'free' and 'semaphore' or found .. '+semaphore' end

local out = { found }
local function removed(what, token, number, about)
  out[#out + 1] = what
  out[#out + 1] = token
  out[#out + 1] = tostring(number or '')
  out[#out + 1] = about or ''
end
-- The words after '<token> ' in a holder description, if it names `token`.
local function about_of(key, token)
  local about = redis.call('GET', key) or ''
  if string.sub(about, 1, #token + 1) == token .. ' ' then return string.sub(about, #token + 2) end
  return ''
end
-- Names up to `n` live waiters on the wake list, each on its client's
-- channel, as a release names one (mutex_release.lua): a semaphore whose
-- slots all came free may let in as many.
local function wake_listed(n)
  local head, now = first_live_waiter(KEYS[3], KEYS[4])
  if not head then return end
  for _, w in ipairs(redis.call('ZRANGE', KEYS[3], 0, n - 1)) do
    if tonumber(redis.call('ZSCORE', KEYS[4], w) or '0') > now then name_waiter(ARGV[3], w, ARGV[2]) end
  end
end

if found == 'mutex' or string.sub(found, 1, 6) == 'mutex+' then
  if wanted('mutex') then
    local token = redis.call('GET', KEYS[1])
    local about = about_of(KEYS[2], token)
    redis.call('DEL', KEYS[1], KEYS[2])
    removed('mutex', token, nil, about)
    -- A leader's proclamation ('epoch <T>[ <words>]', leader_proclaim.lua):
    -- its observers hear it resigned, as from async_resign.
    local epoch = string.match(about, '^epoch (%d+)')
    if epoch then redis.call('PUBLISH', ARGV[4], 'resigned ' .. epoch) end
    wake_listed(1)
  end
elseif found == 'owners' or found == 'rwlock' or string.sub(found, 1, 7) == 'owners+' or
    string.sub(found, 1, 7) == 'rwlock+' then
  local rw = string.sub(found, 1, 6) == 'rwlock'
  if wanted(rw and 'rwlock' or 'owners') then
    for i = 1, #fields, 2 do
      local field = fields[i]
      if rw then
        removed(string.sub(field, 1, 2) == 'w:' and 'writer' or 'reader', field, nil, '')
      elseif string.sub(field, 1, 1) ~= ':' then
        removed('owner', field, fields[i + 1], about_of(KEYS[2], field))
      end
    end
    redis.call('DEL', KEYS[1], KEYS[2])
    -- Reentrant and read-write waiters count this id's copies; a fair
    -- queue's head is woken on its client's channel (the part of its owner
    -- field before the first ':'), as reentrant_release.lua wakes it when it
    -- cannot hand the lock over. Stale heads are swept first.
    redis.call('PUBLISH', ARGV[3], ARGV[2])
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local head = nil
    for _, w in ipairs(redis.call('ZRANGE', KEYS[5], 0, -1)) do
      if tonumber(redis.call('ZSCORE', KEYS[6], w) or '0') > now then
        head = w
        break
      end
    end
    if head then redis.call('PUBLISH', ARGV[3] .. ':' .. string.match(head, '^[^:]*'), head) end
  end
end

if in_use and wanted('semaphore') then
  local freed = 0
  -- (bounded as the client bounds it, max_permits, whatever the record says)
  for i = 0, math.min(tonumber(in_use) or 0, 1024) - 1 do
    local slot = '{' .. KEYS[1] .. '}:permit:' .. i  -- keys::permit, keys::holder
    -- (a slot of another type is someone else's: left as it is)
    if redis.call('TYPE', slot)['ok'] == 'string' then
      local token = redis.call('GET', slot)
      local holder = '{' .. slot .. '}:holder'
      removed('permit', token, i, about_of(holder, token))
      redis.call('DEL', slot, holder)
      freed = freed + 1
    end
  end
  redis.call('DEL', KEYS[7])
  if freed > 0 then wake_listed(freed) end
end
return out
