-- Copy bucket marks into the crawl-wide index (store/redis/index.py). Its keys share the tag
-- "{ns:idx}", so the prelude's names mean: ST "{ns:idx}:ver" (bucket -> version of its marks),
-- READY .. band "{ns:idx}:ready:<band>", LEASES "{ns:idx}:leases" and DUE "{ns:idx}:due"
-- (bucket -> its mark).
-- ARGV: prefix, forced ('1': a sweep's fresh reads, applied whatever their version), then 5 per
-- bucket: bucket, version, ready marks (one per front band, comma-separated), lease mark, due
-- mark ('' for none, '*' unchanged). An unforced mark older than the one in place is dropped, so
-- replies reaching the index out of order leave the newer marks. (A due mark sent by a
-- completion can be dropped that way behind a newer '*' of a lease: the sweep re-reads the
-- bucket within sweep_seconds, index.py.)
-- Returns the number of buckets written.
local forced = ARGV[2] == '1'
local written = 0

local function put(key, mark, b)
  if mark == '' then
    redis.call('ZREM', key, b)
  elseif mark ~= '*' then  -- '*': a script that cannot move this mark left it out
    redis.call('ZADD', key, mark, b)
  end
end

for i = 3, #ARGV, 5 do
  local b = ARGV[i]
  if forced or tonumber(ARGV[i + 1]) >= tonumber(redis.call('HGET', ST, b) or '-1') then
    redis.call('HSET', ST, b, ARGV[i + 1])
    local band = 0
    for mark in string.gmatch(ARGV[i + 2] .. ',', '([^,]*),') do
      put(READY .. band, mark, b)
      band = band + 1
    end
    put(LEASES, ARGV[i + 3], b)
    put(DUE, ARGV[i + 4], b)
    written = written + 1
  end
end
return written
