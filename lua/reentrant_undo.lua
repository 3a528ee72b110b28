-- SPDX-License-Identifier: Apache-2.0
-- Undo one re-entry on one master after the re-entry missed its quorum:
-- decrement our own count, never below 1 and never another owner's.
-- KEYS[1] lock key; ARGV[1] owner field
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 and tonumber(redis.call('HGET', KEYS[1], ARGV[1])) > 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
  return 1
end
return 0
