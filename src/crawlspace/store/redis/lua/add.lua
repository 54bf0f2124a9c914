-- Enqueue-if-new for one bucket. ARGV: prefix, now, cap (-1: no per-host budget), max_in_flight,
-- in-link weight and cap (0 0: links are not in-links, e.g. seeds), the page's
-- host ('' none), Lambda's per-page total ('' unless AOPIC) and each candidate's cash (a page's
-- links: the page's share for each; seeds and sitemaps: the seed cash), whether to keep when each
-- URL was last linked ('1': records.py Lease.linked_at, the record's lk), the URL id of the page
-- whose completion admits them ('' none: records.py Lease.via_id, the record's via, kept without
-- its leading zeros), nb (keyed budgets), then
-- nb pairs (reason, cap), then 9 + nb fields per candidate: url, host, depth, priority, hops,
-- source, sitemap changefreq ('' none), its fingerprint (seen_key), its stale_before ('' none:
-- records.py UrlCandidate; a known URL whose last visit ended before it and whose revisit is
-- planned later is due now) and its key under each keyed budget.
-- AOPIC (plans.py CashRule, store/redis/cash.py): a new URL starts with its cash (its priority,
-- the price of that cash, came with it) and the Lambda total; a known URL a page links to gains
-- the share, and the client prices its new cash (reprice.lua): this script keeps no copy of the
-- rule; a seed given again is endowed only if it never received cash (the SQLite store's
-- endow), at the priority it came with.
-- Returns {index update (_common.lua), {added, seen, rejected by the per-host cap, rejected by
-- each keyed budget..., the number of values that follow for the page's host, then (id, url)
-- of each URL admitted on the page's host, then (id, cash) of each known URL whose cash grew}}.
-- In-links (frontier/priority.py): a URL a page links to counts the page; a new one starts at
-- 1, a known one still queued moves `weight` points earlier for each further page, up to `cap`
-- pages, never from the new-URL band below 0 (the revisit band, promote.lua).
-- The bucket's seen set (fingerprint -> useq, seen_key) says whether a URL is new: a URL is
-- admitted at most once, except one remembered as excluded for its depth ('dx': fingerprint ->
-- useq, exclude.lua), which a shallower link admits (the SQLite store's depth re-admission; the keyed budgets do not count it again).
-- Keyed budgets (frontier/budgets.py KeyedBudget) are one counter per host and key, in the
-- host's hash {ns:bN}:k:<host>; a counter moves only when its URL is admitted.
-- Counters are read once, kept in Lua and written back once (the script is atomic), so a URL
-- costs three writes: the seen entry, its record and its queue entry.
local cap = tonumber(ARGV[3])
local max_in_flight = tonumber(ARGV[4])
local weight, inlink_cap = tonumber(ARGV[5]), tonumber(ARGV[6])
local page_host = ARGV[7]
local lam, cash = ARGV[8], ARGV[9]
local linked = ARGV[10] == '1'
local via = ARGV[11] ~= '' and string.format('%d', tonumber(ARGV[11])) or nil
local nb = tonumber(ARGV[12])
local reasons, caps = {}, {}
for b = 1, nb do
  reasons[b] = ARGV[11 + 2 * b]
  caps[b] = tonumber(ARGV[12 + 2 * b])
end
local first = 13 + 2 * nb
local focus = {}  -- id, url of each URL admitted on the page's host
local width = 9 + nb
local before = marks()
local useq = seen_open()
local first_useq = useq
local admitted = {}  -- host -> admitted count, read lazily
local touched = {}   -- host -> URLs admitted by this call
local counts = {}    -- host -> key -> count, read lazily; written back for touched keys
local dirty = {}     -- host -> key -> true
local added, seen = 0, 0
local rejected = {0}
for b = 1, nb do rejected[b + 1] = 0 end

local function count(host, key)
  local h = counts[host]
  if h == nil then h = {}; counts[host] = h end
  if h[key] == nil then
    h[key] = tonumber(redis.call('HGET', P .. 'k:' .. host, key) or '0')
  end
  return h[key]
end

-- Which budget refuses this candidate: 1 the per-host cap, b + 1 keyed budget b, or nil.
local function refusal(host, i)
  if cap >= 0 and admitted[host] >= cap then return 1 end
  for b = 1, nb do
    if count(host, ARGV[i + 8 + b]) >= caps[b] then return b + 1 end
  end
  return nil
end

local DX = P .. 'dx'
local deep = redis.call('EXISTS', DX) == 1

-- A URL excluded for its depth, found again: admitted (under the per-host cap) if within depth.
local function readmit(fp, host, i)
  local n = redis.call('HGET', DX, fp)
  if not n then return false end
  if admitted[host] == nil then
    admitted[host] = tonumber(redis.call('HGET', hkey(host), 'admitted') or '0')
  end
  if cap >= 0 and admitted[host] >= cap then return false end
  redis.call('HDEL', DX, fp)
  local id = url_id(tonumber(n))
  local r, key, at = rec_get(id)
  if not r then return false end  -- (every seen URL has a record: a guard, not a path)
  r.depth, r.prio, r.state, r.reason = ARGV[i + 2], ARGV[i + 3], 'queued', nil
  rec_set(key, at, r)
  admitted[host] = admitted[host] + 1
  touched[host] = (touched[host] or 0) + 1
  redis.call('ZADD', qkey(host), ARGV[i + 3], qmember(id))
  added = added + 1
  return true
end

-- A known URL one more page links to: its in-link count, and points while it waits.
local function earlier(prio)
  if prio >= 0 then return math.max(prio - weight, 0) end
  return prio - weight
end
local function inlink(id, host)
  local before = add_inlinks(id, 1) - 1
  if before < 1 or before > inlink_cap then return end
  local key, at = rec_slot(id)
  local packed = redis.call('LINDEX', key, at)
  local prio
  if packed then packed, prio = rec_requeued(packed, earlier) end
  if packed then
    redis.call('LSET', key, at, packed)
    redis.call('ZADD', qkey(host), prio, qmember(id))
    touched[host] = touched[host] or 0  -- its head may be better now: resched moves its band
  end
end

-- AOPIC: a known URL gains `cash`, from a page's link (an in-link too) or as a seed's endowment
-- (at `prio`, the price of a seed's cash). A link's gift is priced by the client (reprice.lua).
local repriced = {}  -- id, cash of each URL whose cash a link grew
local function give_cash(id, host, gift, prio)
  if page_host ~= '' then
    if weight == 0 then add_inlinks(id, 1) end  -- (with in-link points on, inlink() counted it)
    if not (gift > 0) then return end
    local r, key, at = rec_get(id)
    if not r then return end
    r.cash = string.format('%.17g', tonumber(r.cash or '0') + gift)
    rec_set(key, at, r)
    repriced[#repriced + 1] = id
    repriced[#repriced + 1] = r.cash
    return
  end
  local r, key, at = rec_get(id)
  if not r or r.state ~= 'queued' or r.version ~= '1' or tonumber(r.cash or '0') > 0
    or inlinks_of(id) > 0
  then
    return
  end
  r.lp, r.cash, r.prio = lam, string.format('%.17g', gift), prio
  rec_set(key, at, r)
  redis.call('ZADD', qkey(host), prio, qmember(id))
  touched[host] = touched[host] or 0
end
-- A known URL a sitemap says changed after its last visit: its planned revisit due now.
local NOW = ARGV[2]
local due_head = nil  -- the due set's head before this call moved one ('' empty; nil: none moved)
local function stale(id, before)
  local r, key, at = rec_get(id)
  if not r or not r.nf or not r.at then return end
  if tonumber(r.nf) <= tonumber(NOW) or tonumber(r.at) >= before then return end
  if due_head == nil then due_head = redis.call('ZRANGE', DUE, 0, 0, 'WITHSCORES')[2] or '' end
  r.nf = NOW
  rec_set(key, at, r)
  redis.call('ZADD', DUE, NOW, id)
end
for i = first, #ARGV, width do
  local url, host, fp = ARGV[i], ARGV[i + 1], ARGV[i + 7]
  local sk = seen_key(fp)
  local known = redis.call('HGET', sk, fp)  -- (seen first: most links of a page are known)
  if known then
    if linked then  -- linked again now (frontier/retirement.py)
      local r, key, at = rec_get(url_id(tonumber(known)))
      if r then r.lk = NOW; rec_set(key, at, r) end
    end
    if not (deep and readmit(fp, host, i)) then
      seen = seen + 1
      if ARGV[i + 8] ~= '' then stale(url_id(tonumber(known)), tonumber(ARGV[i + 8])) end
      if weight > 0 or lam ~= '' then
        local id = url_id(tonumber(known))
        if weight > 0 then inlink(id, host) end
        if lam ~= '' then give_cash(id, host, tonumber(cash), ARGV[i + 3]) end
      end
    end
  else
    useq = useq + 1
    redis.call('HSET', sk, fp, string.format('%d', useq))
    seen_grow(useq)  -- now, not after the call: one call's URLs would overfill one small hash
    if admitted[host] == nil then
      admitted[host] = tonumber(redis.call('HGET', hkey(host), 'admitted') or '0')
    end
    local refused = refusal(host, i)
    local r = {state = refused and 'excluded' or 'queued', version = '1', prio = ARGV[i + 3],
      depth = ARGV[i + 2], hops = ARGV[i + 4], src = ARGV[i + 5], hn = host_num(host),
      path = path_of(url, host), via = via, cf = ARGV[i + 6]}
    if lam ~= '' then r.cash, r.lp = cash, lam end
    if linked then r.lk = NOW end
    if refused then
      -- Remembered, so the link seen again later counts as seen, not as a new rejection.
      r.reason = refused == 1 and 'budget_host' or reasons[refused - 1]
      rejected[refused] = rejected[refused] + 1
    else
      for b = 1, nb do
        local key = ARGV[i + 8 + b]
        counts[host][key] = counts[host][key] + 1
        dirty[host] = dirty[host] or {}
        dirty[host][key] = true
      end
      admitted[host] = admitted[host] + 1
      touched[host] = (touched[host] or 0) + 1
      local id = url_id(useq)
      redis.call('ZADD', qkey(host), ARGV[i + 3], qmember(id))
      added = added + 1
      if host == page_host then focus[#focus + 1] = id; focus[#focus + 1] = url end
    end
    rec_new(useq, r)
    if weight > 0 or (lam ~= '' and page_host ~= '') then add_inlinks(url_id(useq), 1) end
  end
end
if useq > first_useq then redis.call('HSET', ST, 'useq', string.format('%d', useq)) end
redis.call('HINCRBY', ST, 'queued', added)
for host, keys in pairs(dirty) do
  for key in pairs(keys) do
    redis.call('HSET', P .. 'k:' .. host, key, counts[host][key])
  end
end
for host, n in pairs(touched) do
  redis.call('HINCRBY', hkey(host), 'admitted', n)
  resched(host, max_in_flight)
end
local reply = {added, seen}
for r = 1, nb + 1 do reply[r + 2] = rejected[r] end
reply[#reply + 1] = #focus
for _, id in ipairs(focus) do reply[#reply + 1] = id end
for _, x in ipairs(repriced) do reply[#reply + 1] = x end
if due_head ~= nil then
  before[3] = due_head  -- the due mark moved too
  return {index_update(before, true), reply}
end
return {index_update(before), reply}
