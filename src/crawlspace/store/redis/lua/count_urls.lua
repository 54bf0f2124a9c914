-- Count one page of this bucket's URLs by state, and by 'state:reason' for excluded and failed
-- ones (`crawlspace stats --frontier`). Read-only. One HSCAN page of the seen set per call, so a
-- call stays short however large the bucket; the client sums pages until the cursor is back to 0.
-- ARGV: prefix, cursor ('0' to start), page size. Returns {next cursor, name, n, name, n, ...}.
local page = redis.call('HSCAN', P .. 'seen', ARGV[2], 'COUNT', ARGV[3])
local counts = {}
local function bump(name) counts[name] = (counts[name] or 0) + 1 end
local entries = page[2]
for i = 2, #entries, 2 do  -- url, id, url, id, ...
  local v = redis.call('HMGET', ukey(entries[i]), 'state', 'reason')
  if v[1] then
    bump(v[1])
    if (v[1] == 'excluded' or v[1] == 'failed') and v[2] and v[2] ~= '' then
      bump(v[1] .. ':' .. v[2])
    end
  end
end
local out = {page[1]}
for name, n in pairs(counts) do
  out[#out + 1] = name
  out[#out + 1] = n
end
return out
