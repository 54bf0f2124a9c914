-- Enqueue-if-new for one bucket. ARGV: prefix, now, cap (-1: no per-host budget), max_in_flight,
-- bucket, buckets, then 6 fields per candidate: url, host, depth, priority, hops, source.
-- Returns {index update (_common.lua), {added, seen, rejected}}.
-- The bucket's seen hash (url -> id) is the exact seen set: a URL is admitted at most once.
-- Counters are read once, kept in Lua and written back once (the script is atomic), so a URL
-- costs three writes: the seen entry, its record and its queue entry.
local cap = tonumber(ARGV[3])
local max_in_flight = tonumber(ARGV[4])
local bucket = tonumber(ARGV[5])
local buckets = tonumber(ARGV[6])
local SEEN = P .. 'seen'
local before = marks()
local useq = tonumber(redis.call('HGET', ST, 'useq') or '0')
local admitted = {}  -- host -> admitted count, read lazily
local touched = {}   -- host -> URLs admitted by this call
local added, seen, rejected = 0, 0, 0
for i = 7, #ARGV, 6 do
  local url, host = ARGV[i], ARGV[i + 1]
  -- Ids are unique across buckets (bucket + counter x buckets) and fixed-width, so the queue's
  -- lexicographic order among equal priorities is admission order.
  local id = string.format('%016d', (useq + 1) * buckets + bucket)
  if redis.call('HSETNX', SEEN, url, id) == 0 then
    seen = seen + 1
  else
    useq = useq + 1
    if admitted[host] == nil then
      admitted[host] = tonumber(redis.call('HGET', hkey(host), 'admitted') or '0')
    end
    local state = 'queued'
    if cap >= 0 and admitted[host] >= cap then state = 'excluded' end
    redis.call('HSET', ukey(id), 'url', url, 'host', host, 'depth', ARGV[i + 2],
      'prio', ARGV[i + 3], 'hops', ARGV[i + 4], 'src', ARGV[i + 5], 'state', state,
      'version', '1')
    if state == 'excluded' then
      -- Remembered, so the link seen again later counts as seen, not as a new rejection.
      redis.call('HSET', ukey(id), 'reason', 'budget_host')
      rejected = rejected + 1
    else
      admitted[host] = admitted[host] + 1
      touched[host] = (touched[host] or 0) + 1
      redis.call('ZADD', qkey(host), ARGV[i + 3], id)
      added = added + 1
    end
  end
end
redis.call('HSET', ST, 'useq', string.format('%d', useq))
redis.call('HINCRBY', ST, 'queued', added)
for host, n in pairs(touched) do
  redis.call('HINCRBY', hkey(host), 'admitted', n)
  resched(host, max_in_flight)
end
return {index_update(before), {added, seen, rejected}}
