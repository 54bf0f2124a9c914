-- A host's robots exclusions, re-evaluated by its next robots.txt (crawl/leases.py; the SQLite
-- store's robots_excluded and requeue_excluded). "{ns:bN}:rx:<host>" is the set of the host's URL
-- ids excluded for a robots reason (complete.lua adds them); robots/policy.py ROBOTS_EXCLUSIONS.
-- ARGV: prefix, op, host, then per op:
--   list     limit: returns {id, url, ...} of up to limit URLs still excluded for a robots
--            reason (ids that are not any more leave the set).
--   requeue  max_in_flight, then ids: each still excluded for a robots reason is queued again
--            as a new visit (version + 1, attempts 0). Returns {index update, number queued}.
local op, host = ARGV[2], ARGV[3]
local RX = P .. 'rx:' .. host
local function robots_excluded(r)
  return r and r.state == 'excluded' and (r.reason == 'robots' or r.reason == 'robots_unavailable')
end
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
for i = 5, #ARGV do
  local id = ARGV[i]
  if redis.call('SREM', RX, id) == 1 then
    local r, key, j = rec_get(id)
    if robots_excluded(r) then
      r.state, r.reason, r.attempts = 'queued', nil, '0'
      r.version = string.format('%d', tonumber(r.version) + 1)
      rec_set(key, j, r)
      redis.call('ZADD', qkey(host), r.prio, qmember(id))
      redis.call('HINCRBY', ST, 'queued', 1)
      queued = queued + 1
    end
  end
end
if queued > 0 then resched(host, max_in_flight) end
return {index_update(before), queued}
