-- SPDX-License-Identifier: Apache-2.0
-- Release one level of a reentrant or fair lock on one master; also how a
-- fair waiter that gives up leaves for good.
-- KEYS[1] lock key (hash), KEYS[2] wait queue, KEYS[3] waiter deadlines,
-- KEYS[4] waiters' terms (fair locks, see fair_acquire.lua; absent, so empty,
-- otherwise), KEYS[5] holder description (deleted with the last level when
-- it is ours; optional)
-- ARGV[1] owner field, ARGV[2] release channel, ARGV[3] '1' for the last level,
-- ARGV[4] '1' when leaving for good (a holder's last release, or a fair
-- waiter giving up): leave the queue and pass the lock on; '0' when cleaning
-- up an abandoned attempt (keep our place in line, wake nobody); ARGV[5]
-- this release's id (the message, so that a waiter acts once on the copies
-- every master sends), ARGV[6] the hold id: the latest request id of the
-- acquisition this release ends. A hold (or a place in line) taken by a
-- later request of ours is not this release's to touch: the release may have
-- arrived late, on a connection the client has since dropped.
-- The client's own hold count decides which level is the last: counts on the
-- masters may differ after failed re-entries, so the last release deletes
-- whatever count is left, and earlier ones never go below 1.
-- ARGV[7], ARGV[8] (a fair waiter cleaning up a failed poll, ARGV[4] '0'):
-- its score and its queue timeout ms. Where this deletes a hold a release
-- handed it (pass_on took it out of line), it goes back in line with that
-- score: it keeps waiting, and giving the hold back must not give its turn
-- away to a later caller (issue 35).
-- Returns 1 when our hold was found here, 0 otherwise.
-- A read-write hold ('r:'/'w:' field) shares its hash with other holds:
-- deleting the key below would free them all (rw_release.lua removes one).
if string.find(ARGV[1], '^[rw]:') then
  return redis.error_reply('WRONGTYPE token names a read-write hold: release it as one (rw_release.lua)')
end
--#include lib/fair_line.lua

local leaving = ARGV[3] == '1' and ARGV[4] == '1'
local hold_id = tonumber(ARGV[6])
-- Whether anyone stands in line here, for a leave: the line's three keys
-- are written, expired and emptied together. With no line (an uncontended
-- fair or a reentrant lock, or a key of another type, the user's own) only
-- the announcement is left to make: one TYPE stands for five reads.
local line = leaving and redis.call('TYPE', KEYS[2])['ok'] == 'zset'

-- Server time in ms.
local function server_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The lock is free here: hand it to the head of the queue when the head left
-- terms (a poll id and a ttl, see fair_acquire.lua), else wake the head's
-- client (on the channel suffixed with its client id, the part of the owner
-- field before the first ':'), else, with `announce`, tell every waiter.
local function pass_on(announce)
  if not line then
    if announce then redis.call('PUBLISH', ARGV[2], ARGV[5]) end
    return
  end
  local now = server_ms()
  -- A stale head would be handed a lock nobody uses.
  for _, w in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
    redis.call('ZREM', KEYS[2], w)
    redis.call('ZREM', KEYS[3], w)
    redis.call('HDEL', KEYS[4], w)
  end
  local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not head then
    if announce then redis.call('PUBLISH', ARGV[2], ARGV[5]) end
    return
  end
  local channel = ARGV[2] .. ':' .. string.match(head, '^[^:]*')
  local poll, ttl = string.match(redis.call('HGET', KEYS[4], head) or '', '^(%d+) (%d+)$')
  local deadline = tonumber(redis.call('ZSCORE', KEYS[3], head))
  if poll and deadline then
    -- Held no longer than the head would stay in line without polling: a
    -- head that died there costs the queue only its queue timeout. Its
    -- client extends the hold to its ttl once it has won (fair_dequeue.lua).
    ttl = math.min(tonumber(ttl), deadline - now)
    redis.call('HSET', KEYS[1], head, 1, ':hold-id', poll)
    redis.call('PEXPIRE', KEYS[1], ttl)
    -- Out of line here: it holds the lock here, so it keeps its turn (if it
    -- misses its quorum, its next poll is granted here and puts it back at
    -- the front: its score is the earliest), and a winner has one script
    -- call fewer to make (hold.cpp).
    redis.call('ZREM', KEYS[2], head)
    redis.call('ZREM', KEYS[3], head)
    redis.call('HDEL', KEYS[4], head)
    redis.call('PUBLISH', channel, '+' .. poll .. ' ' .. head)
  else
    redis.call('PUBLISH', channel, head)
  end
end

local terms = line and redis.call('HGET', KEYS[4], ARGV[1])
if line and not (terms and tonumber(string.match(terms, '^%d+')) > hold_id) then
  -- Leave the fair queue on every master, also where we do not hold the
  -- lock (a holder's leave at grant time may not have reached this one): a
  -- stale entry would let our next acquisition jump the line here. Not in
  -- line here (a master that handed us the lock took us out; a reentrant
  -- lock has no line): one call, not three.
  if redis.call('ZREM', KEYS[2], ARGV[1]) == 1 then
    redis.call('ZREM', KEYS[3], ARGV[1])
    redis.call('HDEL', KEYS[4], ARGV[1])
  end
end
-- Our hold here, if any, and the request id it was taken (or re-entered) by.
local held = redis.call('HMGET', KEYS[1], ARGV[1], ':hold-id')
if not held[1] or tonumber(held[2] or '0') > hold_id then
  -- A waiter giving up may have been first in line where the lock is free,
  -- with no release to come that names the next head.
  if leaving and redis.call('EXISTS', KEYS[1]) == 0 then pass_on(false) end
  return 0
end
if ARGV[3] == '1' then
  redis.call('DEL', KEYS[1])
  local about = KEYS[5] and redis.call('GET', KEYS[5])
  if about and string.sub(about, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then redis.call('DEL', KEYS[5]) end
  if leaving then
    pass_on(true)
  elseif ARGV[7] and not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
    -- A release handed us this hold (a hold a poll was granted leaves us in
    -- line): back in line with our score, in this same script, so that no
    -- later caller's poll finds the lock free with itself first. The terms
    -- name this poll without a ttl: a release here wakes us rather than
    -- hand us the lock (such a hand-over, naming a poll from before this
    -- release, would not count: fair_handover.hpp); our next poll is
    -- granted here.
    stand_in_line(KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[7], server_ms(), ARGV[8], ARGV[6])
  end
  return 1
end
if tonumber(held[1]) > 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
end
return 1
