-- Shared prelude, prepended to every script by store/redis/frontier.py (Redis scripts cannot import).
-- KEYS[1] is the bucket's stats hash "{ns:bN}:st"; ARGV[1] is the bucket's key prefix "{ns:bN}:".
-- Every key a script touches is built from that prefix, so it carries the same hash tag and lives
-- in the same cluster slot as KEYS[1]: one script, one shard, no CROSSSLOT.
-- Times travel as the client's decimal strings and are written back verbatim: a Lua number passed
-- to redis.call is formatted with 14 significant digits, which would round epoch timestamps.
-- FRONT_ORIGIN, FRONT_WIDTH, FRONT_BANDS and REVISIT_BAND are set by the line the client puts
-- before this prelude (the crawl's FrontQueues, frontier/front_queues.py).
local P = ARGV[1]
local ST = KEYS[1]
local READY = P .. 'ready:'  -- .. band: one ready zset per front band
local LEASES = P .. 'leases'
local DUE = P .. 'due'

-- Front bands whose ready zset this script changed, for ready_marks.
local BANDS_TOUCHED = {}

local function hkey(host) return P .. 'h:' .. host end
local function qkey(host) return P .. 'q:' .. host end
local function ukey(id) return P .. 'u:' .. id end

-- FrontQueues.band: the front band of a host whose best queued URL has priority `p`.
local function band_of(p)
  if p < 0 then p = p + REVISIT_BAND end
  return math.min(math.max(math.floor((p - FRONT_ORIGIN) / FRONT_WIDTH), 0), FRONT_BANDS - 1)
end

-- Keep the host in the ready zset of its front band iff it can take a lease now or later: it
-- has queued URLs, a free token and no robots.txt fetch outstanding (the MemoryFrontier's
-- _reschedule rule). Its hash remembers the band, so a move leaves no stale entry behind.
local function resched(host, max_in_flight)
  local h = hkey(host)
  local v = redis.call('HMGET', h, 'inflight', 'rlease', 'next', 'band')
  local inflight = tonumber(v[1]) or 0
  local free = (not v[2]) or v[2] == ''
  local old = v[4] or ''
  local head = {}
  if free and inflight < max_in_flight then
    head = redis.call('ZRANGE', qkey(host), 0, 0, 'WITHSCORES')
  end
  local band = ''
  if #head > 0 then band = tostring(band_of(tonumber(head[2]))) end
  if old ~= '' and old ~= band then
    redis.call('ZREM', READY .. old, host)
    BANDS_TOUCHED[old] = true
  end
  if band ~= '' then
    redis.call('ZADD', READY .. band, v[3] or '-inf', host)
    BANDS_TOUCHED[band] = true
  end
  if old ~= band then redis.call('HSET', h, 'band', band) end
end

-- The earliest ready time of each band, comma-separated ('' for an empty band). The bucket's
-- stats hash keeps the last string ('rm'): only bands this script touched (resched) are read
-- again, so a script costs one or two reads here instead of one per band. `full` reads every
-- band (peek: the sweep's reads, index.py, so they repair this cache too).
local function ready_marks(full)
  local cached = redis.call('HGET', ST, 'rm')
  local parts = {}
  if cached and not full then
    for mark in string.gmatch(cached .. ',', '([^,]*),') do parts[#parts + 1] = mark end
  end
  for b = 0, FRONT_BANDS - 1 do
    if full or (not cached) or BANDS_TOUCHED[tostring(b)] then
      local r = redis.call('ZRANGE', READY .. b, 0, 0, 'WITHSCORES')
      parts[b + 1] = r[2] or ''
    end
  end
  local marks = table.concat(parts, ',')
  if marks ~= cached then redis.call('HSET', ST, 'rm', marks) end
  BANDS_TOUCHED = {}
  return marks
end

-- Up to `limit` hosts ready at `now` (a client decimal string) with the best ranks
-- (FrontQueues.rank: ready time + band * aging): {host, rank, host, rank, ...}, best first.
-- `keep` (default `limit`) of the up to `limit` read per band are returned.
local function best_ready(now, limit, aging, keep)
  local found = {}
  for b = 0, FRONT_BANDS - 1 do
    local r = redis.call('ZRANGEBYSCORE', READY .. b, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
    for i = 1, #r, 2 do
      found[#found + 1] = {tonumber(r[i + 1]) + b * aging, #found, r[i]}
    end
  end
  -- Ties keep band order, then ready order within a band (FrontQueues.merge).
  table.sort(found, function(x, y) return x[1] < y[1] or (x[1] == y[1] and x[2] < y[2]) end)
  local out = {}
  for i = 1, math.min(keep or limit, #found) do
    out[#out + 1] = found[i][3]
    out[#out + 1] = found[i][1]
  end
  return out
end

-- The host's politeness clock only moves forward; '' means no request was made.
local function move_clock(host, at)
  if at == '' then return end
  local cur = redis.call('HGET', hkey(host), 'next')
  if (not cur) or tonumber(at) > tonumber(cur) then
    redis.call('HSET', hkey(host), 'next', at)
  end
end

-- The URL's current lease, or false: same lease id, version and worker epoch, still leased.
local function current_page(id, lid, version, epoch)
  local v = redis.call('HMGET', ukey(id), 'state', 'lease', 'version', 'epoch', 'host')
  if v[1] ~= 'leased' or v[2] ~= lid or v[3] ~= version or v[4] ~= epoch then
    return false
  end
  return v[5]
end

local function end_lease(host, member)
  redis.call('ZREM', LEASES, member)
  redis.call('HINCRBY', hkey(host), 'inflight', -1)
  redis.call('HINCRBY', ST, 'inflight', -1)
end

-- Back to the host queue: a release (tried = 0) does not count as an attempt, an expiry does.
local function give_back_page(host, id, lid, tried, max_in_flight)
  local u = ukey(id)
  redis.call('HSET', u, 'state', 'queued', 'lease', '', 'epoch', '')
  if tried == 0 then redis.call('HINCRBY', u, 'attempts', -1) end
  redis.call('ZADD', qkey(host), redis.call('HGET', u, 'prio'), id)
  redis.call('HINCRBY', ST, 'queued', 1)
  end_lease(host, 'P|' .. id .. '|' .. lid)
  resched(host, max_in_flight)
end

local function give_back_robots(host, lid, max_in_flight)
  redis.call('HSET', hkey(host), 'rlease', '')
  end_lease(host, 'R|' .. lid .. '|' .. host)
  resched(host, max_in_flight)
end

-- This bucket's marks in the crawl-wide index (store/redis/index.py): the earliest ready time
-- of each front band (ready_marks), its earliest lease expiry and its earliest due revisit, ''
-- for none. Scores come back as
-- Redis formats them (exact). Only scripts that can change the due set read its mark
-- (`due` true); the others send '*', which the index reads as "unchanged" (one command less
-- per call on the lease and admission paths).
local function marks(due, full)
  local l = redis.call('ZRANGE', LEASES, 0, 0, 'WITHSCORES')
  local d = due and redis.call('ZRANGE', DUE, 0, 0, 'WITHSCORES') or {'*', '*'}
  return {ready_marks(full), l[2] or '', d[2] or ''}
end

-- {version, ready mark, lease mark, due mark} for the client to copy into the index, or {} if
-- the marks are as `before` (nil: always). The version orders replies that reach the index out
-- of order.
local function index_update(before, due)
  local m = marks(due)
  if before and m[1] == before[1] and m[2] == before[2] and m[3] == before[3] then return {} end
  return {redis.call('HINCRBY', ST, 'iver', 1), m[1], m[2], m[3]}
end
