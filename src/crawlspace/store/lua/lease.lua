-- Grant up to `limit` leases from this bucket's hosts whose next-allowed time is <= now.
-- ARGV: prefix, now, limit, expires_at, epoch, max_in_flight, bucket.
-- Returns {index update (_common.lua), leases}: 14 fields per lease: kind, lease id, host, url,
-- id, version, attempt, depth, hops, etag, last_modified ('' for none), source, host backoff
-- level, host failure streak.
local now = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local expires_at, epoch = ARGV[4], ARGV[5]
local max_in_flight = tonumber(ARGV[6])
local out = {}
local granted = 0
-- Bounded: every grant takes a token, and a host without a free token leaves the index.
while granted < limit do
  local hosts = redis.call('ZRANGEBYSCORE', READY, '-inf', ARGV[2], 'LIMIT', 0, limit - granted)
  if #hosts == 0 then break end
  for _, host in ipairs(hosts) do
    local h = hkey(host)
    local lid = 'e' .. epoch .. '.b' .. ARGV[7] .. '.'
      .. string.format('%d', redis.call('HINCRBY', ST, 'lseq', 1))
    local rexp = redis.call('HGET', h, 'rexp')
    if (not rexp) or tonumber(rexp) <= now then
      -- RFC 9309 §2.4: the host's current rules come before any page of it.
      redis.call('HSET', h, 'rlease', lid)
      redis.call('ZADD', LEASES, expires_at, 'R|' .. lid .. '|' .. host)
      redis.call('HINCRBY', h, 'inflight', 1)
      redis.call('HINCRBY', ST, 'inflight', 1)
      for _, f in ipairs({'robots', lid, host, '', '0', '0', '1', '0', '0', '', '', 'robots', '0', '0'}) do
        out[#out + 1] = f
      end
      granted = granted + 1
    else
      local popped = redis.call('ZPOPMIN', qkey(host))
      if #popped > 0 then
        local id = popped[1]
        local u = ukey(id)
        local attempt = redis.call('HINCRBY', u, 'attempts', 1)
        redis.call('HSET', u, 'state', 'leased', 'lease', lid, 'epoch', epoch)
        redis.call('ZADD', LEASES, expires_at, 'P|' .. id .. '|' .. lid)
        redis.call('HINCRBY', h, 'inflight', 1)
        redis.call('HINCRBY', ST, 'inflight', 1)
        redis.call('HINCRBY', ST, 'queued', -1)
        local v = redis.call('HMGET', u, 'url', 'version', 'depth', 'hops', 'etag', 'lm', 'src')
        local b = redis.call('HMGET', h, 'backoff', 'failures')
        local rec = {'page', lid, host, v[1], id, v[2], string.format('%d', attempt), v[3], v[4],
          v[5] or '', v[6] or '', v[7], b[1] or '0', b[2] or '0'}
        for _, f in ipairs(rec) do out[#out + 1] = f end
        granted = granted + 1
      end
    end
    resched(host, max_in_flight)
  end
end
-- Always: the index sent the client here, so a mark that was wrong is corrected at once.
return {index_update(nil), out}
