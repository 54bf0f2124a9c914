-- Read the crawl-wide index's front bands (store/redis/index.py): its keys share the tag
-- "{ns:idx}", so READY .. band is "{ns:idx}:ready:<band>" (bucket -> the earliest ready time of
-- its hosts in that band). Read-only. ARGV: prefix, now, limit, aging.
-- Returns, for limit 0, {the earliest ready time over all bands ('' for none)}; otherwise
-- {'', bucket, band, ready time, bucket, ...}: up to `limit` distinct buckets holding a host
-- ready at `now`, by the best rank of their hosts (FrontQueues.rank), each with the band and
-- ready time of its best host.
local limit = tonumber(ARGV[3])
if limit <= 0 then
  local earliest = nil
  for b = 0, FRONT_BANDS - 1 do
    local r = redis.call('ZRANGE', rkey(b), 0, 0, 'WITHSCORES')
    if #r > 0 and (earliest == nil or tonumber(r[2]) < tonumber(earliest)) then earliest = r[2] end
  end
  return {earliest or ''}
end
local out = {''}
-- A bucket appears at most once per band, and each of the `limit` best buckets is among the
-- first `limit` of the band holding its best host: all bands' first `limit` are enough.
local ranked = best_ready(ARGV[2], limit, tonumber(ARGV[4]), limit * FRONT_BANDS)
local seen = {}
local found = 0
for i = 1, #ranked, 3 do
  if not seen[ranked[i]] then
    seen[ranked[i]] = true
    for j = i, i + 2 do out[#out + 1] = ranked[j] end
    found = found + 1
    if found == limit then break end
  end
end
return out
