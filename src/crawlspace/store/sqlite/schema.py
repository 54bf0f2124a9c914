"""The crawl.db schema (documented for users in docs/output.md, "Reading `crawl.db`")."""

from __future__ import annotations

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- One row per host key (scheme://authority): its politeness token and queue counters.
CREATE TABLE IF NOT EXISTS hosts (
    id                      INTEGER PRIMARY KEY,
    host_key                TEXT NOT NULL UNIQUE,
    next_allowed_at         REAL NOT NULL DEFAULT 0,
    in_flight               INTEGER NOT NULL DEFAULT 0,
    max_in_flight           INTEGER NOT NULL DEFAULT 1,
    queued                  INTEGER NOT NULL DEFAULT 0,
    admitted                INTEGER NOT NULL DEFAULT 0,
    fetched                 INTEGER NOT NULL DEFAULT 0,
    robots_lease_id         TEXT,
    robots_lease_expires_at REAL,
    robots_expires_at       REAL,
    backoff_level           INTEGER NOT NULL DEFAULT 0,
    failures                INTEGER NOT NULL DEFAULT 0,
    -- Derived, never written: the ready-host heaps are an index over it (hosts_front, one per
    -- front band: store/sqlite/front.py), so they cannot drift from the counters it is
    -- computed from.
    ready_at REAL GENERATED ALWAYS AS (
        CASE WHEN queued > 0 AND in_flight < max_in_flight THEN next_allowed_at END
    ) VIRTUAL
);
CREATE INDEX IF NOT EXISTS hosts_busy ON hosts (in_flight) WHERE in_flight > 0;

-- A host's token held outside its leases (store/sqlite/holds.py): a robots.txt redirect hop
-- from another host's robots lease. Its holder and expiry; the token is the row's in_flight.
CREATE TABLE IF NOT EXISTS host_holds (
    holder     TEXT PRIMARY KEY,
    host_id    INTEGER NOT NULL,
    expires_at REAL NOT NULL
);

CREATE TABLE IF NOT EXISTS robots (
    host_id     INTEGER PRIMARY KEY,
    status      INTEGER,
    outcome     TEXT NOT NULL,
    body        BLOB NOT NULL,
    body_sha256 TEXT NOT NULL,
    fetched_at  REAL NOT NULL,
    expires_at  REAL NOT NULL,
    attempts    INTEGER NOT NULL,
    error       TEXT
);

-- Every URL the crawl has seen, exactly once: the UNIQUE url is the exact seen set.
CREATE TABLE IF NOT EXISTS urls (
    id               INTEGER PRIMARY KEY,
    url              TEXT NOT NULL UNIQUE,
    host_id          INTEGER,
    depth            INTEGER NOT NULL,
    priority         INTEGER NOT NULL,
    state            TEXT NOT NULL,
    reason           TEXT,
    version          INTEGER NOT NULL DEFAULT 1,
    attempts         INTEGER NOT NULL DEFAULT 0,
    lease_id         TEXT,
    lease_expires_at REAL,
    redirect_hops    INTEGER NOT NULL DEFAULT 0,
    source           TEXT NOT NULL,
    -- The URL id of the page that first led to it (records.py Lease.via_id); NULL: a seed.
    via_id           INTEGER,
    discovered_at    REAL NOT NULL,
    updated_at       REAL NOT NULL,
    etag             TEXT,
    last_modified    TEXT,
    -- From sitemaps (parse/sitemap.py); NULL for URLs no sitemap listed.
    lastmod          TEXT,
    changefreq       TEXT,
    sitemap_priority REAL,
    -- Recrawl (store/sqlite/revisit.py): adaptive interval, due time, when a queued revisit
    -- became due, last visit that saw a change, content hash of the last 200.
    revisit_interval REAL,
    next_fetch_at    REAL,
    due_at           REAL,
    last_changed_at  REAL,
    content_hash     TEXT,
    -- The URL's key in the seen set when it is not the URL itself (urls.py seen_key: query
    -- parameters in name order); store/sqlite/enqueue.py resolve_query_orders.
    seen_key         TEXT,
    -- The last time a page or sitemap linked the URL, kept while retirement is on
    -- (frontier/retirement.py; NULL: not kept).
    linked_at        REAL
);
CREATE INDEX IF NOT EXISTS urls_queue ON urls (host_id, priority, id) WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS urls_leased ON urls (lease_expires_at) WHERE state = 'leased';
-- The few rows a shallower link may still admit (store/sqlite/enqueue.py): the seen test finds
-- known URLs in the url index alone and takes these out, without reading the table.
CREATE INDEX IF NOT EXISTS urls_depth_excluded ON urls (url)
    WHERE state = 'excluded' AND reason = 'depth';
-- The URLs a host's next robots.txt re-evaluates (lifecycle.py ROBOTS_EXCLUSIONS;
-- store/sqlite/store.py robots_excluded). It replaced urls_robots_excluded, which left out the
-- address guard's exclusions.
DROP INDEX IF EXISTS urls_robots_excluded;
CREATE INDEX IF NOT EXISTS urls_robots_reevaluated ON urls (host_id)
    WHERE state = 'excluded' AND reason IN ('robots', 'robots_unavailable', 'blocked_address');

-- One row per HTTP exchange that produced a response; UNIQUE(url_id, version) makes a second
-- completion of the same visit impossible even if the lease check were bypassed.
CREATE TABLE IF NOT EXISTS fetches (
    id             INTEGER PRIMARY KEY,
    url_id         INTEGER NOT NULL,
    version        INTEGER NOT NULL,
    url            TEXT NOT NULL,
    final_url      TEXT NOT NULL,
    status         INTEGER NOT NULL,
    fetched_at     REAL NOT NULL,
    duration_ms    REAL NOT NULL,
    content_type   TEXT,
    bytes          INTEGER NOT NULL,
    truncated      INTEGER NOT NULL,
    content_sha256 TEXT,
    text_sha256    TEXT,
    noindex        INTEGER NOT NULL,
    canonical      TEXT,
    warc_file      TEXT,
    warc_offset    INTEGER,
    warc_length    INTEGER,
    redirect_to    TEXT,
    -- Content dedup (store/sqlite/dedup.py): simhash as signed 64-bit, first fetch of another
    -- URL with the same text_sha256, near-duplicate cluster id (its first page's fetch id).
    simhash        INTEGER,
    dup_of         INTEGER,
    near_dup_of    INTEGER,
    -- A payload the record holds in full: its key among the crawl's captures and its
    -- WARC-Payload-Digest (archive/captures.py), read back when a crawl resumes.
    payload_key    TEXT,
    payload_digest TEXT,
    -- An error's linking page (records.py FetchRecord.via); NULL for the rest.
    via            TEXT,
    -- Rendered in the browser too (crawl/render_visit.py).
    rendered       INTEGER NOT NULL DEFAULT 0,
    render_error   TEXT,
    UNIQUE (url_id, version)
);
CREATE INDEX IF NOT EXISTS fetches_text ON fetches (text_sha256) WHERE text_sha256 IS NOT NULL;

-- Exact and near-duplicate pages per host; their share of the host's fetches lowers the priority
-- of the host's further URLs (store/sqlite/dedup.py record_content).
CREATE TABLE IF NOT EXISTS host_dups (
    host_id    INTEGER PRIMARY KEY,
    duplicates INTEGER NOT NULL
);

-- The append-only log downstream indexers consume: exactly one event per (URL, version), written
-- in the same transaction as the completion that it reports, so a crash or a replayed completion
-- can neither lose nor double it. event_id is stable: the same URL and version give the same id.
CREATE TABLE IF NOT EXISTS events (
    seq            INTEGER PRIMARY KEY,
    event_id       TEXT NOT NULL UNIQUE,
    url            TEXT NOT NULL,
    version        INTEGER NOT NULL,
    state          TEXT NOT NULL,
    reason         TEXT,
    status         INTEGER,
    content_sha256 TEXT,
    text_sha256    TEXT,
    warc_file      TEXT,
    warc_offset    INTEGER,
    created_at     REAL NOT NULL
);

-- The index feed (docs/feed.md; frontier/feed.py decides it): at most one record per (URL,
-- version), in the completion's transaction, so a crash or a replayed completion neither loses
-- nor doubles one. seq is a consumer's position; meta is the record's JSON without its page
-- part, document the page part as zstd-compressed JSON (feed_codec.py), NULL for a delete.
CREATE TABLE IF NOT EXISTS feed (
    seq      INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL UNIQUE,
    doc_id   TEXT NOT NULL,
    kind     TEXT NOT NULL,
    meta     TEXT NOT NULL,
    document BLOB
);

-- Trap budgets (store/sqlite/traps.py): URLs admitted per URL template per host, pages fetched
-- per host per UTC day, and each host's discovery-ratio window (flagged: a likely trap).
CREATE TABLE IF NOT EXISTS host_templates (
    host_id  INTEGER NOT NULL,
    template TEXT NOT NULL,
    urls     INTEGER NOT NULL,
    PRIMARY KEY (host_id, template)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS host_days (
    host_id INTEGER NOT NULL,
    day     INTEGER NOT NULL,
    pages   INTEGER NOT NULL,
    PRIMARY KEY (host_id, day)
) WITHOUT ROWID;
-- What crawl policy learns about a host, as text by name (frontier/trap_yield.py families, the
-- discovery window of frontier/budgets.py; a crawl.db from before the window became a note
-- also has a host_discovery table, read by ops/stats.py only).
CREATE TABLE IF NOT EXISTS host_notes (
    host_id INTEGER NOT NULL,
    name    TEXT NOT NULL,
    text    TEXT NOT NULL,
    PRIMARY KEY (host_id, name)
) WITHOUT ROWID;
-- Freshness: one row per revisit lease, how long after its due time it was leased.
CREATE TABLE IF NOT EXISTS revisit_lags (
    id        INTEGER PRIMARY KEY,
    leased_at REAL NOT NULL,
    lag       REAL NOT NULL
);

-- A fetched page's links, one row a page: ``urls`` is a JSON array of its links' URLs in the
-- page's order, ``nofollow`` a JSON array of the positions of those marked nofollow (NULL: none).
-- Query them with json_each, e.g. SELECT f.url, j.value FROM page_links p JOIN fetches f ON
-- f.id = p.fetch_id, json_each(p.urls) j. (A row per link cost a page ~40 index inserts on the
-- crawl's loop and made half of crawl.db on link-heavy sites.)
CREATE TABLE IF NOT EXISTS page_links (
    fetch_id INTEGER PRIMARY KEY,
    urls     TEXT NOT NULL,
    nofollow TEXT
);

-- A link a row: how crawl.db files before page_links kept them (read by export, not written).
CREATE TABLE IF NOT EXISTS links (
    fetch_id INTEGER NOT NULL,
    to_url   TEXT NOT NULL,
    nofollow INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS links_fetch ON links (fetch_id);

-- What the extraction hook made of each page (parse/extract.py): one row per item, as JSON.
CREATE TABLE IF NOT EXISTS items (
    id       INTEGER PRIMARY KEY,
    fetch_id INTEGER NOT NULL,
    item     TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);

-- Time series sampled every sample_seconds during a crawl (telemetry/sampler.py): what the
-- dashboard and `crawlspace report` plot. Totals are cumulative over the directory's runs.
CREATE TABLE IF NOT EXISTS samples (
    ts              REAL PRIMARY KEY,
    pages           INTEGER NOT NULL,
    pages_per_s     REAL NOT NULL,
    queued          INTEGER NOT NULL,
    ready_hosts     INTEGER NOT NULL,
    in_flight       INTEGER NOT NULL,
    discovered      INTEGER NOT NULL,
    discovery_ratio REAL,
    errors          INTEGER NOT NULL,
    bytes           INTEGER NOT NULL,
    duplicates      INTEGER NOT NULL DEFAULT 0,
    -- The fetch time of the responses since the sample before (ms), and responses by status
    -- class so far (telemetry/sampler.py).
    latency_p50_ms  REAL,
    latency_p95_ms  REAL,
    status_2xx      INTEGER NOT NULL DEFAULT 0,
    status_3xx      INTEGER NOT NULL DEFAULT 0,
    status_4xx      INTEGER NOT NULL DEFAULT 0,
    status_5xx      INTEGER NOT NULL DEFAULT 0
);
"""
