-- SPDX-License-Identifier: Apache-2.0
-- Take one permit of a semaphore on one master: the first free slot among
-- the caller's candidates, in the caller's order (the same on every master,
-- so that masters agree unless their slots differ). Each slot is a mutex of
-- its own (SET NX PX with the attempt's random token): the semaphore has at
-- most N holders because each slot has at most one (docs/algorithm.md,
-- section 12). A master granting one slot and another master another is
-- safe; the client counts votes per slot and releases the rest.
-- ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] '1' to also draw the slot's
-- fence counter, ARGV[4] waiter id ('' : not a waiter), ARGV[5] its score,
-- ARGV[6] how long its wake list entry lives (ms) (as in mutex_acquire.lua),
-- ARGV[7] n, the number of candidate slots, ARGV[8] the semaphore's number of
-- permits, ARGV[9] how long (ms) a waiter heading the wake list must have
-- waited for the last free slot to be kept for it ('0': never), ARGV[10] who
-- is acquiring, in words ('' or absent: nothing to write)
-- KEYS[1..n] the candidate slots, KEYS[n+1] the number of permits in use
-- ({R}:permits), KEYS[n+2] and KEYS[n+3] the semaphore's wake list and its
-- deadlines, then, in the candidates' order, their fence counters (when
-- ARGV[3] is '1') and their holder descriptions (when ARGV[10] is given).
-- Returns the position (0-based) of the slot taken among the candidates,
-- or { position, fence counter } when fenced; nil when every candidate is
-- held, or the last free one is kept for a waiter. Refused with a PERMITS
-- error when the semaphore is in use with another number of permits
-- (nothing taken), with WRONGTYPE when no slot is free and one of them
-- holds someone else's data (never overwritten).
--#include lib/list_waiter.lua
local n = tonumber(ARGV[7])
local permits_key, wake, wake_until = KEYS[n + 1], KEYS[n + 2], KEYS[n + 3]
local fenced = ARGV[3] == '1'
local about = ARGV[10] or ''
local in_use = redis.call('GET', permits_key)
if in_use and in_use ~= ARGV[8] then
  return redis.error_reply('PERMITS semaphore in use with ' .. in_use .. ' permits, asked with ' .. ARGV[8])
end
local ttl = tonumber(ARGV[2])
local waiter = ARGV[4] or ''
-- A live permit waiter that heads the list and has waited longer than ARGV[9]
-- (its score is when it began, in microseconds on its client's clock) gets
-- the last free slot: anyone else takes one only where two are free.
-- Without this a worker that gives its permit back and asks again at once
-- takes it back every time (its ask arrives before the waiter's), and the
-- waiter gets in only when its retry timer happens to land on a free slot.
-- Only while the waiter's entry has no longer to live than the asker's
-- would (ARGV[6]): the waiter retries before its entry lapses, so a kept
-- slot idles at most that long. Only ever a refusal more: no slot is taken
-- that SET NX would not take. Read with pcall: a wake list of another type
-- (a key of the user's own) only turns the keeping off, as it turns the
-- listing of a refused waiter off (lib/list_waiter.lua).
-- The candidates free, in one call (a key of another type counts as held:
-- SET NX would not take it either). None free: no slot is tried; exactly
-- one: the rule above may keep it; two or more: anyone takes one, with no
-- look at the list (most asks under contention read nothing else).
local free = n - redis.call('EXISTS', unpack(KEYS, 1, n))
local tries = free > 0 and n or 0
local now_ms = nil  -- server time, once read
local reserve_after = tonumber(ARGV[9] or '0') * 1000
if free == 1 and reserve_after > 0 then
  local head = redis.pcall('ZRANGE', wake, 0, 0, 'WITHSCORES')
  -- A permit's waiter ('<client id>:p<n>'), not a mutex's on the same name.
  if not head.err and head[1] and head[1] ~= waiter and string.find(head[1], ':p%d+$') then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    now_ms = math.floor(now / 1000)
    local until_ms = redis.pcall('ZSCORE', wake_until, head[1])
    if type(until_ms) ~= 'string' then until_ms = '0' end
    local head_left = tonumber(until_ms) * 1000 - now
    if tonumber(head[2]) + reserve_after <= now and head_left > 0 and head_left <= tonumber(ARGV[6]) * 1000 then
      tries = 0  -- kept
    end
  end
end
for i = 1, tries do
  if redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then
    -- The number of permits lives as long as the longest hold (extend.lua
    -- lengthens it too), so a client with another number is refused.
    local left = redis.call('PTTL', permits_key)
    if left ~= -1 and left < ttl then redis.call('SET', permits_key, ARGV[8], 'PX', ARGV[2]) end
    if waiter ~= '' then
      -- Its deadline goes with it (a winner that never waited: one call).
      -- pcall: a key of another type there is the user's, not a list.
      if redis.pcall('ZREM', wake, waiter) == 1 then redis.pcall('ZREM', wake_until, waiter) end
    end
    local next_key = n + 4
    local fence_key = nil
    if fenced then
      fence_key = KEYS[next_key + i - 1]
      next_key = next_key + n
    end
    if about ~= '' then
      redis.call('SET', KEYS[next_key + i - 1], ARGV[1] .. ' ' .. about, 'PX', ARGV[2])
    end
    if fence_key then
      return { i - 1, redis.call('INCR', fence_key) }
    end
    return i - 1
  end
end
-- None free: say so if a candidate holds someone else's data (SET NX never
-- overwrites it; with a slot free the asker takes it, reading no TYPE).
-- Not when the last free slot was kept: the asker would have taken it.
if free == 0 then
  for i = 1, n do
    local kind = redis.call('TYPE', KEYS[i])['ok']
    if kind ~= 'string' and kind ~= 'none' then
      return redis.error_reply('WRONGTYPE permit slot holds a ' .. kind .. ', not a lock token')
    end
  end
end
if waiter ~= '' then
  if not now_ms then
    local t = redis.call('TIME')
    now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  list_waiter(wake, wake_until, waiter, ARGV[5], now_ms, tonumber(ARGV[6]))
end
return false
