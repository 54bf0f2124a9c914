-- URL records as JSON objects (`crawlspace export --frontier --what urls`, url lookups of
-- store/redis/views.py), each its decoded fields plus id, url and host: the client decodes one
-- in one C call instead of parsing every field as a reply of its own. Read-only.
-- ARGV: prefix, then
--   scan cursor limit   whole record lists from `cursor` ('0' to start) until at least `limit`
--                       records: {next cursor (0: done), json, json, ...}
--   ids id ...          {json or '' (no such URL), ...} in the order asked
--   fps fingerprint ... the same by seen-set fingerprint (codec.py fingerprint)
--   queue host limit    the first `limit` URLs of the host's queue, in the order its leases
--                       take them (priority, then admission): {json, ...}
local function json(id, r)
  local host = host_of(r)
  r.id, r.url, r.host, r.path, r.hn = id, rec_url(r, host), host, nil, nil
  return cjson.encode(r)
end
local mode = ARGV[2]
if mode == 'scan' then
  local page, cursor = rec_page(ARGV[3], tonumber(ARGV[4]))
  local out = {cursor}
  for i = 1, #page, 2 do out[#out + 1] = json(page[i], page[i + 1]) end
  return out
end
local out = {}
if mode == 'queue' then
  for _, m in ipairs(redis.call('ZRANGE', qkey(ARGV[3]), 0, tonumber(ARGV[4]) - 1)) do
    local id = qmember_id(m)
    local r = rec_get(id)
    if r then out[#out + 1] = json(id, r) end
  end
  return out
end
for i = 3, #ARGV do
  local id = ARGV[i]
  if mode == 'fps' then
    local n = redis.call('HGET', seen_key(id), id)
    id = n and url_id(tonumber(n))
  end
  local r = id and rec_get(id)
  out[#out + 1] = r and json(id, r) or ''
end
return out
