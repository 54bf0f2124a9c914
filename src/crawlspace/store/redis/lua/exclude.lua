-- Remember URLs refused at admission (out of scope, too deep, a trap rule, a filter) as excluded
-- with their reason, as the SQLite store keeps them in `urls`: a link met again is then seen,
-- not refused again, and `export --frontier` says why each was left out.
-- ARGV: prefix, now, bucket, buckets, then 4 per URL: url, host, depth, reason.
-- A URL excluded for its depth is also marked in the bucket's 'dx' hash (url -> id): depth is
-- the one reason that depends on the path a link was found by, and add.lua admits such a URL
-- when a shallower link to it appears.
-- Returns {{} (no index marks move), number newly remembered}.
local bucket, buckets = tonumber(ARGV[3]), tonumber(ARGV[4])
local SEEN = P .. 'seen'
local useq = tonumber(redis.call('HGET', ST, 'useq') or '0')
local added = 0
for i = 5, #ARGV, 4 do
  local id = string.format('%016d', (useq + 1) * buckets + bucket)
  if redis.call('HSETNX', SEEN, ARGV[i], id) == 1 then
    useq = useq + 1
    redis.call('HSET', ukey(id), 'url', ARGV[i], 'host', ARGV[i + 1], 'depth', ARGV[i + 2],
      'prio', '0', 'hops', '0', 'src', 'link', 'state', 'excluded', 'reason', ARGV[i + 3],
      'version', '1', 'at', ARGV[2])
    if ARGV[i + 3] == 'depth' then redis.call('HSET', P .. 'dx', ARGV[i], id) end
    added = added + 1
  end
end
redis.call('HSET', ST, 'useq', string.format('%d', useq))
return {{}, added}
