-- One bucket, for store/redis/index.py. With `limit` > 0 (a lease): the ready times of its
-- first `limit` hosts in each band whose rank (FrontQueues.rank) is at most `cutoff` ('' for
-- none); with `limit` 0: its number of hosts ready at `now`. Its index version and marks
-- (_common.lua) come too when wanted: with `full`, or when nothing was found (the index sent
-- the client here in vain, and is corrected).
-- ARGV: prefix, now, limit, full ('1': read every band's ready zset and repair the cached
-- marks, for the sweep's repairs; otherwise the cached marks), cutoff, aging.
-- Returns {hosts found, version (-1: marks left out), ready marks (band, mark pairs), lease
-- mark, due mark, band, its ready times (space-separated), band, ...}; the client ranks the
-- ready times, so no number is formatted here but the bounds.
local full = ARGV[4] == '1'
local ready = ready_marks(full)
local now = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cutoff = ARGV[5] ~= '' and tonumber(ARGV[5])
local aging = tonumber(ARGV[6])
local count = 0
local times = {}
for b, at in pairs(ready) do
  -- The latest ready time this band may contribute: now, or less under the cutoff (a hair
  -- above it, so the rounding of rank - band * aging never drops the host that set it).
  local hi, bound = now, ARGV[2]
  if limit > 0 and cutoff and cutoff - b * aging + 1e-6 < now then
    hi = cutoff - b * aging + 1e-6
    bound = string.format('%.17g', hi)
  end
  if tonumber(at) <= hi then
    if limit > 0 then
      local r = redis.call('ZRANGEBYSCORE', rkey(b), '-inf', bound, 'WITHSCORES', 'LIMIT', 0,
        limit)
      local scores = {}
      for i = 2, #r, 2 do scores[#scores + 1] = r[i] end
      times[#times + 1] = b
      times[#times + 1] = table.concat(scores, ' ')  -- one reply element per band, not per host
      count = count + #scores
    else
      count = count + redis.call('ZCOUNT', rkey(b), '-inf', bound)
    end
  end
end
local out = {count, -1, {}, '', ''}
if full or count == 0 then
  -- Every band, so the index loses any mark of a band this bucket no longer uses.
  local m = marks(true)  -- the ready part from this script's copy: no second read
  out = {count, tonumber(redis.call('HGET', ST, 'iver') or '0'), ready_pairs(m[1], true), m[2],
    m[3]}
end
for _, x in ipairs(times) do out[#out + 1] = x end
return out
