-- Return this bucket's leases whose expiry is <= cutoff to their host queues and give the
-- tokens back. The fetch may have happened, so the attempt counts and the clock stays put.
-- The host then waits until `hold` (now + the lost-lease gap): its last request may have ended
-- just before (store/base.py FrontierLimits.lost_lease_gap). A host's token held outside its
-- leases ('H|host|holder', host_token.lua) lapses the same way, with no URL to give back.
-- ARGV: prefix, cutoff ('+inf' at recovery), max_in_flight, hold. Returns
-- {index update (_common.lua), number expired}: always one, the index sent the client here.
local max_in_flight = tonumber(ARGV[3])
local hold = ARGV[4]
local expired = 0
for _, member in ipairs(redis.call('ZRANGEBYSCORE', LEASES, '-inf', ARGV[2])) do
  local kind, a, b = string.match(member, '^(%u)|([^|]*)|(.*)$')
  if kind == 'R' then
    move_clock(b, hold)
    give_back_robots(b, a, max_in_flight)
    expired = expired + 1
  elseif kind == 'H' then
    move_clock(a, hold)
    end_lease(a, member)
    resched(a, max_in_flight)
    expired = expired + 1
  else
    local r, key, at = rec_get(a)
    if r and r.state == 'leased' and r.lease == b then
      local host = host_of(r)
      move_clock(host, hold)
      give_back_page(host, a, b, 1, max_in_flight, r, key, at)
      expired = expired + 1
    else
      redis.call('ZREM', LEASES, member)  -- cannot happen: every ending removes its entry
    end
  end
end
return {index_update(nil), expired}
