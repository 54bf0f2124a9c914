-- Count one page of this bucket's URLs by state, and by 'state:reason' for excluded and failed
-- ones (`crawlspace stats --frontier`). Read-only. Whole record lists per call (rec_page), so a
-- call stays short however large the bucket; the client sums pages until the cursor is back to 0.
-- ARGV: prefix, cursor ('0' to start), page size. Returns {next cursor, name, n, name, n, ...}.
local page, cursor = rec_page(ARGV[2], tonumber(ARGV[3]))
local counts = {}
local function bump(name) counts[name] = (counts[name] or 0) + 1 end
for i = 2, #page, 2 do
  local r = page[i]
  bump(r.state)
  if (r.state == 'excluded' or r.state == 'failed') and r.reason then
    bump(r.state .. ':' .. r.reason)
  end
end
local out = {cursor}
for name, n in pairs(counts) do
  out[#out + 1] = name
  out[#out + 1] = n
end
return out
