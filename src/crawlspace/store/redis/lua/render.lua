-- The rendering tier's crawl-wide budget on a shared frontier (limits.py RenderBudget has the
-- rule): one hash, KEYS[1] "ns:renders", shared by every worker: pages (renders taken) and
-- seconds (their browser time).
-- ARGV: op, then
--   reserve  max pages, max seconds ('' for no such cap): one render is taken while both
--            totals are under their caps. Returns {why not or '', pages, seconds as text}.
--   spend    seconds: added to the total. Returns the total as text.
if ARGV[1] == 'spend' then
  return redis.call('HINCRBYFLOAT', KEYS[1], 'seconds', ARGV[2])
end
local pages = tonumber(redis.call('HGET', KEYS[1], 'pages') or '0')
local seconds = redis.call('HGET', KEYS[1], 'seconds') or '0'
local why = ''
if ARGV[2] ~= '' and pages >= tonumber(ARGV[2]) then
  why = 'crawl_pages'
elseif ARGV[3] ~= '' and tonumber(seconds) >= tonumber(ARGV[3]) then
  why = 'crawl_seconds'
end
if why == '' then pages = redis.call('HINCRBY', KEYS[1], 'pages', 1) end
return {why, pages, seconds}
