-- Finish a page lease: a conditional write on (url id, version, lease id, worker epoch) that
-- appends exactly one completion event to the bucket's stream. A stale or duplicate completion
-- matches nothing, writes nothing and appends nothing.
-- ARGV: prefix, id, lease id, version, epoch, state, reason, next_allowed_at ('' none), etag,
-- last_modified, max_in_flight, fetched (0/1), stream maxlen, now, host backoff level and
-- failure streak ('' for unchanged; frontier/backoff.py), then the per-day page budget: the
-- plan's day ('' off), its cap and when the host may start again at the cap (plans.py DayCount),
-- then
-- the revisit plan (frontier/revisit.py plan_revisit): interval, next fetch time ('' for none),
-- changed (0/1) and content hash ('' keeps the stored one), and 1 when the page was judged a
-- duplicate (the plan's judge: its host's 'dups' count grows), then AOPIC's cash taken
-- from the page ('' unless AOPIC; store/redis/cash.py), the Lambda total it was paid at and the
-- priority of no cash (plans.py CashRule price: the page keeps nothing, unless a share reached
-- it while leased, which the client prices, reprice.lua),
-- then the page's index feed record (the plan's feed_entry; frontier/feed.py): the feed stream's
-- length cap ('' for no record), the document id, kind, meta JSON and packed page part ('' for
-- none), then 0 when a retry's attempt is given back (its host's failure: frontier/outage.py;
-- else 1), then the number of host notes to write with the completion (crawl/host_rules.py, and
-- what the plan's after_links returned: plans.py) and their names and texts, then the points the ids
-- after it (this page's new URLs on its host) sink in their queue while still queued (0: none;
-- the plan's LinkEffects.sink). A planned URL joins the bucket's due set, from which
-- promote.lua queues it again.
-- Returns {index update (_common.lua), {status, 1 if this page spent the host's day budget, and
-- under AOPIC the cash the page kept ('' for none)}}:
-- status 1 done, 0 stale, 2 this very lease was completed already (the caller's retry after a
-- lost reply tells it from a duplicate call), -1 illegal transition (nothing written).
local id, lid, version, epoch, state = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local max_in_flight = tonumber(ARGV[11])
local r, key, at = leased_record(id, lid, version, epoch)
if not r then
  local seen = rec_get(id)
  if seen and seen.lease == '~' .. lid then return {{}, {2, 0}} end
  return {{}, {0, 0}}
end
local host = host_of(r)
-- lifecycle.py TRANSITIONS['leased'], checked before any write.
local allowed = {queued = true, fetched = true, redirected = true, excluded = true, failed = true,
  not_modified = true}
if not allowed[state] then return {{}, {-1, 0}} end
-- Only a completion with a revisit plan changes the due set.
local due = state ~= 'queued' and ARGV[21] ~= ''
local before = marks(due)
-- What the visit learned about its host: written only by the current lease, before its token
-- goes back, so the host's next lease reads it.
local notes = tonumber(ARGV[34])
if notes > 0 then
  local fields = {}
  for i = 35, 34 + 2 * notes do fields[#fields + 1] = ARGV[i] end
  redis.call('HSET', P .. 'n:' .. host, unpack(fields))
end
local w = 35 + 2 * notes  -- where the sink and its URL ids begin
-- '~' and the lease id: no lease any more, and which one ended here (see the status 2 above).
r.state, r.reason, r.lease, r.epoch, r.at = state, ARGV[7], '~' .. lid, nil, ARGV[14]
if ARGV[9] ~= '' then r.etag = ARGV[9] end
if ARGV[10] ~= '' then r.lm = ARGV[10] end
if state ~= 'queued' and ARGV[21] ~= '' then
  r.ri, r.nf = ARGV[20], ARGV[21]
  if ARGV[22] == '1' then r.lc = ARGV[14] end
  if ARGV[23] ~= '' then r.ch = ARGV[23] end
  redis.call('ZADD', DUE, ARGV[21], id)
end
end_lease(host, 'P|' .. id .. '|' .. lid)
if state == 'excluded' and (ARGV[7] == 'robots' or ARGV[7] == 'robots_unavailable'
    or ARGV[7] == 'blocked_address') then
  -- Its host's next robots.txt re-evaluates it (reevaluate.lua; lifecycle.py ROBOTS_EXCLUSIONS).
  redis.call('SADD', P .. 'rx:' .. host, id)
end
if state == 'queued' then
  -- A retry keeps its attempt count (unless given back) and its version: versions count
  -- visits, not tries.
  if ARGV[33] == '0' then r.attempts = string.format('%d', (tonumber(r.attempts) or 0) - 1) end
  redis.call('ZADD', qkey(host), r.prio, qmember(id))
  redis.call('HINCRBY', ST, 'queued', 1)
end
if ARGV[15] ~= '' then redis.call('HSET', hkey(host), 'backoff', ARGV[15]) end
if ARGV[16] ~= '' then redis.call('HSET', hkey(host), 'failures', ARGV[16]) end
move_clock(host, ARGV[8])
local spent = 0
if state ~= 'queued' and ARGV[12] == '1' and ARGV[17] ~= '' then
  -- Pages today: one day's count per host, reset when the day changes.
  local h = hkey(host)
  if redis.call('HGET', h, 'day') ~= ARGV[17] then
    redis.call('HSET', h, 'day', ARGV[17], 'dayn', 0)
  end
  local pages = redis.call('HINCRBY', h, 'dayn', 1)
  if pages >= tonumber(ARGV[18]) then move_clock(host, ARGV[19]) end
  if pages == tonumber(ARGV[18]) then spent = 1 end
end
local kept = ''
if ARGV[25] ~= '' and state ~= 'queued' then
  -- The page handed its cash on; a share that reached it while leased stays for its next visit.
  local left = tonumber(r.cash or '0') - tonumber(ARGV[25])
  if left < 0 then left = 0 end
  r.cash = string.format('%.17g', left)
  if left > 0 then
    kept = r.cash
  else
    local prio = tonumber(ARGV[27])
    if tonumber(r.prio) < 0 then prio = prio - REVISIT_BAND end
    r.prio = string.format('%d', prio)
  end
  if tonumber(ARGV[26]) > tonumber(r.lp or '0') then r.lp = ARGV[26] end
end
rec_set(key, at, r)
local sink = tonumber(ARGV[w])
if sink ~= 0 then
  local function sunk(prio) return prio + sink end
  for i = w + 1, #ARGV do
    local lkey, j = rec_slot(ARGV[i])
    local packed = redis.call('LINDEX', lkey, j)
    local prio
    if packed then packed, prio = rec_requeued(packed, sunk) end
    if packed then
      redis.call('LSET', lkey, j, packed)
      redis.call('ZADD', qkey(host), prio, qmember(ARGV[i]))
    end
  end
end
resched(host, max_in_flight)
if state ~= 'queued' then
  -- A retried attempt is not an event: the visit's one terminal completion is (as in SQLite).
  if ARGV[12] == '1' then
    redis.call('HINCRBY', ST, 'fetched', 1)
    redis.call('HINCRBY', hkey(host), 'fetched', 1)  -- per host, for stats and export
    if ARGV[24] == '1' then redis.call('HINCRBY', hkey(host), 'dups', 1) end
  end
  redis.call('XADD', P .. 'events', 'MAXLEN', '~', ARGV[13], '*', 'id', id, 'version', version,
    'state', state, 'reason', ARGV[7], 'lease', lid, 'epoch', epoch)
  if ARGV[28] ~= '' then
    -- The index feed's record, with the completion that makes it: one per (URL, version).
    local fields = {'id', ARGV[29], 'kind', ARGV[30], 'meta', ARGV[31]}
    if ARGV[32] ~= '' then
      fields[7], fields[8] = 'document', ARGV[32]
    end
    redis.call('XADD', P .. 'feed', 'MAXLEN', '~', ARGV[28], '*', unpack(fields))
  end
end
return {index_update(before, due), {1, spent, kept}}
