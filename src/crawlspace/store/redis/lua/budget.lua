-- The crawl-wide page and byte budgets of a shared frontier (--max-pages, --max-bytes), in the
-- one slot "{ns:budget}". KEYS[1] is "{ns:budget}:st", a hash: pages (terminal fetches counted
-- by the workers), bytes (downloaded), and per live worker epoch a hold: page leases it may
-- still turn into pages. A hold lives in its own key "{ns:budget}:held:<epoch>" with a TTL that
-- every call of its worker renews, so a dead worker's hold lapses instead of shrinking the
-- budget forever; "{ns:budget}:workers" lists the epochs to sum.
-- ARGV: prefix, op, epoch, ttl (seconds), then per op:
--   reserve  n, cap: grant up to n holds while pages + every hold stays <= cap.
--            Returns {granted, pages}.
--   settle   released holds, pages done, bytes: returns {pages, bytes}.
local op, epoch, ttl = ARGV[2], ARGV[3], tonumber(ARGV[4])
local WORKERS = P .. 'workers'
local mine = P .. 'held:' .. epoch
if op == 'reserve' then
  local n, cap = tonumber(ARGV[5]), tonumber(ARGV[6])
  local pages = tonumber(redis.call('HGET', ST, 'pages') or '0')
  local total = pages
  for _, e in ipairs(redis.call('SMEMBERS', WORKERS)) do
    local held = redis.call('GET', P .. 'held:' .. e)
    if held then total = total + tonumber(held) else redis.call('SREM', WORKERS, e) end
  end
  local granted = math.max(0, math.min(n, cap - total))
  redis.call('SADD', WORKERS, epoch)
  redis.call('INCRBY', mine, granted)
  redis.call('EXPIRE', mine, ttl)
  return {granted, pages}
end
local released, done, bytes = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
if released ~= 0 and redis.call('EXISTS', mine) == 1 then
  local left = redis.call('DECRBY', mine, released)
  if left < 0 then redis.call('SET', mine, 0) end
  redis.call('EXPIRE', mine, ttl)
end
local pages = redis.call('HINCRBY', ST, 'pages', done)
return {pages, redis.call('HINCRBY', ST, 'bytes', bytes)}
