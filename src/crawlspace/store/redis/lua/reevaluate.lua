-- A host's robots exclusions, re-evaluated by its next robots.txt (crawl/leases.py; the SQLite
-- store's robots_excluded and requeue_excluded). "{ns:bN}:rx:<host>" is the set of the host's URL
-- ids excluded for a robots reason (complete.lua adds them); lifecycle.py ROBOTS_EXCLUSIONS.
-- ARGV: prefix, op, then per op:
--   list     host, limit: returns {id, url, ...} of up to limit URLs still excluded for a
--            robots reason (ids that are not any more leave the set).
--   requeue  host, max_in_flight, then ids: each still excluded for a robots reason is queued
--            again as a new visit (version + 1, attempts 0). Returns {index update, queued}.
--   lift     reason, now, max_in_flight: on every host of the bucket, its URLs excluded for
--            reason queued again as in requeue, and its robots.txt answer expired at now if it
--            failed with reason (Frontier.lift_exclusion). Returns {index update, queued}.
local op, host = ARGV[2], ARGV[3]
local function robots_excluded(r)
  return r and r.state == 'excluded' and (r.reason == 'robots' or r.reason == 'robots_unavailable'
    or r.reason == 'blocked_address')
end

-- Queue again the URL `id` of `host` (a member of its rx set, taken out) if `keep(r)` holds.
local function requeue(host, id, keep)
  local r, key, j = rec_get(id)
  if not (robots_excluded(r) and keep(r)) then return 0 end
  r.state, r.reason, r.attempts = 'queued', nil, '0'
  r.version = string.format('%d', tonumber(r.version) + 1)
  rec_set(key, j, r)
  redis.call('ZADD', qkey(host), r.prio, qmember(id))
  redis.call('HINCRBY', ST, 'queued', 1)
  return 1
end

if op == 'lift' then
  local reason, now, max_in_flight = ARGV[3], ARGV[4], tonumber(ARGV[5])
  local before = marks()
  local queued = 0
  local function lifted(r) return r.reason == reason end
  for _, h in ipairs(redis.call('LRANGE', P .. 'hs', 0, -1)) do
    local robots = P .. 'r:' .. h
    if redis.call('HGET', robots, 'error') == reason then
      redis.call('HSET', robots, 'expires_at', now)
      redis.call('HSET', hkey(h), 'rexp', now)
    end
    local rx, n = P .. 'rx:' .. h, 0
    for _, id in ipairs(redis.call('SMEMBERS', rx)) do
      local done = requeue(h, id, lifted)
      if done == 1 then redis.call('SREM', rx, id) end
      n = n + done
    end
    if n > 0 then resched(h, max_in_flight) end
    queued = queued + n
  end
  return {index_update(before), queued}
end

local RX = P .. 'rx:' .. host
if op == 'list' then
  local limit, out = tonumber(ARGV[4]), {}
  for _, id in ipairs(redis.call('SMEMBERS', RX)) do
    local r = rec_get(id)
    if not robots_excluded(r) then
      redis.call('SREM', RX, id)
    elseif #out < 2 * limit then
      out[#out + 1] = id; out[#out + 1] = rec_url(r, host)
    end
  end
  return out
end
local max_in_flight = tonumber(ARGV[4])
local before = marks()
local queued = 0
local function any(r) return true end
for i = 5, #ARGV do
  local id = ARGV[i]
  if redis.call('SREM', RX, id) == 1 then queued = queued + requeue(host, id, any) end
end
if queued > 0 then resched(host, max_in_flight) end
return {index_update(before), queued}
