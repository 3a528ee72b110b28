-- Read-only view of one lock on one master, for `redlock status`.
-- KEYS[1] lock key, KEYS[2] fence counter key
-- Returns { type, holder value (or ''), pttl in ms, fence counter (or '') }.
local kind = redis.call('TYPE', KEYS[1])['ok']
local holder = ''
if kind == 'string' then
  holder = redis.call('GET', KEYS[1])
end
local fence = redis.call('GET', KEYS[2]) or ''
return { kind, holder, redis.call('PTTL', KEYS[1]), fence }
