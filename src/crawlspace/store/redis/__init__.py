"""The shared frontier on Redis or a Redis Cluster: one Lua script per atomic operation
(``lua/``), each on one host bucket's slot (``frontier.py``, with ``admission.py`` and
``completion.py`` turning the crawl's plans into script arguments); the crawl-wide bucket index
(``index.py``), replication barriers (``wait.py``), content dedup (``content.py``) and
read-only views for stats and export (``views.py``).

Layout. Hosts are spread over ``buckets`` (crc32(host_key) % buckets, the same in every process).
Every key of a bucket carries the hash tag ``{ns:bN}`` so it lives in one cluster slot:

    {ns:bN}:st          hash   counters: inflight, queued, fetched, useq (URLs seen: url ids),
                               lseq (lease ids), wseq (replication barriers, wait.py), iver
                               (version of the bucket's index marks, index.py), sl/sp (the seen
                               set's level and split pointer)
    {ns:bN}:rm          zset   front band -> its first ready score: the bucket's ready marks,
                               read once per script (lua/_common.lua ready_marks)
    {ns:bN}:ready:F     zset   host -> next_allowed_at, only hosts that can take a lease, in the
                               front band F of their best queued URL (bands.py)
    {ns:bN}:s:<n>       hash   the seen set: a URL's 8-byte keyed fingerprint (scripts.py
                               fingerprint) -> its useq, in small hashes by linear hashing on
                               the fingerprint (lua/_common.lua seen_key), each a listpack
    {ns:bN}:dx          hash   fingerprint -> useq of URLs excluded for their depth
                               (re-admittable)
    {ns:bN}:leases      zset   "P|id|lease" / "R|lease|host" / "H|host|holder" (a host's token
                               held outside its leases, lua/host_token.lua) -> expires_at
    {ns:bN}:due         zset   url id -> next fetch time of a planned revisit
    {ns:bN}:events      stream one entry per successful completion (url id, version, lease, epoch)
    {ns:bN}:h:<host>    hash   inflight, next, band (front band), admitted, fetched, dups, rlease
                               (robots lease), rexp (robots expiry), backoff, failures, day/dayn
                               (pages today), wp/wn/wr/wf (discovery window), rv/nw (revisit
                               share tally)
    {ns:bN}:k:<host>    hash   keyed budget counters (URL template -> URLs admitted)
    {ns:bN}:q:<host>    zset   a URL's useq, 5 bytes big-endian (lua/_common.lua qmember) ->
                               priority (ties: admission order)
    {ns:bN}:r:<host>    hash   the robots.txt record
    {ns:bN}:u:<g>       list   URL records, packed: url id = useq x buckets + bucket, its record
                               element (useq - 1) % 128 of list g = (useq - 1) // 128; fields
                               state, version, prio, depth, hops, src, hn (host number), path
                               (the URL without its host key), via (the id of the page that
                               led to it), attempts, lease, epoch, reason,
                               at, etag, lm, ri/nf/lc/ch/cf/due (recrawl), cash/lp (AOPIC),
                               lk (last linked, retirement): lua/_common.lua REC_FIELDS
    {ns:bN}:i:<g>       hash   index in list u:<g> -> the URL's in-link count (add.lua)
    {ns:bN}:hs          list   host keys by host number (records name their host by it)
    {ns:bN}:hn          hash   host key -> host number

Crawl-wide keys: ``{ns}:buckets`` (with the layout's version), ``{ns}:fpkey`` (the secret
key of the seen set's fingerprints), ``{ns}:epoch`` (the last worker epoch taken),
``{ns}:settings`` (the crawl's stored settings, JSON: crawl/settings.py), ``{ns}:seeds`` (set:
the seeds' host keys) and ``{ns}:seeds:rev`` (bumped when a seed host joins: the workers'
scopes widen, crawl/scope_sharing.py),
``{ns}:counters`` (hash: ``rejected.<reason>``, ``dedup.*``, ``wait.short``), ``{ns}:rate``
(the rate cap's next free start, lua/rate.lua), ``{ns}:renders`` (hash: the crawl-wide
render budget's pages and seconds, lua/render.lua), the bucket index
``{ns:idx}:ready:F`` (one per front band), ``:leases``, ``:due``, ``:ver`` (index.py), the
crawl-wide page and byte budgets ``{ns:budget}:*`` (lua/budget.lua), AOPIC's Lambda
``{ns:cash}:st`` (cash.py), and content claims and near-duplicate block tables spread over slots
of their own, ``{ns:tN}:text`` and ``{ns:nN}:nd:<scheme>:<block>:<value>`` (content.py).
"""
