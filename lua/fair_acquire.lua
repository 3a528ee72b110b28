-- Acquire a fair (FIFO) lock on one master. Waiters are ordered in a sorted
-- set by ONE score the client chose for this waiter and sends to every master
-- (ties broken by the member name), so all masters agree on who is first.
-- KEYS[1] lock key (hash), KEYS[2] fence counter key,
-- KEYS[3] wait queue (zset: score = enqueue score), KEYS[4] waiter deadlines
-- (zset: score = server time in ms after which the waiter is stale),
-- KEYS[5] hand-over terms (hash: owner field -> '<poll id> <ttl ms>')
-- ARGV[1] owner field, ARGV[2] ttl ms, ARGV[3] '1' to draw a fence counter,
-- ARGV[4] 'first' or 'reenter', ARGV[5] enqueue score, ARGV[6] waiter timeout ms,
-- ARGV[7] this poll's id, or '' when the waiter cannot be handed the lock
-- (a fenced one, which must draw its counter itself)
-- Returns 'OK' or the fence counter when granted; when queued, -1 - our rank
-- in line (-1: first, but the lock is held), so a waiter far back can poll
-- less often.
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
local ours = kind == 'hash' and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1
if ARGV[4] == 'reenter' then
  if not ours then return false end
  redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return redis.status_reply('OK')
end
-- Take (or keep) our place in line before looking at the head, even when the
-- lock is free here: if this attempt misses its quorum, we must still be in
-- line on this master, ahead of everyone who asked later. The score is the
-- same in every poll of one acquisition (a later acquisition replaces it);
-- our deadline is refreshed, and with it the terms on which a release may
-- hand us the lock (reentrant_release.lua): the id of this poll, whose send
-- time bounds the hand-over's validity on the client, and our ttl. The keys
-- expire on their own once nobody has polled for two waiter timeouts.
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
redis.call('ZADD', KEYS[4], now + tonumber(ARGV[6]), ARGV[1])
if ARGV[7] ~= '' then
  redis.call('HSET', KEYS[5], ARGV[1], ARGV[7] .. ' ' .. ARGV[2])
else
  redis.call('HDEL', KEYS[5], ARGV[1])
end
for i = 3, 5 do redis.call('PEXPIRE', KEYS[i], 2 * tonumber(ARGV[6])) end
local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
if ours or (kind == 'none' and head == ARGV[1]) then
  -- Granted here, but the waiter keeps its place in line until it has won a
  -- quorum (it then leaves every queue): if this attempt fails, it is still
  -- first on every master, so masters cannot split between two waiters.
  redis.call('HSET', KEYS[1], ARGV[1], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if ARGV[3] == '1' then
    return redis.call('INCR', KEYS[2])
  end
  return redis.status_reply('OK')
end
return -1 - redis.call('ZRANK', KEYS[3], ARGV[1])
