-- Shared prelude, prepended to every script by store/redis/frontier.py (Redis scripts cannot import).
-- KEYS[1] is the bucket's stats hash "{ns:bN}:st"; ARGV[1] is the bucket's key prefix "{ns:bN}:".
-- Every key a script touches is built from that prefix, so it carries the same hash tag and lives
-- in the same cluster slot as KEYS[1]: one script, one shard, no CROSSSLOT.
-- Times travel as the client's decimal strings and are written back verbatim: a Lua number passed
-- to redis.call is formatted with 14 significant digits, which would round epoch timestamps.
-- FRONT_ORIGIN, FRONT_WIDTH, FRONT_BANDS and REVISIT_BAND are set by the lines the client puts
-- before this prelude (the crawl's FrontQueues, bands.py). Bands are numbers 0 .. FRONT_BANDS - 1 here; string
-- building is kept off the hot paths (a tostring costs about as much as a Redis command).
local P = ARGV[1]
local ST = KEYS[1]
local READY = P .. 'ready:'  -- .. band: one ready zset per front band
local LEASES = P .. 'leases'
local DUE = P .. 'due'

local READY_KEYS = {}
local function rkey(b)
  local k = READY_KEYS[b]
  if not k then k = READY .. b; READY_KEYS[b] = k end
  return k
end

-- Front bands whose first score this script may have moved, for ready_marks; this script's
-- copy of the bucket's ready marks (ready_marks: band -> first score, kept current) and that
-- copy as the script found it.
local BANDS_TOUCHED = {}
local MARKS = nil
local INITIAL = nil

-- The first entry of LEASES as marks() last read it ({member, score}; nil: read it again), so
-- a completion reads LEASES once. Only end_lease removes from LEASES after a marks() call;
-- scripts that add to it (lease.lua) or remove otherwise (expire.lua) call marks() after.
local LEASE_HEAD = nil

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
-- A band is marked touched (its first score read again, ready_marks) only when this can have
-- moved that score: a host left it, changed its score there, or joined it ahead of its mark.
local function resched(host, max_in_flight)
  local h = hkey(host)
  local v = redis.call('HMGET', h, 'inflight', 'rlease', 'next', 'band')
  local inflight = tonumber(v[1]) or 0
  local free = (not v[2]) or v[2] == ''
  local old = tonumber(v[4] or '')
  local band = nil
  if free and inflight < max_in_flight then
    local head = redis.call('ZRANGE', qkey(host), 0, 0, 'WITHSCORES')
    if #head > 0 then band = band_of(tonumber(head[2])) end
  end
  if old and old ~= band then
    redis.call('ZREM', rkey(old), host)
    BANDS_TOUCHED[old] = true
  end
  if band then
    local at = v[3] or '-inf'
    -- CH: 0 when the host was there with this very score (nothing moved).
    if redis.call('ZADD', rkey(band), 'CH', at, host) == 1 and not BANDS_TOUCHED[band] then
      -- MARKS[band] is current unless the band is touched already (ready_marks).
      local mark = old ~= band and MARKS and tonumber(MARKS[band] or '')
      if not (mark and tonumber(at) and tonumber(at) >= mark) then BANDS_TOUCHED[band] = true end
    end
  end
  if old ~= band then redis.call('HSET', h, 'band', band or '') end
end

-- The earliest ready time of each non-empty band: a map band -> score as Redis formats it. The
-- bucket keeps it in a zset ({ns:bN}:rm, band -> score), read once per script; only the bands
-- this script touched (resched) are read again. So a script reads one small zset here instead of
-- every band, and loops over the one or two bands a bucket uses, not all of them. `full` reads
-- every band (peek, for the sweep's repairs, index.py; it repairs this copy too).
local function read_marks()
  local marks = {}
  local r = redis.call('ZRANGE', P .. 'rm', 0, -1, 'WITHSCORES')
  for i = 1, #r, 2 do marks[tonumber(r[i])] = r[i + 1] end
  return marks
end

local function ready_marks(full)
  if not MARKS then
    MARKS = read_marks()
    INITIAL = {}
    for b, at in pairs(MARKS) do INITIAL[b] = at end
  end
  local bands = BANDS_TOUCHED
  if full then
    bands = {}
    for b = 0, FRONT_BANDS - 1 do bands[b] = true end
  end
  for b in pairs(bands) do
    local r = redis.call('ZRANGE', rkey(b), 0, 0, 'WITHSCORES')
    local at = r[2]
    if at ~= MARKS[b] then
      if at then redis.call('ZADD', P .. 'rm', at, b) else redis.call('ZREM', P .. 'rm', b) end
      MARKS[b] = at
    end
  end
  BANDS_TOUCHED = {}
  return MARKS
end

-- The first ready time of each non-empty band as a number (ready_marks).
local function band_heads()
  local heads = {}
  for b, at in pairs(ready_marks()) do heads[b] = tonumber(at) end
  return heads
end

-- Up to `limit` hosts ready at `now` (a client decimal string) with the best ranks
-- (FrontQueues.rank: ready time + band * aging): {host, band, ready time, host, ...}, best
-- first, each ready time as Redis formats it.
-- `keep` (default `limit`) of the up to `limit` read per band are returned. `heads` (band_heads)
-- skips the bands with no host ready at `now`; without it every band is read.
local function best_ready(now, limit, aging, keep, heads)
  local t = tonumber(now)
  if not heads then
    heads = {}
    for b = 0, FRONT_BANDS - 1 do heads[b] = t end
  end
  local bands = {}
  for b, head in pairs(heads) do
    if head <= t then bands[#bands + 1] = b end
  end
  local out = {}
  if #bands == 1 then
    -- One band: its own order (ready time, then host) is the rank order, nothing to merge.
    local b = bands[1]
    local r = redis.call('ZRANGEBYSCORE', rkey(b), '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
    for i = 1, 2 * math.min(keep or limit, #r / 2), 2 do
      out[#out + 1] = r[i]
      out[#out + 1] = b
      out[#out + 1] = r[i + 1]
    end
    return out
  end
  local found = {}
  for _, b in ipairs(bands) do
    local r = redis.call('ZRANGEBYSCORE', rkey(b), '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
    for i = 1, #r, 2 do
      -- Ties keep band order, then ready order within a band (FrontQueues.merge).
      found[#found + 1] = {tonumber(r[i + 1]) + b * aging, b * 1e9 + i, r[i], b, r[i + 1]}
    end
  end
  if #found > 1 then
    table.sort(found, function(x, y) return x[1] < y[1] or (x[1] == y[1] and x[2] < y[2]) end)
  end
  for i = 1, math.min(keep or limit, #found) do
    out[#out + 1] = found[i][3]
    out[#out + 1] = found[i][4]
    out[#out + 1] = found[i][5]
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
  -- Another lease than the first ended: the first (and the lease mark) stays.
  if not (LEASE_HEAD and LEASE_HEAD[1] and LEASE_HEAD[1] ~= member) then LEASE_HEAD = nil end
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
-- for none. Scores come back as Redis formats them (exact). Only scripts that can change the due
-- set read its mark (`due` true); the others send '*', which the index reads as "unchanged" (one
-- command less per call on the lease and admission paths).
local function marks(due)
  if not LEASE_HEAD then LEASE_HEAD = redis.call('ZRANGE', LEASES, 0, 0, 'WITHSCORES') end
  local d = due and redis.call('ZRANGE', DUE, 0, 0, 'WITHSCORES') or {'*', '*'}
  return {ready_marks(), LEASE_HEAD[2] or '', d[2] or ''}
end

-- The ready marks as the index takes them: {band, mark, band, mark, ...} for every band
-- non-empty now or when this script began ('' once emptied); `full`: every band. A band empty
-- throughout is left out: at worst the index keeps a mark for a band with no host (a wasted
-- call, which corrects it), never hides a ready host.
local function ready_pairs(marks, full)
  local out = {}
  if full then
    for b = 0, FRONT_BANDS - 1 do
      out[#out + 1] = b
      out[#out + 1] = marks[b] or ''
    end
    return out
  end
  for b, at in pairs(marks) do
    out[#out + 1] = b
    out[#out + 1] = at
  end
  for b in pairs(INITIAL) do
    if not marks[b] then
      out[#out + 1] = b
      out[#out + 1] = ''
    end
  end
  return out
end

-- {version, ready marks (ready_pairs), lease mark, due mark} for the client to copy into the
-- index, or {} if nothing changed since this script began (`before`: its first marks(); nil:
-- always). The version orders replies that reach the index out of order.
local function index_update(before, due)
  local m = marks(due)
  if before and m[2] == before[2] and m[3] == before[3] then
    local same = true
    for b, at in pairs(m[1]) do
      if INITIAL[b] ~= at then same = false; break end
    end
    for b in pairs(INITIAL) do
      if not m[1][b] then same = false; break end
    end
    if same then return {} end
  end
  return {redis.call('HINCRBY', ST, 'iver', 1), ready_pairs(m[1]), m[2], m[3]}
end
