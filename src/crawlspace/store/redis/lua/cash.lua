-- AOPIC's ledger (store/redis/cash.py), in its own slot "{ns:cash}": ST is "{ns:cash}:st" with
-- 'known' (URLs admitted crawl-wide) and 'lambda' (Lambda's per-page total).
-- ARGV: prefix, URLs newly known, cash for Lambda. Lambda links to every known page, so each is
-- owed an equal part of its cut (frontier/aopic.py lambda_per_page).
-- Returns Lambda's per-page total.
local known = redis.call('HINCRBY', ST, 'known', ARGV[2])
local cut = tonumber(ARGV[3])
if cut > 0 then
  return redis.call('HINCRBYFLOAT', ST, 'lambda', string.format('%.17g', cut / math.max(known, 1)))
end
return redis.call('HGET', ST, 'lambda') or '0'
