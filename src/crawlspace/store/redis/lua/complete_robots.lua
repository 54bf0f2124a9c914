-- Finish a ROBOTS lease: store the record and the host's robots expiry, give the token back.
-- ARGV: prefix, host, lease id, next_allowed_at, max_in_flight, then the record: status ('' for
-- none), outcome, body, fetched_at, expires_at, attempts, error ('' for none).
-- Returns {index update (_common.lua), status}: 1 done, 0 stale.
local host, lid = ARGV[2], ARGV[3]
if redis.call('HGET', hkey(host), 'rlease') ~= lid then return {{}, 0} end
local before = marks()
redis.call('HSET', P .. 'r:' .. host, 'status', ARGV[6], 'outcome', ARGV[7], 'body', ARGV[8],
  'fetched_at', ARGV[9], 'expires_at', ARGV[10], 'attempts', ARGV[11], 'error', ARGV[12])
redis.call('HSET', hkey(host), 'rexp', ARGV[10])
move_clock(host, ARGV[4])
give_back_robots(host, lid, tonumber(ARGV[5]))
return {index_update(before), 1}
