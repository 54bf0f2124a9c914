-- Grant up to `limit` leases from this bucket's hosts whose next-allowed time is <= now.
-- ARGV: prefix, now, limit, expires_at, epoch, max_in_flight, bucket, revisit share, aging.
-- Hosts go in order of rank across the front bands (best_ready, bands.py).
-- Returns {index update (_common.lua), leases}: 22 fields per lease: kind, lease id, host, url,
-- id, version, attempt, depth, hops, etag, last_modified ('' for none), source, host backoff
-- level, host failure streak, the recrawl state: revisit interval, content hash and sitemap
-- changefreq ('' for none), AOPIC's cash and Lambda paid ('' for none, frontier/aopic.py), and
-- the URL's queue priority (records.py Lease.priority) and when a page last linked it ('' not
-- kept: Lease.linked_at, frontier/retirement.py), and the id of the page that first led to it
-- ('' none: Lease.via_id).
-- A host queue holds two priority bands: promoted revisits below 0 (promote.lua), new URLs at
-- 0 and above. When a host has both, about `revisit share` of its contested leases take a
-- revisit (a deficit count per host: rv, nw), so neither freshness nor discovery starves.
local now = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local expires_at, epoch = ARGV[4], ARGV[5]
local max_in_flight = tonumber(ARGV[6])
local share = tonumber(ARGV[8])
local aging = tonumber(ARGV[9])
local out = {}

-- The host's next URL id, taken off its queue: the head, unless the head is a revisit, new URLs
-- are queued too and the share says this lease is a new URL's. Without revisits: one ZPOPMIN.
local function take(host)
  local q = qkey(host)
  local head = redis.call('ZPOPMIN', q)
  if #head == 0 then return nil end
  if tonumber(head[2]) >= 0 then return qmember_id(head[1]) end
  local new = redis.call('ZRANGEBYSCORE', q, 0, '+inf', 'LIMIT', 0, 1)
  if #new == 0 then return qmember_id(head[1]) end
  local h = hkey(host)
  local t = redis.call('HMGET', h, 'rv', 'nw')
  local rv, nw = tonumber(t[1] or '0'), tonumber(t[2] or '0')
  if rv < share * (rv + nw + 1) then
    redis.call('HINCRBY', h, 'rv', 1)
    return qmember_id(head[1])
  end
  redis.call('HINCRBY', h, 'nw', 1)
  redis.call('ZADD', q, head[2], head[1])
  redis.call('ZREM', q, new[1])
  return qmember_id(new[1])
end

local granted, dequeued = 0, 0
-- The bucket's counters move once per call, not per grant (nothing here reads them meanwhile).
local seq = tonumber(redis.call('HGET', ST, 'lseq') or '0')
local first_seq = seq
local lid_prefix = 'e' .. epoch .. '.b' .. ARGV[7] .. '.'
-- Bounded: every grant takes a token, and a host without a free token leaves the index.
while granted < limit do
  local ranked = best_ready(ARGV[2], limit - granted, aging, nil, band_heads())
  if #ranked == 0 then break end
  for i = 1, #ranked, 3 do
    local host = ranked[i]
    local h = hkey(host)
    seq = seq + 1
    local lid = lid_prefix .. string.format('%d', seq)
    local hv = redis.call('HMGET', h, 'rexp', 'backoff', 'failures')
    if (not hv[1]) or tonumber(hv[1]) <= now then
      -- RFC 9309 §2.4: the host's current rules come before any page of it.
      redis.call('HSET', h, 'rlease', lid)
      redis.call('ZADD', LEASES, expires_at, 'R|' .. lid .. '|' .. host)
      redis.call('HINCRBY', h, 'inflight', 1)
      for _, f in ipairs({'robots', lid, host, '', '0', '0', '1', '0', '0', '', '', 'robots', '0',
          '0', '', '', '', '', '', '0', '', ''}) do
        out[#out + 1] = f
      end
      granted = granted + 1
    else
      local id = take(host)
      local r, key, at
      if id then  -- (a record always exists: rec_get's nil is a guard, not a path)
        dequeued = dequeued + 1
        r, key, at = rec_get(id)
      end
      if r then
        r.attempts = string.format('%d', (tonumber(r.attempts) or 0) + 1)
        r.state, r.lease, r.epoch = 'leased', lid, epoch
        rec_set(key, at, r)
        redis.call('ZADD', LEASES, expires_at, 'P|' .. id .. '|' .. lid)
        redis.call('HINCRBY', h, 'inflight', 1)
        local rec = {'page', lid, host, rec_url(r, host), id, r.version, r.attempts, r.depth,
          r.hops, r.etag or '', r.lm or '', r.src, hv[2] or '0', hv[3] or '0', r.ri or '',
          r.ch or '', r.cf or '', r.cash or '', r.lp or '', r.prio or '0', r.lk or '', r.via or ''}
        for _, f in ipairs(rec) do out[#out + 1] = f end
        granted = granted + 1
      end
    end
    resched(host, max_in_flight)
  end
end
if seq > first_seq then redis.call('HSET', ST, 'lseq', string.format('%d', seq)) end
if granted > 0 then redis.call('HINCRBY', ST, 'inflight', granted) end
if dequeued > 0 then redis.call('HINCRBY', ST, 'queued', -dequeued) end
-- Always: the index sent the client here, so a mark that was wrong is corrected at once.
return {index_update(nil), out}
