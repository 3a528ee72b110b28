-- SPDX-License-Identifier: Apache-2.0
-- Acquire a fair (FIFO) lock on one master. Waiters are ordered in a sorted
-- set by ONE score the client chose for this waiter and sends to every master
-- (ties broken by the member name), so all masters agree on who is first.
-- KEYS[1] lock key (hash), KEYS[2] fence counter key,
-- KEYS[3] wait queue (zset: score = enqueue score), KEYS[4] waiter deadlines
-- (zset: score = server time in ms after which the waiter is stale),
-- KEYS[5] waiters' terms (hash: owner field -> '<poll id> <ttl ms>', or just
-- '<poll id>' for a waiter that may not be handed the lock)
-- ARGV[1] owner field, ARGV[2] ttl ms, ARGV[3] '1' to draw a fence counter,
-- ARGV[4] 'first' or 'reenter', ARGV[5] enqueue score, ARGV[6] waiter timeout ms,
-- ARGV[7] hold id: this poll's id ('first'; it grows with every request of
-- the client) or the id of the hold being re-entered ('reenter'); see
-- reentrant_acquire.lua for the ':hold-id' field it is kept in,
-- ARGV[8] '1' when a release may hand this waiter the lock, '0' when not (a
-- fenced waiter, which must draw its counter itself)
-- KEYS[6] holder description, ARGV[9] who is acquiring, in words ('' or
-- absent: nothing to write), as in reentrant_acquire.lua; a waiter handed the
-- lock by a release writes it when it confirms (fair_dequeue.lua)
-- Returns 'OK' or the fence counter when granted; when queued, -1 - our rank
-- in line (-1: first, but the lock is held), so a waiter far back can poll
-- less often; nil when a later request of ours already ran here. A first
-- acquisition granted without standing in line (below) returns 'FAST', or
-- the fence counter in an array of one.
--#include lib/fair_line.lua

-- The lock free and nobody in line (so neither are we): granted without
-- standing in line, the line's keys left unwritten. FIFO holds without our
-- place: while we hold the key nobody else is granted or handed it here,
-- and if this attempt misses its quorum, its clean-up (reentrant_release.lua,
-- ARGV[7]) puts us in line with our score in the script that deletes this
-- hold. That needs the hold to last as long as the place would have: with a
-- ttl shorter than the queue timeout, a hold that lapsed before a late
-- clean-up (or our next poll) got here would leave us out of line, and a
-- later caller could be granted here first (found by the fair model,
-- FAST_SHORT_TTL); such a poll stands in line. No sweep either: an empty
-- line has no stale waiter.
if ARGV[4] == 'first' and tonumber(ARGV[2]) >= tonumber(ARGV[6])
    and redis.call('EXISTS', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[3]) == 0 then
  redis.call('HSET', KEYS[1], ARGV[1], 1, ':hold-id', ARGV[7])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if (ARGV[9] or '') ~= '' then
    redis.call('SET', KEYS[6], ARGV[1] .. ' ' .. ARGV[9], 'PX', ARGV[2])
  end
  if ARGV[3] == '1' then
    return {redis.call('INCR', KEYS[2])}
  end
  return redis.status_reply('FAST')
end

local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE lock key holds a ' .. kind .. ', not a fair lock')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Sweep waiters that stopped polling (crashed or gone) for longer than their timeout.
local stale = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
for _, w in ipairs(stale) do
  redis.call('ZREM', KEYS[3], w)
  redis.call('ZREM', KEYS[4], w)
  redis.call('HDEL', KEYS[5], w)
end
-- Expiry only ever moves later: a re-entry or a new acquisition with a
-- shorter ttl must not cut short a hold the client still counts on.
local function lengthen(key, ttl)
  if redis.call('PTTL', key) < tonumber(ttl) then redis.call('PEXPIRE', key, ttl) end
end
-- Our hold here, if any, and the request id it was taken (or re-entered) by.
local held = kind == 'hash' and redis.call('HMGET', KEYS[1], ARGV[1], ':hold-id') or {}
local ours = held[1] and true or false
if ours and tonumber(held[2] or '0') > tonumber(ARGV[7]) then
  return false
end
if ARGV[4] == 'reenter' then
  if not ours then return false end
  redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
  redis.call('HSET', KEYS[1], ':hold-id', ARGV[7])
  lengthen(KEYS[1], ARGV[2])
  return redis.status_reply('OK')
end
-- A poll of ours that arrived after a later one: it must not move us back
-- to an older place in line or older terms.
local terms = redis.call('HGET', KEYS[5], ARGV[1])
if terms and tonumber(string.match(terms, '^%d+')) > tonumber(ARGV[7]) then
  return false
end
-- Take (or keep) our place in line before looking at the head, even when the
-- lock is free here: if this attempt misses its quorum, we must still be in
-- line on this master, ahead of everyone who asked later. The score is the
-- same in every poll of one acquisition (a later acquisition replaces it);
-- our deadline is refreshed, and with it our terms: the id of this poll
-- (which also tells a late release of an earlier acquisition of ours that
-- this place in line is not its to give up), and, when a release may hand
-- us the lock (reentrant_release.lua), our ttl; the poll's send time bounds
-- the hand-over's validity on the client.
stand_in_line(KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[5], now, ARGV[6],
              ARGV[8] == '1' and (ARGV[7] .. ' ' .. ARGV[2]) or ARGV[7])
local rank = redis.call('ZRANK', KEYS[3], ARGV[1])
if ours or (kind == 'none' and rank == 0) then
  -- Granted here, but the waiter keeps its place in line until it has won a
  -- quorum (it then leaves every queue): if this attempt fails, it is still
  -- first on every master, so masters cannot split between two waiters.
  redis.call('HSET', KEYS[1], ARGV[1], 1, ':hold-id', ARGV[7])
  if ours then lengthen(KEYS[1], ARGV[2]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  if (ARGV[9] or '') ~= '' then
    redis.call('SET', KEYS[6], ARGV[1] .. ' ' .. ARGV[9], 'PX', redis.call('PTTL', KEYS[1]))
  end
  if ARGV[3] == '1' then
    return redis.call('INCR', KEYS[2])
  end
  return redis.status_reply('OK')
end
return -1 - rank
