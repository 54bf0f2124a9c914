-- This bucket's index version and marks (_common.lua) and its number of hosts ready at ARGV[2],
-- for store/redis/index.py. Read-only. ARGV: prefix, now.
-- Returns {version, ready mark, lease mark, due mark, ready hosts}.
local m = marks(true)
return {tonumber(redis.call('HGET', ST, 'iver') or '0'), m[1], m[2], m[3],
  redis.call('ZCOUNT', READY, '-inf', ARGV[2])}
