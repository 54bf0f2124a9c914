-- Remember URLs refused at admission (out of scope, too deep, a trap rule, a filter) as excluded
-- with their reason, as the SQLite store keeps them in `urls`: a link met again is then seen,
-- not refused again, and `export --frontier` says why each was left out.
-- ARGV: prefix, now, then 5 per URL: url, host, depth, reason, fingerprint (seen_key).
-- A URL excluded for its depth is also marked in the bucket's 'dx' hash (fingerprint -> useq):
-- depth is the one reason that depends on the path a link was found by, and add.lua admits such
-- a URL when a shallower link to it appears.
-- Returns {{} (no index marks move), number newly remembered}.
local useq = seen_open()
local added = 0
for i = 3, #ARGV, 5 do
  local url, host, fp = ARGV[i], ARGV[i + 1], ARGV[i + 4]
  local n = string.format('%d', useq + 1)
  if redis.call('HSETNX', seen_key(fp), fp, n) == 1 then
    useq = useq + 1
    seen_grow(useq)
    rec_new(useq, {state = 'excluded', version = '1', prio = '0', depth = ARGV[i + 2],
      hops = '0', src = 'link', hn = host_num(host), path = path_of(url, host),
      reason = ARGV[i + 3], at = ARGV[2]})
    if ARGV[i + 3] == 'depth' then redis.call('HSET', P .. 'dx', fp, n) end
    added = added + 1
  end
end
if added > 0 then redis.call('HSET', ST, 'useq', string.format('%d', useq)) end
return {{}, added}
