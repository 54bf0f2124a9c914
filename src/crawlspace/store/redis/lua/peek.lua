-- This bucket's number of hosts ready at ARGV[2] and the ready times of the first `limit` of them
-- in each band, and its index version and marks (_common.lua) when they are wanted: with `full`,
-- or when no host is ready (the index sent the client here in vain and is corrected). For
-- store/redis/index.py. ARGV: prefix, now, limit, full ('1': read every band's ready zset and
-- repair the cached marks, for the sweep's repairs; otherwise the cached marks).
-- Returns {ready hosts, version (-1: marks left out), ready marks (band, mark pairs), lease mark,
-- due mark, band, its ready times (space-separated), band, ...}; the client ranks the ready times
-- (FrontQueues.rank), so no number is formatted here.
local full = ARGV[4] == '1'
local ready = ready_marks(full)
local now = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local count = 0
local times = {}
for b, at in pairs(ready) do
  if tonumber(at) <= now then
    local n
    if limit > 0 then
      local r = redis.call('ZRANGEBYSCORE', rkey(b), '-inf', ARGV[2], 'WITHSCORES', 'LIMIT', 0,
        limit)
      local scores = {}
      for i = 2, #r, 2 do scores[#scores + 1] = r[i] end
      times[#times + 1] = b
      times[#times + 1] = table.concat(scores, ' ')  -- one reply element per band, not per host
      n = #scores
    end
    if not n or n == limit then n = redis.call('ZCOUNT', rkey(b), '-inf', ARGV[2]) end
    count = count + n
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
