-- A host's token held outside its own leases (store/base.py take_host / give_host), for the
-- request another host's lease makes to it (a robots.txt redirect hop). The token is a member
-- 'H|host|holder' of the bucket's LEASES scored by its expiry (a host key has no '|', a holder
-- may), so it counts in flight (host and bucket, as a lease does), holds the host out of the
-- ready zsets (resched), shows in the lease mark of the index and lapses with expire.lua like a
-- lost lease.
-- ARGV: prefix, op, host, holder, max_in_flight, then per op:
--   take  now, expires_at. Granted as a lease would be: a free token (robots.txt leases count)
--         and the host's next-allowed time <= now. Returns {index update (_common.lua), {1}}
--         when granted (or held already), else {{}, {0, busy (1 or 0), next allowed start or
--         ''}}: the client computes when to retry. A host never seen gets its hash, no queue.
--   give  next_allowed_at (the host's clock moves to it when later). Returns {index update, 1}
--         if the holder held the token, else {{}, 0} (given already, or lapsed).
local op, host = ARGV[2], ARGV[3]
local member = 'H|' .. host .. '|' .. ARGV[4]
local max_in_flight = tonumber(ARGV[5])
if op == 'take' then
  if redis.call('ZSCORE', LEASES, member) then return {{}, {1}} end
  local h = hkey(host)
  local v = redis.call('HMGET', h, 'inflight', 'next')
  local busy = (tonumber(v[1]) or 0) >= max_in_flight
  if busy or (v[2] and tonumber(v[2]) > tonumber(ARGV[6])) then
    return {{}, {0, busy and 1 or 0, v[2] or ''}}
  end
  local before = marks()
  redis.call('ZADD', LEASES, ARGV[7], member)
  LEASE_HEAD = nil  -- added after marks(): read the first lease again
  redis.call('HINCRBY', h, 'inflight', 1)
  redis.call('HINCRBY', ST, 'inflight', 1)
  resched(host, max_in_flight)
  return {index_update(before), {1}}
end
if not redis.call('ZSCORE', LEASES, member) then return {{}, 0} end
local before = marks()
end_lease(host, member)
move_clock(host, ARGV[6])
resched(host, max_in_flight)
return {index_update(before), 1}
