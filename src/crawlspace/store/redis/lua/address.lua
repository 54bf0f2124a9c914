-- Per server address tokens of a shared crawl (limits.py has the rule), in the
-- address's own slot "{ns:a:ADDR}", so a server's many host names, in many buckets and on many
-- workers, share one count. KEYS[1] is "{ns:a:ADDR}:h", a zset: holder (a lease id) -> the
-- lease's expiry, so a dead worker's tokens lapse with its leases; "{ns:a:ADDR}:n" is the
-- address's next allowed start (kept only while a gap is configured).
-- ARGV: prefix, op, holder, then per op:
--   take  now, expires_at, max_in_flight. Returns {1} when granted (or held already), else
--         {0, busy (1 or 0), next allowed start or ''}: the client computes when to retry.
--   give  next start (ended + min gap, '' for no gap), key lifetime (seconds). Returns 1 if
--         the holder held a token, else 0 (lapsed, or given already: a retried call).
local H, N = KEYS[1], ARGV[1] .. 'n'
local op, holder = ARGV[2], ARGV[3]
if op == 'take' then
  local now, expires, max_in_flight = ARGV[4], ARGV[5], tonumber(ARGV[6])
  redis.call('ZREMRANGEBYSCORE', H, '-inf', now)  -- lapsed with their leases
  if redis.call('ZSCORE', H, holder) then return {1} end
  local busy = redis.call('ZCARD', H) >= max_in_flight
  local nxt = redis.call('GET', N)
  if busy or (nxt and tonumber(nxt) > tonumber(now)) then
    return {0, busy and 1 or 0, nxt or ''}
  end
  redis.call('ZADD', H, expires, holder)
  -- The zset goes when its last holder would have lapsed (never shortened by a later take).
  local ttl = math.max(1, math.ceil(tonumber(expires) - tonumber(now)) + 1)
  if redis.call('TTL', H) < ttl then redis.call('EXPIRE', H, ttl) end
  return {1}
end
if redis.call('ZREM', H, holder) == 0 then return 0 end
if ARGV[4] ~= '' then
  local nxt = redis.call('GET', N)
  if (not nxt) or tonumber(ARGV[4]) > tonumber(nxt) then
    redis.call('SET', N, ARGV[4], 'EX', tonumber(ARGV[5]))
  end
end
return 1
