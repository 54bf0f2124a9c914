-- The crawl's request-rate cap on a shared frontier (limits.py RateCap has the rule): one
-- key, KEYS[1] "ns:rate", holds the crawl's next free start, shared by every worker.
-- ARGV: now, latest start, interval (seconds). Returns the request's start as text: taken when
-- it is no later than the latest start (the next free start then moves one interval past it),
-- else nothing changes and the caller does not send the request.
local now, latest, interval = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local start = now
local stored = redis.call('GET', KEYS[1])
if stored and tonumber(stored) > now then start = tonumber(stored) end
if start > latest then return string.format('%.6f', start) end
local nxt = start + interval
-- The key goes once its start has passed: an absent key is a start free now.
redis.call('SET', KEYS[1], string.format('%.6f', nxt), 'EX', math.ceil(nxt - now) + 1)
return string.format('%.6f', start)
