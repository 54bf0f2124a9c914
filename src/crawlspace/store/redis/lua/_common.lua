-- Shared prelude, prepended to every script by store/redis/frontier.py (Redis scripts cannot import).
-- KEYS[1] is the bucket's stats hash "{ns:bN}:st"; ARGV[1] is the bucket's key prefix "{ns:bN}:".
-- Every key a script touches is built from that prefix, so it carries the same hash tag and lives
-- in the same cluster slot as KEYS[1]: one script, one shard, no CROSSSLOT.
-- Times travel as the client's decimal strings and are written back verbatim: a Lua number passed
-- to redis.call is formatted with 14 significant digits, which would round epoch timestamps.
-- FRONT_ORIGIN, FRONT_WIDTH, FRONT_BANDS and REVISIT_BAND are set by the lines the client puts
-- before this prelude (the crawl's FrontQueues, bands.py). Bands are numbers 0 .. FRONT_BANDS - 1 here; string
-- building is kept off the hot paths (a tostring costs about as much as a Redis command).
local P = ARGV[1]
local ST = KEYS[1]
local READY = P .. 'ready:'  -- .. band: one ready zset per front band
local LEASES = P .. 'leases'
local DUE = P .. 'due'

local READY_KEYS = {}
local function rkey(b)
  local k = READY_KEYS[b]
  if not k then k = READY .. b; READY_KEYS[b] = k end
  return k
end

-- Front bands whose first score this script may have moved, for ready_marks; this script's
-- copy of the bucket's ready marks (ready_marks: band -> first score, kept current) and that
-- copy as the script found it.
local BANDS_TOUCHED = {}
local MARKS = nil
local INITIAL = nil

-- The first entry of LEASES as marks() last read it ({member, score}; nil: read it again), so
-- a completion reads LEASES once. Only end_lease removes from LEASES after a marks() call;
-- scripts that add to it (lease.lua) or remove otherwise (expire.lua) call marks() after.
local LEASE_HEAD = nil

local function hkey(host) return P .. 'h:' .. host end
local function qkey(host) return P .. 'q:' .. host end

-- URL records (the layout in __init__.py). A URL's id is its bucket's admission count `useq`
-- times BUCKETS plus the bucket, fixed-width so a queue's ties sort by admission; its record is
-- element (useq - 1) % REC_GROUP of the list u:<(useq - 1) // REC_GROUP>. A list, not a hash:
-- its elements are packed with no field name and no length limit (a hash leaves its compact
-- listpack encoding for good once one value passes hash-max-listpack-value, 64 bytes by default,
-- shorter than many URLs). (These paragraphs are small because a script pays, on every call,
-- for each one it uses: trim_prelude in scripts.py.)
local BUCKET = tonumber(string.match(P, 'b(%d+)}:$'))
local REC_GROUP = 128
local function url_id(useq) return string.format('%016d', useq * BUCKETS + BUCKET) end

-- A URL's member in its host queue: its useq in 5 bytes, big-endian, so equal priorities sort by
-- admission (members compare as bytes) in 7 bytes of listpack, where the 16-digit id took 18.
local function qmember(id)
  local u = (tonumber(id) - BUCKET) / BUCKETS
  local b5 = u % 256; u = (u - b5) / 256
  local b4 = u % 256; u = (u - b4) / 256
  local b3 = u % 256; u = (u - b3) / 256
  local b2 = u % 256
  return string.char((u - b2) / 256, b2, b3, b4, b5)
end

local function qmember_id(m)
  local b1, b2, b3, b4, b5 = string.byte(m, 1, 5)
  return url_id((((b1 * 256 + b2) * 256 + b3) * 256 + b4) * 256 + b5)
end

local function url_slot(id)  -- the URL's record list number and its index there
  local i = (tonumber(id) - BUCKET) / BUCKETS - 1
  return string.format('%d', math.floor(i / REC_GROUP)), i % REC_GROUP
end

local function rec_slot(id)
  local g, i = url_slot(id)
  return P .. 'u:' .. g, i
end

-- In-link counts (add.lua) live beside the records, in a small hash i:<g> per record list
-- (index -> count), not in them: a link to a known URL is then one HINCRBY, where a field of
-- the packed record would cost a read, a decode, an encode and a write.
local function add_inlinks(id, n)
  local g, i = url_slot(id)
  return redis.call('HINCRBY', P .. 'i:' .. g, i, n)
end
local function inlinks_of(id)
  local g, i = url_slot(id)
  return tonumber(redis.call('HGET', P .. 'i:' .. g, i) or '0')
end

-- A record is its fields' values in REC_FIELDS order, joined by the unit separator (US, byte
-- 31, which neither a normalized URL nor an HTTP header value contains; completion.py drops a
-- validator that does), trailing empty fields left out. States and sources are one letter.
-- `path` is the URL without its host key when it starts with it (rec_url), `hn` the host's
-- number in the bucket (host_num). Decoded, an empty field is nil, as HMGET's absent field was.
local REC_FIELDS = {'state', 'version', 'prio', 'depth', 'hops', 'src', 'hn', 'path', 'via',
  'attempts', 'lease', 'epoch', 'reason', 'at', 'etag', 'lm', 'ri', 'nf', 'lc', 'ch', 'cf', 'due',
  'cash', 'lp', 'lk'}
local STATE_NAMES = {q = 'queued', l = 'leased', f = 'fetched', r = 'redirected', x = 'excluded',
  e = 'failed', n = 'not_modified'}
local SRC_NAMES = {k = 'link', s = 'seed', m = 'sitemap', e = 'sitemap_entry', r = 'redirect',
  a = 'ascend'}
local function rec_decode(s)
  local r, n = {}, 0
  for v in string.gmatch(s .. '\31', '([^\31]*)\31') do
    n = n + 1
    if v ~= '' then r[REC_FIELDS[n]] = v end
  end
  r.state = STATE_NAMES[r.state] or r.state
  r.src = SRC_NAMES[r.src] or r.src
  return r
end

-- rec_decode's inverse. (Spelled out in REC_FIELDS order, not a loop over it, and the letters
-- by comparisons, not tables: each halves the time in this VM's Lua, where a script builds its
-- tables anew on every call.)
local function state_code(v)
  if v == 'queued' then return 'q' elseif v == 'leased' then return 'l'
  elseif v == 'fetched' then return 'f' elseif v == 'excluded' then return 'x'
  elseif v == 'failed' then return 'e' elseif v == 'redirected' then return 'r'
  elseif v == 'not_modified' then return 'n' end
  return v or ''
end
local function src_code(v)
  if v == 'link' then return 'k' elseif v == 'seed' then return 's'
  elseif v == 'sitemap' then return 'm' elseif v == 'sitemap_entry' then return 'e'
  elseif v == 'redirect' then return 'r' elseif v == 'ascend' then return 'a' end
  return v or ''
end
local function rec_encode(r)
  local out = {state_code(r.state), r.version or '', r.prio or '',
    r.depth or '', r.hops or '', src_code(r.src), r.hn or '', r.path or '', r.via or '',
    r.attempts or '', r.lease or '', r.epoch or '', r.reason or '', r.at or '', r.etag or '',
    r.lm or '', r.ri or '', r.nf or '', r.lc or '', r.ch or '', r.cf or '', r.due or '',
    r.cash or '', r.lp or '', r.lk or ''}
  local n = 25
  while n > 0 and out[n] == '' do n = n - 1 end
  return table.concat(out, '\31', 1, n)
end

-- A queued URL's priority moved without decoding its record (in-links, a page's sink): the
-- record's packed text with its priority (the third field) replaced, if its state (the first)
-- is queued; else nil.
local function rec_requeued(s, move)
  local _, b, state, prio = string.find(s, '^([^\31]*)\31[^\31]*\31([^\31]*)')
  if state ~= state_code('queued') then return nil end
  local rest = string.find(s, '\31', b + 1, true)
  local moved = string.format('%d', move(tonumber(prio)))
  return string.sub(s, 1, b - #prio) .. moved .. (rest and string.sub(s, rest) or ''), moved
end

-- A URL's record (nil: no such URL) and where it is, for rec_set.
local function rec_get(id)
  local key, i = rec_slot(id)
  local s = redis.call('LINDEX', key, i)
  if not s then return nil end
  return rec_decode(s), key, i
end

local function rec_set(key, i, r) redis.call('LSET', key, i, rec_encode(r)) end

-- The record of the URL just given `useq`: appended, so its position must be its number.
local function rec_new(useq, r)
  local key, i = rec_slot(url_id(useq))
  if redis.call('RPUSH', key, rec_encode(r)) ~= i + 1 then
    return error('crawlspace: URL record list ' .. key .. ' out of step with the URL count')
  end
end

-- The records of whole record lists from number `cursor` on, until at least `limit` records:
-- {id, record, id, record, ...} and the next cursor (0: no more), so a read stays short however
-- large the bucket (count_urls, read_urls).
local function rec_page(cursor, limit)
  local count = tonumber(redis.call('HGET', ST, 'useq') or '0')
  local groups = math.ceil(count / REC_GROUP)
  local g, out = tonumber(cursor), {}
  while g < groups and #out < 2 * limit do
    local all = redis.call('LRANGE', P .. 'u:' .. string.format('%d', g), 0, -1)
    for i, s in ipairs(all) do
      out[#out + 1] = url_id(g * REC_GROUP + i)
      out[#out + 1] = rec_decode(s)
    end
    g = g + 1
  end
  if g >= groups then g = 0 end
  return out, g
end

-- Host numbers: a record names its host by its number in the bucket's list hs (a host key is
-- ~20-60 bytes, its number one or two); the hash hn maps host -> number. (Not the host's own
-- hash: a host known only from excluded links has none, and is no host of the crawl's.)
local HOST_NUMS = {}
local function host_num(host)
  local n = HOST_NUMS[host]
  if n then return n end
  n = redis.call('HGET', P .. 'hn', host)
  if not n then
    n = string.format('%d', redis.call('RPUSH', P .. 'hs', host) - 1)
    redis.call('HSET', P .. 'hn', host, n)
  end
  HOST_NUMS[host] = n
  return n
end

local HOST_NAMES = {}
local function host_of(r)
  local n = r.hn
  local host = HOST_NAMES[n]
  if not host then
    host = redis.call('LINDEX', P .. 'hs', tonumber(n))
    HOST_NAMES[n] = host
  end
  return host
end

local function path_of(url, host)
  if string.sub(url, 1, #host) == host and string.sub(url, #host + 1, #host + 1) == '/' then
    return string.sub(url, #host + 1)
  end
  return url
end

local function rec_url(r, host)
  if string.sub(r.path, 1, 1) == '/' then return host .. r.path end
  return r.path
end

-- The seen set: a URL's 64-bit keyed fingerprint (8 bytes, from the client: codec.py) -> its
-- useq, in small hashes s:<n> addressed by linear hashing (Litwin) on the fingerprint's last 32
-- bits, so each stays a compact listpack (~SEEN_LOAD entries, at most twice that) however large
-- the bucket grows, and growing moves one small hash at a time (seen_grow). ST keeps the level
-- 'sl' and the split pointer 'sp'.
local SEEN_LOAD = 48
local SEEN_LEVEL, SEEN_SPLIT, SEEN_N = nil, nil, nil
local SEEN_KEYS = {}  -- address -> key name, each built once per call
local function seen_addr(fp)
  local b1, b2, b3, b4 = string.byte(fp, 5, 8)
  return ((b1 * 256 + b2) * 256 + b3) * 256 + b4
end
-- The bucket's URL count (useq), read with the seen set's level and split pointer: admissions
-- call this first.
local function seen_open()
  local v = redis.call('HMGET', ST, 'useq', 'sl', 'sp')
  SEEN_LEVEL, SEEN_SPLIT = tonumber(v[2] or '0'), tonumber(v[3] or '0')
  SEEN_N = 2 ^ SEEN_LEVEL
  return tonumber(v[1] or '0')
end
local function seen_key(fp)
  if not SEEN_LEVEL then seen_open() end
  local b1, b2, b3, b4 = string.byte(fp, 5, 8)  -- (seen_addr, inlined: called once per link)
  local a = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
  local h = a % SEEN_N
  if h < SEEN_SPLIT then h = a % (2 * SEEN_N) end
  local key = SEEN_KEYS[h]
  if not key then
    key = P .. 's:' .. h  -- (an integer below 2^32: Lua writes it without a decimal point)
    SEEN_KEYS[h] = key
  end
  return key
end

-- After admissions brought the bucket to `count` URLs: split hashes until the load is back.
local function seen_grow(count)
  if not SEEN_LEVEL then seen_open() end
  if count <= SEEN_LOAD * (SEEN_N + SEEN_SPLIT) then return end
  local grew = false
  while count > SEEN_LOAD * (2 ^ SEEN_LEVEL + SEEN_SPLIT) do
    local n = 2 ^ SEEN_LEVEL
    local from = P .. 's:' .. string.format('%d', SEEN_SPLIT)
    local to = P .. 's:' .. string.format('%d', SEEN_SPLIT + n)
    local all = redis.call('HGETALL', from)
    local gone, moved = {}, {}
    for i = 1, #all, 2 do
      if seen_addr(all[i]) % (2 * n) ~= SEEN_SPLIT then
        gone[#gone + 1] = all[i]
        moved[#moved + 1] = all[i]
        moved[#moved + 1] = all[i + 1]
      end
    end
    if #gone > 0 then
      redis.call('HDEL', from, unpack(gone))
      redis.call('HSET', to, unpack(moved))
    end
    SEEN_SPLIT = SEEN_SPLIT + 1
    if SEEN_SPLIT == n then SEEN_LEVEL, SEEN_SPLIT, SEEN_N = SEEN_LEVEL + 1, 0, 2 * n end
    grew = true
  end
  if grew then
    redis.call('HSET', ST, 'sl', string.format('%d', SEEN_LEVEL), 'sp',
      string.format('%d', SEEN_SPLIT))
  end
end

-- FrontQueues.band: the front band of a host whose best queued URL has priority `p`.
local function band_of(p)
  if p < 0 then p = p + REVISIT_BAND end
  return math.min(math.max(math.floor((p - FRONT_ORIGIN) / FRONT_WIDTH), 0), FRONT_BANDS - 1)
end

-- Keep the host in the ready zset of its front band iff it can take a lease now or later: it
-- has queued URLs, a free token and no robots.txt fetch outstanding (the MemoryFrontier's
-- _reschedule rule). Its hash remembers the band, so a move leaves no stale entry behind.
-- A band is marked touched (its first score read again, ready_marks) only when this can have
-- moved that score: a host left it, changed its score there, or joined it ahead of its mark.
local function resched(host, max_in_flight)
  local h = hkey(host)
  local v = redis.call('HMGET', h, 'inflight', 'rlease', 'next', 'band')
  local inflight = tonumber(v[1]) or 0
  local free = (not v[2]) or v[2] == ''
  local old = tonumber(v[4] or '')
  local band = nil
  if free and inflight < max_in_flight then
    local head = redis.call('ZRANGE', qkey(host), 0, 0, 'WITHSCORES')
    if #head > 0 then band = band_of(tonumber(head[2])) end
  end
  if old and old ~= band then
    redis.call('ZREM', rkey(old), host)
    BANDS_TOUCHED[old] = true
  end
  if band then
    local at = v[3] or '-inf'
    -- CH: 0 when the host was there with this very score (nothing moved).
    if redis.call('ZADD', rkey(band), 'CH', at, host) == 1 and not BANDS_TOUCHED[band] then
      -- MARKS[band] is current unless the band is touched already (ready_marks).
      local mark = old ~= band and MARKS and tonumber(MARKS[band] or '')
      if not (mark and tonumber(at) and tonumber(at) >= mark) then BANDS_TOUCHED[band] = true end
    end
  end
  if old ~= band then redis.call('HSET', h, 'band', band or '') end
end

-- The earliest ready time of each non-empty band: a map band -> score as Redis formats it. The
-- bucket keeps it in a zset ({ns:bN}:rm, band -> score), read once per script; only the bands
-- this script touched (resched) are read again. So a script reads one small zset here instead of
-- every band, and loops over the one or two bands a bucket uses, not all of them. `full` reads
-- every band (peek, for the sweep's repairs, index.py; it repairs this copy too).
local function read_marks()
  local marks = {}
  local r = redis.call('ZRANGE', P .. 'rm', 0, -1, 'WITHSCORES')
  for i = 1, #r, 2 do marks[tonumber(r[i])] = r[i + 1] end
  return marks
end

local function ready_marks(full)
  if not MARKS then
    MARKS = read_marks()
    INITIAL = {}
    for b, at in pairs(MARKS) do INITIAL[b] = at end
  end
  local bands = BANDS_TOUCHED
  if full then
    bands = {}
    for b = 0, FRONT_BANDS - 1 do bands[b] = true end
  end
  for b in pairs(bands) do
    local r = redis.call('ZRANGE', rkey(b), 0, 0, 'WITHSCORES')
    local at = r[2]
    if at ~= MARKS[b] then
      if at then redis.call('ZADD', P .. 'rm', at, b) else redis.call('ZREM', P .. 'rm', b) end
      MARKS[b] = at
    end
  end
  BANDS_TOUCHED = {}
  return MARKS
end

-- The first ready time of each non-empty band as a number (ready_marks).
local function band_heads()
  local heads = {}
  for b, at in pairs(ready_marks()) do heads[b] = tonumber(at) end
  return heads
end

-- Up to `limit` hosts ready at `now` (a client decimal string) with the best ranks
-- (FrontQueues.rank: ready time + band * aging): {host, band, ready time, host, ...}, best
-- first, each ready time as Redis formats it.
-- `keep` (default `limit`) of the up to `limit` read per band are returned. `heads` (band_heads)
-- skips the bands with no host ready at `now`; without it every band is read.
local function best_ready(now, limit, aging, keep, heads)
  local t = tonumber(now)
  if not heads then
    heads = {}
    for b = 0, FRONT_BANDS - 1 do heads[b] = t end
  end
  local bands = {}
  for b, head in pairs(heads) do
    if head <= t then bands[#bands + 1] = b end
  end
  local out = {}
  if #bands == 1 then
    -- One band: its own order (ready time, then host) is the rank order, nothing to merge.
    local b = bands[1]
    local r = redis.call('ZRANGEBYSCORE', rkey(b), '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
    for i = 1, 2 * math.min(keep or limit, #r / 2), 2 do
      out[#out + 1] = r[i]
      out[#out + 1] = b
      out[#out + 1] = r[i + 1]
    end
    return out
  end
  local found = {}
  for _, b in ipairs(bands) do
    local r = redis.call('ZRANGEBYSCORE', rkey(b), '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
    for i = 1, #r, 2 do
      -- Ties keep band order, then ready order within a band (FrontQueues.merge).
      found[#found + 1] = {tonumber(r[i + 1]) + b * aging, b * 1e9 + i, r[i], b, r[i + 1]}
    end
  end
  if #found > 1 then
    table.sort(found, function(x, y) return x[1] < y[1] or (x[1] == y[1] and x[2] < y[2]) end)
  end
  for i = 1, math.min(keep or limit, #found) do
    out[#out + 1] = found[i][3]
    out[#out + 1] = found[i][4]
    out[#out + 1] = found[i][5]
  end
  return out
end

-- The host's politeness clock only moves forward; '' means no request was made.
local function move_clock(host, at)
  if at == '' then return end
  local cur = redis.call('HGET', hkey(host), 'next')
  if (not cur) or tonumber(at) > tonumber(cur) then
    redis.call('HSET', hkey(host), 'next', at)
  end
end

-- The URL's record while this lease holds it (same lease id, version and worker epoch), and
-- where it is (rec_set); or false.
local function leased_record(id, lid, version, epoch)
  local r, key, i = rec_get(id)
  if not r or r.state ~= 'leased' or r.lease ~= lid or r.version ~= version or r.epoch ~= epoch
  then
    return false
  end
  return r, key, i
end

local function end_lease(host, member)
  redis.call('ZREM', LEASES, member)
  -- Another lease than the first ended: the first (and the lease mark) stays.
  if not (LEASE_HEAD and LEASE_HEAD[1] and LEASE_HEAD[1] ~= member) then LEASE_HEAD = nil end
  redis.call('HINCRBY', hkey(host), 'inflight', -1)
  redis.call('HINCRBY', ST, 'inflight', -1)
end

-- Back to the host queue: a release (tried = 0) does not count as an attempt, an expiry does.
-- `r`, `key`, `i`: the URL's record (leased_record).
local function give_back_page(host, id, lid, tried, max_in_flight, r, key, i)
  r.state, r.lease, r.epoch = 'queued', nil, nil
  if tried == 0 then r.attempts = string.format('%d', (tonumber(r.attempts) or 0) - 1) end
  rec_set(key, i, r)
  redis.call('ZADD', qkey(host), r.prio, qmember(id))
  redis.call('HINCRBY', ST, 'queued', 1)
  end_lease(host, 'P|' .. id .. '|' .. lid)
  resched(host, max_in_flight)
end

local function give_back_robots(host, lid, max_in_flight)
  redis.call('HSET', hkey(host), 'rlease', '')
  end_lease(host, 'R|' .. lid .. '|' .. host)
  resched(host, max_in_flight)
end

-- This bucket's marks in the crawl-wide index (store/redis/index.py): the earliest ready time
-- of each front band (ready_marks), its earliest lease expiry and its earliest due revisit, ''
-- for none. Scores come back as Redis formats them (exact). Only scripts that can change the due
-- set read its mark (`due` true); the others send '*', which the index reads as "unchanged" (one
-- command less per call on the lease and admission paths).
local function marks(due)
  if not LEASE_HEAD then LEASE_HEAD = redis.call('ZRANGE', LEASES, 0, 0, 'WITHSCORES') end
  local d = due and redis.call('ZRANGE', DUE, 0, 0, 'WITHSCORES') or {'*', '*'}
  return {ready_marks(), LEASE_HEAD[2] or '', d[2] or ''}
end

-- The ready marks as the index takes them: {band, mark, band, mark, ...} for every band
-- non-empty now or when this script began ('' once emptied); `full`: every band. A band empty
-- throughout is left out: at worst the index keeps a mark for a band with no host (a wasted
-- call, which corrects it), never hides a ready host.
local function ready_pairs(marks, full)
  local out = {}
  if full then
    for b = 0, FRONT_BANDS - 1 do
      out[#out + 1] = b
      out[#out + 1] = marks[b] or ''
    end
    return out
  end
  for b, at in pairs(marks) do
    out[#out + 1] = b
    out[#out + 1] = at
  end
  for b in pairs(INITIAL) do
    if not marks[b] then
      out[#out + 1] = b
      out[#out + 1] = ''
    end
  end
  return out
end

-- {version, ready marks (ready_pairs), lease mark, due mark} for the client to copy into the
-- index, or {} if nothing changed since this script began (`before`: its first marks(); nil:
-- always). The version orders replies that reach the index out of order.
local function index_update(before, due)
  local m = marks(due)
  if before and m[2] == before[2] and m[3] == before[3] then
    local same = true
    for b, at in pairs(m[1]) do
      if INITIAL[b] ~= at then same = false; break end
    end
    for b in pairs(INITIAL) do
      if not m[1][b] then same = false; break end
    end
    if same then return {} end
  end
  return {redis.call('HINCRBY', ST, 'iver', 1), ready_pairs(m[1]), m[2], m[3]}
end
