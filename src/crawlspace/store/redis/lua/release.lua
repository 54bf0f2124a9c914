-- Give a lease back unused (shutdown): URL queued again, attempt not counted, clock unchanged,
-- or moved to not_before when later (a lease whose server's address was busy).
-- ARGV: prefix, kind, host, id, lease id, version, epoch, max_in_flight, not_before ('' for
-- none). Returns {index update (_common.lua), 1 or 0 (stale)}.
local kind, host, id, lid = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local max_in_flight = tonumber(ARGV[8])
local before = marks()
if kind == 'robots' then
  if redis.call('HGET', hkey(host), 'rlease') ~= lid then return {{}, 0} end
  move_clock(host, ARGV[9])
  give_back_robots(host, lid, max_in_flight)
  return {index_update(before), 1}
end
local r, key, at = leased_record(id, lid, ARGV[6], ARGV[7])
if not r or host_of(r) ~= host then return {{}, 0} end
move_clock(host, ARGV[9])
give_back_page(host, id, lid, 0, max_in_flight, r, key, at)
return {index_update(before), 1}
