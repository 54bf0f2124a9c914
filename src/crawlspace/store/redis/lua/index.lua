-- Copy bucket marks into the crawl-wide index (store/redis/index.py). Its keys share the tag
-- "{ns:idx}", so the prelude's names mean: ST "{ns:idx}:ver" (bucket -> version of its marks),
-- READY .. band "{ns:idx}:ready:<band>", LEASES "{ns:idx}:leases" and DUE "{ns:idx}:due"
-- (bucket -> its mark).
-- ARGV: prefix, forced ('1': a sweep's fresh reads, applied whatever their version), then per
-- bucket: bucket, version, n, n pairs (front band, its ready mark), lease mark, due mark ('' for
-- none, '*' unchanged; a band not sent is unchanged). An unforced mark older than the one in
-- place is dropped, so replies reaching the index out of order leave the newer marks. (A due
-- mark sent by a completion can be dropped that way behind a newer '*' of a lease: the sweep
-- re-reads the bucket within sweep_seconds, index.py.)
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

local i = 3
while i <= #ARGV do
  local b, version, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local after = i + 3 + 2 * n  -- the lease mark
  if forced or tonumber(version) >= tonumber(redis.call('HGET', ST, b) or '-1') then
    redis.call('HSET', ST, b, version)
    for j = i + 3, after - 1, 2 do put(rkey(ARGV[j]), ARGV[j + 1], b) end
    put(LEASES, ARGV[after], b)
    put(DUE, ARGV[after + 1], b)
    written = written + 1
  end
  i = after + 2
end
return written
