-- Recrawl: queue this bucket's due URLs again, earliest due first (the SQLite store's
-- promote_due). ARGV: prefix, now, limit, max_in_flight, revisit band.
-- A revisit is a new visit: its version is bumped before it can be leased, so it gets its own
-- completion event; its attempts start again; it joins its host queue in the revisit band
-- (priority minus the band, lease.lua), remembering when it became due ('due').
-- Only fetched, not_modified and failed URLs are revisited (lifecycle.py REVISITS); a
-- URL in any other state (queued again meanwhile) just leaves the due set.
-- Returns {index update (_common.lua), number queued}.
local limit = tonumber(ARGV[3])
local max_in_flight = tonumber(ARGV[4])
local band = tonumber(ARGV[5])
local revisitable = {fetched = true, not_modified = true, failed = true}
local before = marks(true)
local promoted = 0
local hosts = {}
local due = redis.call('ZRANGEBYSCORE', DUE, '-inf', ARGV[2], 'WITHSCORES', 'LIMIT', 0, limit)
for i = 1, #due, 2 do
  local id, at = due[i], due[i + 1]
  redis.call('ZREM', DUE, id)
  local r, key, j = rec_get(id)
  if r and revisitable[r.state] then
    local prio = tonumber(r.prio)
    if prio < 0 then prio = prio + band end
    r.prio = string.format('%d', prio - band)
    r.state, r.reason, r.attempts, r.due, r.nf = 'queued', nil, '0', at, nil
    r.version = string.format('%d', tonumber(r.version) + 1)
    rec_set(key, j, r)
    local host = host_of(r)
    redis.call('ZADD', qkey(host), r.prio, qmember(id))
    redis.call('HINCRBY', ST, 'queued', 1)
    hosts[host] = true
    promoted = promoted + 1
  end
end
for host in pairs(hosts) do resched(host, max_in_flight) end
return {index_update(before, true), promoted}
