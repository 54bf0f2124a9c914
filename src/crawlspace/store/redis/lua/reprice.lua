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
  local r, key, j = rec_get(ARGV[i])
  if r and r.cash == ARGV[i + 1] then
    local prio = tonumber(ARGV[i + 2])
    if tonumber(r.prio) < 0 then prio = prio - REVISIT_BAND end
    r.prio = string.format('%d', prio)
    rec_set(key, j, r)
    if r.state == 'queued' then
      local host = host_of(r)
      redis.call('ZADD', qkey(host), r.prio, qmember(ARGV[i]))
      hosts[host] = true
    end
    written = written + 1
  end
end
for host in pairs(hosts) do resched(host, max_in_flight) end
return {index_update(before), written}
