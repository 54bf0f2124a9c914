-- This bucket's index version and marks (_common.lua), its number of hosts ready at ARGV[2],
-- and the ranks of its best `limit` of them, for store/redis/index.py. Read-only.
-- ARGV: prefix, now, limit, aging.
-- Returns {version, ready marks, lease mark, due mark, ready hosts, rank, rank, ...}.
local m = marks(true, true)
local count = 0
for b = 0, FRONT_BANDS - 1 do count = count + redis.call('ZCOUNT', READY .. b, '-inf', ARGV[2]) end
local out = {tonumber(redis.call('HGET', ST, 'iver') or '0'), m[1], m[2], m[3], count}
local ranked = best_ready(ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]))
for i = 2, #ranked, 2 do out[#out + 1] = string.format('%.17g', ranked[i]) end
return out
