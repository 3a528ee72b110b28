-- SPDX-License-Identifier: Apache-2.0
-- Storage-side fencing check for a Redis-backed store: apply a write only if
-- its fencing token is >= the highest token seen for the resource, atomically.
-- KEYS[1] highest token seen for the resource, KEYS[2] the data key
-- ARGV[1] the writer's token, ARGV[2] the value
-- Returns 1 when written; a STALE error (and no change at all) otherwise.
local seen = tonumber(redis.call('GET', KEYS[1]) or '0')
local token = tonumber(ARGV[1])
if token == nil then
  return redis.error_reply('ERR fencing token is not a number')
end
if token < seen then
  return redis.error_reply('STALE fencing token ' .. ARGV[1] .. ' is older than ' .. tostring(seen))
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
return 1
