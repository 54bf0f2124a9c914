-- AOPIC: the priority a URL's cash buys, priced by the client (plans.py CashRule price) after a
-- script changed the cash (add.lua, complete.lua), written only while the cash is still the one
-- priced: a worker that grew it again since writes its own price. A URL in the revisit band
-- (a due revisit, promote.lua) keeps its band, as it is now. ARGV: prefix, max_in_flight, then
-- (id, cash, priority) per URL of this bucket.
-- Returns {index update (_common.lua), how many were written}.
local max_in_flight = tonumber(ARGV[2])
local before = marks()
local hosts = {}
local written = 0
for i = 3, #ARGV, 3 do
  local u = ukey(ARGV[i])
  local v = redis.call('HMGET', u, 'cash', 'state', 'host', 'prio')
  if v[1] == ARGV[i + 1] then
    local prio = tonumber(ARGV[i + 2])
    if tonumber(v[4]) < 0 then prio = prio - REVISIT_BAND end
    prio = string.format('%d', prio)
    redis.call('HSET', u, 'prio', prio)
    if v[2] == 'queued' then
      redis.call('ZADD', qkey(v[3]), prio, ARGV[i])
      hosts[v[3]] = true
    end
    written = written + 1
  end
end
for host in pairs(hosts) do resched(host, max_in_flight) end
return {index_update(before), written}
