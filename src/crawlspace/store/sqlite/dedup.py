"""The SQLite side of deduplication, kept out of ``sqlite.py``: schema additions, the Bloom fast
path of the seen set, and content dedup (exact text hash, simhash near-duplicates) per fetch.

Every function runs inside the caller's transaction.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from crawlspace.dedup.near_index import NearDuplicateIndex
from crawlspace.dedup.seen import SeenFilter
from crawlspace.dedup.simhash import SCHEME as SIMHASH_SCHEME
from crawlspace.dedup.simhash import to_signed, to_unsigned
from crawlspace.plans import CompletionPlan, ContentVerdict, Judgement
from crawlspace.records import FetchRecord, Lease, UrlCandidate
from crawlspace.store.sqlite.readonly import read_only_uri
from crawlspace.urls import seen_key

__all__ = [
    "add_fresh",
    "bump_counters",
    "migrate",
    "rebuild_near_index",
    "rebuild_seen",
    "record_content",
    "sink_links",
    "store_verdict",
    "stored_key",
]

_FETCH_COLUMNS: Final = (
    ("simhash", "INTEGER"),
    ("dup_of", "INTEGER"),
    ("near_dup_of", "INTEGER"),
    ("payload_key", "TEXT"),
    ("payload_digest", "TEXT"),
    ("via", "TEXT"),
    ("rendered", "INTEGER NOT NULL DEFAULT 0"),
    ("render_error", "TEXT"),
)


def migrate(db: sqlite3.Connection) -> None:
    """Add the dedup columns to a crawl.db created before they existed."""
    have = {row[1] for row in db.execute("PRAGMA table_info(fetches)")}
    for column, kind in _FETCH_COLUMNS:
        if column not in have:
            db.execute(f"ALTER TABLE fetches ADD COLUMN {column} {kind}")


def bump_counters(db: sqlite3.Connection, counts: Mapping[str, int]) -> None:
    """Add to named counters (names are stored as given, e.g. ``dedup.links_total``)."""
    db.executemany(
        "INSERT INTO counters (name, value) VALUES (?, ?)"
        " ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
        [(name, n) for name, n in counts.items() if n],
    )


# -- seen set ------------------------------------------------------------------------------------


log = logging.getLogger("crawlspace.store")

# Up to this many stored URLs the filter is rebuilt before the crawl starts (about a second);
# beyond, in a background thread, so a resumed 10-million-URL frontier leases at once.
SYNC_REBUILD_MAX = 500_000
_REBUILD_CHUNK = 50_000


def rebuild_seen(db: sqlite3.Connection, seen: SeenFilter, path: str | None = None) -> None:
    """On open (resume): the filter must hold every URL the store holds (no false negatives).

    A big store is read in a daemon thread over its own read-only connection, in short id-range
    transactions (a long read would hold back WAL checkpoints); until it is done the filter
    answers "maybe seen" to everything, so every URL is checked against the store. A URL stored
    after a chunk was read came through the crawl's own paths, which add it to the filter.
    """
    (top,) = db.execute("SELECT MAX(id) FROM urls").fetchone()
    if path is None or top is None or top <= SYNC_REBUILD_MAX:
        seen.rebuild(row[0] for row in db.execute("SELECT url FROM urls"))
        return
    seen.begin_rebuild()
    threading.Thread(
        target=_rebuild_from_file, args=(path, seen, int(top)), name="crawlspace-seen", daemon=True
    ).start()


def _rebuild_from_file(path: str, seen: SeenFilter, top: int) -> None:
    reader = sqlite3.connect(read_only_uri(path), uri=True, check_same_thread=False)
    try:
        for low in range(0, top + 1, _REBUILD_CHUNK):
            rows = reader.execute(
                "SELECT url FROM urls WHERE id > ? AND id <= ?", (low, low + _REBUILD_CHUNK)
            )
            seen.rebuild(row[0] for row in rows)
    except sqlite3.Error:
        log.exception("seen-set filter rebuild failed; it stays off (every URL is checked)")
        return
    finally:
        reader.close()
    seen.end_rebuild()


HostIds = Callable[[sqlite3.Connection, str], int]


def stored_key(url: str, ignore_query_order: bool) -> str | None:
    """The ``seen_key`` column of a new row of ``url``: its key when that is not the URL."""
    if not ignore_query_order or "&" not in url:
        return None
    key = seen_key(url)
    return None if key == url else key


def add_fresh(
    db: sqlite3.Connection,
    seen: SeenFilter,
    candidates: Sequence[UrlCandidate],
    now: float,
    host_id: HostIds,
    *,
    fast: bool,
    admitted_urls: list[str] | None = None,
    inlinks: int = 0,
    ignore_query_order: bool = False,
    linked_at: float | None = None,
    via: int | None = None,
) -> tuple[int, list[UrlCandidate], set[str]]:
    """Insert the candidates the filter proves new; return (added, the rest, maybe-seen URLs).

    Only plain discovered links take the fast path (``fast`` is False while a per-host budget
    needs its row-by-row count): they carry nothing but the columns below. A definitely-new URL
    needs no conflict handling, so the batch is one ``executemany`` of plain INSERTs plus one
    queue-counter UPDATE per host instead of an upsert and an UPDATE per URL. Should a row exist
    anyway (another writer of the same file), the UNIQUE key leaves it alone and that URL takes
    the ordinary path: the store stays the source of truth.
    """
    fresh: list[UrlCandidate] = []
    rest: list[UrlCandidate] = []
    maybe: set[str] = set()
    for cand in candidates:
        new = seen.check_and_add(cand.url)
        if new and fast and cand.source == "link":
            fresh.append(cand)
        else:
            if not new:
                maybe.add(cand.url)
            rest.append(cand)
    if not fresh:
        return 0, rest, maybe
    per_host: Counter[int] = Counter()
    rows = []
    for cand in fresh:
        hid = host_id(db, cand.host_key)
        per_host[hid] += 1
        rows.append(
            (
                cand.url,
                hid,
                cand.depth,
                cand.priority,
                cand.redirect_hops,
                cand.source,
                now,
                now,
                inlinks,
                stored_key(cand.url, ignore_query_order),
                linked_at,
                via,
            )
        )
    # No savepoint: inside one, SQLite copies every page the batch first touches to a statement
    # journal file (a pwrite per page, ~20% of the batch). DO NOTHING cannot fail, and the
    # change count shows whether any row already existed.
    (last_id,) = db.execute("SELECT COALESCE(MAX(id), 0) FROM urls").fetchone()
    before = db.total_changes
    db.executemany(
        "INSERT INTO urls (url, host_id, depth, priority, state, redirect_hops, source,"
        " discovered_at, updated_at, inlinks, seen_key, linked_at, via_id)"
        " VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (url) DO NOTHING",
        rows,
    )
    if db.total_changes - before != len(rows):
        # Some URL was stored by another writer of the file (the filter only knows this
        # process's URLs): the rows this batch did insert are the ones past ``last_id`` (we hold
        # the write lock); the others take the ordinary path, which counts them as seen.
        ours = {url for (url,) in db.execute("SELECT url FROM urls WHERE id > ?", (last_id,))}
        rest = [cand for cand in fresh if cand.url not in ours] + rest
        fresh = [cand for cand in fresh if cand.url in ours]
        per_host = Counter(host_id(db, cand.host_key) for cand in fresh)
    db.executemany(
        "UPDATE hosts SET queued = queued + ?, admitted = admitted + ? WHERE id = ?",
        [(n, n, hid) for hid, n in per_host.items()],
    )
    if admitted_urls is not None:
        admitted_urls.extend(cand.url for cand in fresh)
    return len(fresh), rest, maybe


# -- content -------------------------------------------------------------------------------------


def _first_fetch_of_scheme(db: sqlite3.Connection) -> int:
    """The first fetch id whose simhash this version computes the same way (dedup/simhash.py).

    A crawl.db written by a version with another hash recipe keeps its old fingerprints (they
    still group the old clusters), but they are not comparable with new ones, so the index
    starts after them."""
    rows = dict(
        db.execute(
            "SELECT key, value FROM meta WHERE key IN ('simhash_scheme', 'simhash_first_fetch')"
        ).fetchall()
    )
    if rows.get("simhash_scheme") == SIMHASH_SCHEME and "simhash_first_fetch" in rows:
        return int(rows["simhash_first_fetch"])
    (top,) = db.execute("SELECT MAX(id) FROM fetches").fetchone()
    first = (top or 0) + 1
    db.executemany(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        [("simhash_scheme", SIMHASH_SCHEME), ("simhash_first_fetch", str(first))],
    )
    return first


def rebuild_near_index(db: sqlite3.Connection, index: NearDuplicateIndex) -> int:
    """On open (resume): every stored non-exact-duplicate fingerprint of the current scheme,
    under its cluster id."""
    n = 0
    for fetch_id, simhash, cluster in db.execute(
        "SELECT id, simhash, near_dup_of FROM fetches"
        " WHERE simhash IS NOT NULL AND dup_of IS NULL AND id >= ? ORDER BY id",
        (_first_fetch_of_scheme(db),),
    ):
        index.add(to_unsigned(simhash), cluster if cluster is not None else fetch_id)
        n += 1
    return n


class _FetchContent:
    """plans.py's ContentIndex over this store: a page's text claim is its
    fetch row (the earliest fetch with the text wins), near duplicates the in-memory index."""

    def __init__(
        self, db: sqlite3.Connection, url_id: int, index: NearDuplicateIndex | None
    ) -> None:
        self._db = db
        self._url_id = url_id
        self._index = index

    def claim_text(self, text_sha256: str, owner: int) -> int | None:
        # The first URL fetched with this text owns it: its own revisits are no duplicates.
        row = self._db.execute(
            "SELECT id, url_id FROM fetches WHERE text_sha256 = ? ORDER BY id LIMIT 1",
            (text_sha256,),
        ).fetchone()
        return None if row is None or row[1] == self._url_id else int(row[0])

    def near(self, simhash: int, owner: int) -> int | None:
        index = self._index
        if index is None:
            return None
        match = index.find(simhash)
        near_of = None if match is None else match[0]
        skipped = index.full_skips
        index.add(simhash, owner if near_of is None else near_of)
        if index.full_skips > skipped:
            bump_counters(self._db, {"dedup.near_index_full": 1})
        return near_of


def store_verdict(
    db: sqlite3.Connection, fetch_id: int, fetch: FetchRecord, verdict: ContentVerdict
) -> None:
    """The fetch row's simhash and duplicate columns, and the dedup counters."""
    simhash = None if fetch.simhash is None else to_signed(fetch.simhash)
    db.execute(
        "UPDATE fetches SET simhash = ?, dup_of = ?, near_dup_of = ? WHERE id = ?",
        (simhash, verdict.exact_of, verdict.near_of, fetch_id),
    )
    bump_counters(
        db,
        {
            "dedup.exact_duplicates": int(verdict.exact_of is not None),
            "dedup.near_duplicates": int(verdict.near_of is not None),
        },
    )


def record_content(
    db: sqlite3.Connection,
    lease: Lease,
    host_id: int,
    fetch: FetchRecord,
    plan: CompletionPlan,
    *,
    fetch_id: int,
    index: NearDuplicateIndex | None,
) -> Judgement:
    """Judge the fetch just inserted by its plan over this store's claims (``dup_of``: the first
    earlier fetch of another URL with the same text; ``near_dup_of``: the near-duplicate
    cluster id, the fetch id of its first page) and write the verdict. The host's fetched
    count already includes this page (completion.py finish_host); ``fetch_id`` is its row."""
    row = db.execute(
        "SELECT h.fetched, COALESCE(d.duplicates, 0) FROM hosts h"
        " LEFT JOIN host_dups d ON d.host_id = h.id WHERE h.id = ?",
        (host_id,),
    ).fetchone()
    content = _FetchContent(db, lease.url_id, index)
    judgement = plan.judge(content, fetch_id, int(row[1]), int(row[0]) - 1)
    verdict = judgement.verdict
    store_verdict(db, fetch_id, fetch, verdict)
    if verdict.duplicate:
        db.execute(
            "INSERT INTO host_dups (host_id, duplicates) VALUES (?, 1)"
            " ON CONFLICT (host_id) DO UPDATE SET duplicates = duplicates + 1",
            (host_id,),
        )
    return judgement


def sink_links(links: Sequence[UrlCandidate], host_key: str, points: int) -> Sequence[UrlCandidate]:
    """``links``, those on ``host_key`` ``points`` later in their queue (a judgement's sink)."""
    if not points:
        return links
    return [c.at_priority(c.priority + points) if c.host_key == host_key else c for c in links]
