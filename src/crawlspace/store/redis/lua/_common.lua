-- Shared prelude, prepended to every script by store/redis/frontier.py (Redis scripts cannot import).
-- KEYS[1] is the bucket's stats hash "{ns:bN}:st"; ARGV[1] is the bucket's key prefix "{ns:bN}:".
-- Every key a script touches is built from that prefix, so it carries the same hash tag and lives
-- in the same cluster slot as KEYS[1]: one script, one shard, no CROSSSLOT.
-- Times travel as the client's decimal strings and are written back verbatim: a Lua number passed
-- to redis.call is formatted with 14 significant digits, which would round epoch timestamps.
local P = ARGV[1]
local ST = KEYS[1]
local READY = P .. 'ready'
local LEASES = P .. 'leases'
local DUE = P .. 'due'

local function hkey(host) return P .. 'h:' .. host end
local function qkey(host) return P .. 'q:' .. host end
local function ukey(id) return P .. 'u:' .. id end

-- Keep the host in the bucket's ready index iff it can take a lease now or later: it has queued
-- URLs, a free token and no robots.txt fetch outstanding (the MemoryFrontier's _reschedule rule).
local function resched(host, max_in_flight)
  local v = redis.call('HMGET', hkey(host), 'inflight', 'rlease', 'next')
  local inflight = tonumber(v[1]) or 0
  local free = (not v[2]) or v[2] == ''
  if free and inflight < max_in_flight and redis.call('ZCARD', qkey(host)) > 0 then
    redis.call('ZADD', READY, v[3] or '-inf', host)
  else
    redis.call('ZREM', READY, host)
  end
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

-- This bucket's marks in the crawl-wide index (store/redis/index.py): its earliest ready time,
-- its earliest lease expiry and its earliest due revisit, '' for none. Scores come back as
-- Redis formats them (exact). Only scripts that can change the due set read its mark
-- (`due` true); the others send '*', which the index reads as "unchanged" (one command less
-- per call on the lease and admission paths).
local function marks(due)
  local r = redis.call('ZRANGE', READY, 0, 0, 'WITHSCORES')
  local l = redis.call('ZRANGE', LEASES, 0, 0, 'WITHSCORES')
  local d = due and redis.call('ZRANGE', DUE, 0, 0, 'WITHSCORES') or {'*', '*'}
  return {r[2] or '', l[2] or '', d[2] or ''}
end

-- {version, ready mark, lease mark, due mark} for the client to copy into the index, or {} if
-- the marks are as `before` (nil: always). The version orders replies that reach the index out
-- of order.
local function index_update(before, due)
  local m = marks(due)
  if before and m[1] == before[1] and m[2] == before[2] and m[3] == before[3] then return {} end
  return {redis.call('HINCRBY', ST, 'iver', 1), m[1], m[2], m[3]}
end
