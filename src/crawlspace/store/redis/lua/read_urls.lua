-- One page of this bucket's URL records (`crawlspace export --frontier --what urls`). Read-only.
-- One HSCAN page of the seen set per call, so a call stays short however large the bucket.
-- ARGV: prefix, cursor ('0' to start), page size. Returns {next cursor, json, json, ...}: each
-- record is its URL hash plus its id as one JSON object, which the client decodes in one C call
-- instead of parsing every field as a reply of its own.
local page = redis.call('HSCAN', P .. 'seen', ARGV[2], 'COUNT', ARGV[3])
local out = {page[1]}
local entries = page[2]
for i = 2, #entries, 2 do  -- url, id, url, id, ...
  local f = redis.call('HGETALL', ukey(entries[i]))
  if #f > 0 then
    local rec = {id = entries[i]}
    for j = 1, #f, 2 do rec[f[j]] = f[j + 1] end
    out[#out + 1] = cjson.encode(rec)
  end
end
return out
