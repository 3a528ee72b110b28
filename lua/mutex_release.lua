-- SPDX-License-Identifier: Apache-2.0
-- Release the mutex on one master if, and only if, we still hold it.
-- KEYS[1] lock key, KEYS[2] wake list, KEYS[3] wake list deadlines
-- (mutex_acquire.lua), KEYS[4] holder description (deleted when it is ours);
-- ARGV[1] token, ARGV[2] release channel ({R}:released),
-- ARGV[3] '1' to wake a waiter (a real release), '0' when cleaning up an
-- abandoned attempt (waking then would only make contenders spin), 'pass'
-- to pass a wake-up on: ARGV[4] is an entry a release listed (ARGV[5]
-- below) and then named, but no acquisition of its client took it; it is
-- taken down and, if the lock is free, the first live waiter is named in
-- its place, with ARGV[1] the token of the release that named it; or
-- 'quiet': a real release that names no one, only answers 3 when a live
-- waiter heads the list (a permit's releaser that takes a slot back at
-- once: the waiter would only find it taken; the client sends the wake-up
-- later, with 'pass', if it does not ask again).
-- A real release wakes one waiter, not all: the first live one on the wake
-- list, on its client's channel ({R}:released:<client id>), with
-- '=<waiter id> <token>'. Waking every waiter made them split the masters'
-- votes among themselves. With no one on the list it publishes nothing: no
-- mutex waiter listens anywhere else, and most releases have no waiter (an
-- extra call here cost 15% of the 64-in-flight throughput). The token tells
-- one release's copies (one per master) from the next release's.
-- ARGV[4] (optional, '' for none) the holder's own wake-list entry: a
-- waiter that won with a plain SET NX PX retry (no script to take it off
-- the list then) leaves it here, before the first waiter is looked for.
-- ARGV[5] (optional) a waiter id to list behind the waiter named, with its
-- score ARGV[6] and lapse ARGV[7] in ms (as mutex_acquire.lua's ARGV[4] to
-- ARGV[6]): the releasing client, which asks again at once, joins the line
-- in this call rather than in a round of its own. Nothing is listed when
-- no one is named: its next attempt may simply take the lock.
-- Returns 1 when our key was deleted ('quiet': 3 when a live waiter heads
-- the list), 2 when it was and a waiter was named
-- (so that the releasing client, asking again at once, lets that waiter
-- have it: mutex_acquire.lua, ARGV[3] 'line', or the entry of ARGV[5]),
-- 0 when it was gone or someone else's.
--#include lib/wake_first_waiter.lua
--#include lib/list_waiter.lua
if (ARGV[4] or '') ~= '' then  -- pcall: either key may be the user's own
  redis.pcall('ZREM', KEYS[2], ARGV[4])
  redis.pcall('ZREM', KEYS[3], ARGV[4])
end
if ARGV[3] == 'pass' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end  -- its holder's release wakes the next
else
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then
    return 0
  end
  redis.call('DEL', KEYS[1])
  -- Ours when it starts with our token, which is new at every acquisition.
  local about = KEYS[4] and redis.call('GET', KEYS[4])
  if about and string.sub(about, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then redis.call('DEL', KEYS[4]) end
  if ARGV[3] ~= '1' and ARGV[3] ~= 'quiet' then
    return 1
  end
end
local head, now = nil, nil
if KEYS[2] then head, now = first_live_waiter(KEYS[2], KEYS[3]) end
if head and ARGV[3] == 'quiet' then return 3 end
if head then
  name_waiter(ARGV[2], head, ARGV[1])
  if (ARGV[5] or '') ~= '' then list_waiter(KEYS[2], KEYS[3], ARGV[5], ARGV[6], now, tonumber(ARGV[7])) end
  return 2
end
return 1
