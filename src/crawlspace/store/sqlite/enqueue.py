"""Enqueue-if-new on the SQLite frontier, in the caller's transaction.

Every URL is one row of ``urls`` with a UNIQUE url: that index is the exact, durable seen set. A
Bloom filter in front (store/sqlite/dedup.py) only lets definitely-new URLs skip the upsert.

When query parameter order is ignored (store/base.py FrontierLimits.ignore_query_order), a
row whose URL is not its own seen key (urls.py seen_key: the parameters in name order) keeps
the key in ``seen_key``, under a UNIQUE index of those few rows. A candidate with a key is
first resolved to the URL of the row that has it (``resolve_query_orders``), so the seen test,
the depth re-admission and a sitemap entry's update below all work on the stored URL.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence

from crawlspace.dedup.seen import SeenFilter
from crawlspace.records import UrlCandidate
from crawlspace.store.base import AddResult
from crawlspace.store.sqlite import dedup as sqlite_dedup
from crawlspace.store.sqlite.dedup import HostIds, stored_key
from crawlspace.store.sqlite.known import RecentUrls
from crawlspace.urls import seen_key

__all__ = [
    "add_candidates",
    "add_excluded",
    "resolve_query_orders",
    "stored_form",
    "stored_forms",
]

# URLs per lookup when settling known URLs in bulk (well under SQLite's variable limit).
_LOOKUP_CHUNK = 500


def stored_forms(db: sqlite3.Connection, urls: Iterable[str]) -> dict[str, str]:
    """For each seen key among ``urls``, the URL it stands for: the stored row's, else the
    first of ``urls`` with that key. Only URLs with two or more query parameters have a key,
    so most batches cost nothing here."""
    first: dict[str, str] = {}  # key -> the URL it stands for
    for url in urls:
        # ('&' first: a substring test, where most links would otherwise pay for a call)
        key = seen_key(url) if "&" in url else None
        if key is not None:
            first.setdefault(key, url)
    keys = list(first)
    for start in range(0, len(keys), _LOOKUP_CHUNK):
        chunk = keys[start : start + _LOOKUP_CHUNK]
        marks = ",".join("?" * len(chunk))
        first.update(
            (u, u) for (u,) in db.execute(f"SELECT url FROM urls WHERE url IN ({marks})", chunk)
        )
        first.update(
            db.execute(
                f"SELECT seen_key, url FROM urls INDEXED BY urls_seen_key"
                f" WHERE seen_key IN ({marks})",
                chunk,
            )
        )
    return first


def stored_form(url: str, forms: dict[str, str]) -> str:
    """``url`` as ``stored_forms`` resolved it (itself when it has no key)."""
    if not forms or "&" not in url:
        return url
    key = seen_key(url)
    return url if key is None else forms[key]


def resolve_query_orders(
    db: sqlite3.Connection, candidates: Sequence[UrlCandidate]
) -> list[UrlCandidate]:
    """The candidates with each URL whose key a row (or an earlier candidate) has replaced by
    that row's (that candidate's) URL: the form first linked is the one requested."""
    forms = stored_forms(db, (cand.url for cand in candidates))
    if not forms:
        return list(candidates)
    resolved = []
    for cand in candidates:
        url = stored_form(cand.url, forms)
        resolved.append(cand if url == cand.url else cand._replace(url=url))
    return resolved


def _settle_known(
    db: sqlite3.Connection, candidates: Sequence[UrlCandidate], settled_before: RecentUrls | None
) -> tuple[list[UrlCandidate], int]:
    """Drop the candidates whose row exists and stays as it is; return (the rest, how many).

    Most of a crawl's links are known (85% on python3.11-doc), and one upsert per known URL was
    the seen test's whole cost. One SELECT per chunk finds them instead. What remains takes the
    row-by-row path: new URLs (and Bloom false positives), rows a shallower link re-admits
    (excluded for depth), and sitemap entries, whose metadata is kept on known rows too. URLs
    settled before (``settled_before``, store/sqlite/known.py) are not looked up again."""
    urls = list({cand.url for cand in candidates if cand.source != "sitemap_entry"})
    settled: set[str] = set()
    if settled_before is not None:
        settled.update(url for url in urls if url in settled_before)
        if settled:
            urls = [url for url in urls if url not in settled]
    found: set[str] = set()
    for start in range(0, len(urls), _LOOKUP_CHUNK):
        chunk = urls[start : start + _LOOKUP_CHUNK]
        marks = ",".join("?" * len(chunk))
        # Both lookups read an index only (url's UNIQUE index, the small depth-excluded one):
        # reading the rows' state instead cost a random table page per known URL.
        found.update(
            url for (url,) in db.execute(f"SELECT url FROM urls WHERE url IN ({marks})", chunk)
        )
        found.difference_update(
            url
            for (url,) in db.execute(
                f"SELECT url FROM urls INDEXED BY urls_depth_excluded WHERE url IN ({marks})"
                " AND state = 'excluded' AND reason = 'depth'",
                chunk,
            )
        )
    if settled_before is not None:
        settled_before.learn(found)
    settled |= found
    if not settled:
        return list(candidates), 0
    rest = [c for c in candidates if c.url not in settled or c.source == "sitemap_entry"]
    return rest, len(candidates) - len(rest)


def add_candidates(
    db: sqlite3.Connection,
    candidates: Sequence[UrlCandidate],
    now: float,
    *,
    host_ids: HostIds,
    per_host_limit: int | None,
    seen_filter: SeenFilter | None,
    settled: RecentUrls | None = None,
    admitted_urls: list[str] | None = None,
    inlinks: int = 0,
    ignore_query_order: bool = False,
    orders_resolved: bool = False,
    linked_at: float | None = None,
    via: int | None = None,
) -> AddResult:
    """Enqueue-if-new: each URL not in ``urls`` becomes a queued row (the UNIQUE url is the
    exact seen set), counted on its host; returns what was added, seen and refused, and appends
    the queued URLs to ``admitted_urls`` when given. ``inlinks`` (1 for a fetched page's links)
    starts the in-link count of the rows queued, so only known targets need an UPDATE."""
    added = seen = 0
    rejected: Counter[str] = Counter()
    admitted: dict[int, int] = {}
    queued_per_host: Counter[int] = Counter()
    maybe_seen: set[str] = set()
    if ignore_query_order and not orders_resolved:
        candidates = resolve_query_orders(db, candidates)
    first_admitted = len(admitted_urls) if admitted_urls is not None else 0
    if seen_filter is not None:  # Bloom-proven new links skip the upsert (sqlite/dedup.py)
        added, candidates, maybe_seen = sqlite_dedup.add_fresh(
            db,
            seen_filter,
            candidates,
            now,
            host_ids,
            fast=per_host_limit is None,
            admitted_urls=admitted_urls,
            inlinks=inlinks,
            ignore_query_order=ignore_query_order,
            linked_at=linked_at,
            via=via,
        )
    candidates, known = _settle_known(db, candidates, settled)
    seen += known
    for cand in candidates:
        host_id = host_ids(db, cand.host_key)
        if per_host_limit is not None:
            if host_id not in admitted:
                admitted[host_id] = int(
                    db.execute("SELECT admitted FROM hosts WHERE id = ?", (host_id,)).fetchone()[0]
                )
            if admitted[host_id] >= per_host_limit:
                cur = db.execute(
                    "INSERT OR IGNORE INTO urls (url, host_id, depth, priority, state, reason,"
                    " redirect_hops, source, discovered_at, updated_at, seen_key, via_id)"
                    " VALUES (?, ?, ?, ?, 'excluded', 'budget_host', ?, ?, ?, ?, ?, ?)",
                    (
                        cand.url,
                        host_id,
                        cand.depth,
                        cand.priority,
                        cand.redirect_hops,
                        cand.source,
                        now,
                        now,
                        stored_key(cand.url, ignore_query_order),
                        via,
                    ),
                )
                if cur.rowcount:
                    rejected["budget_host"] += 1
                else:
                    seen += 1
                continue
        # A URL first met beyond the depth limit is admitted when a shallower path to it
        # appears; every other existing row is left alone (the seen test).
        cur = db.execute(
            "INSERT INTO urls (url, host_id, depth, priority, state, redirect_hops, source,"
            " discovered_at, updated_at, lastmod, changefreq, sitemap_priority, inlinks,"
            " seen_key, linked_at, via_id)"
            " VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (url) DO UPDATE SET state = 'queued', reason = NULL,"
            " host_id = excluded.host_id, depth = excluded.depth,"
            " priority = excluded.priority, updated_at = excluded.updated_at,"
            " inlinks = inlinks + excluded.inlinks"
            " WHERE urls.state = 'excluded' AND urls.reason = 'depth'",
            (
                cand.url,
                host_id,
                cand.depth,
                cand.priority,
                cand.redirect_hops,
                cand.source,
                now,
                now,
                cand.lastmod,
                cand.changefreq,
                cand.sitemap_priority,
                inlinks,
                stored_key(cand.url, ignore_query_order),
                linked_at,
                via,
            ),
        )
        if not cur.rowcount and cand.source == "sitemap_entry":
            # A known URL listed in a sitemap: keep the site's metadata about it, and make a
            # planned revisit due now when its last visit ended before the entry's
            # ``stale_before`` (frontier/revisit.py: its lastmod says it changed since).
            db.execute(
                "UPDATE urls SET lastmod = COALESCE(?, lastmod),"
                " changefreq = COALESCE(?, changefreq),"
                " sitemap_priority = COALESCE(?, sitemap_priority),"
                " linked_at = COALESCE(?, linked_at),"
                " next_fetch_at = CASE WHEN next_fetch_at > ? AND updated_at < ? THEN ?"
                " ELSE next_fetch_at END WHERE url = ?",
                (
                    cand.lastmod,
                    cand.changefreq,
                    cand.sitemap_priority,
                    linked_at,
                    now,
                    cand.stale_before,
                    now,
                    cand.url,
                ),
            )
        if cur.rowcount:
            added += 1
            if seen_filter is not None and cand.url in maybe_seen:
                # "maybe seen" but new (or, rarely, a depth re-admission): one wasted read.
                seen_filter.note_false_positive()
            if host_id in admitted:
                admitted[host_id] += 1
            queued_per_host[host_id] += 1
            if admitted_urls is not None:
                admitted_urls.append(cand.url)
        else:
            seen += 1
    # One counter update per host, not per URL.
    db.executemany(
        "UPDATE hosts SET queued = queued + ?, admitted = admitted + ? WHERE id = ?",
        [(n, n, host_id) for host_id, n in queued_per_host.items()],
    )
    if seen_filter is not None:
        sqlite_dedup.bump_counters(db, seen_filter.drain_counters())
    if settled is not None and admitted_urls is not None:
        settled.learn(admitted_urls[first_admitted:])  # queued rows: settled from now on
    return AddResult(added=added, already_seen=seen, rejected=dict(rejected))


_INSERT_EXCLUDED = (
    "INSERT OR IGNORE INTO urls (url, depth, priority, state, reason, source, discovered_at,"
    " updated_at, seen_key) VALUES (?, ?, 0, 'excluded', ?, 'link', ?, ?, ?)"
)


def add_excluded(
    db: sqlite3.Connection,
    excluded: Sequence[tuple[str, str]],
    depth: int,
    now: float,
    *,
    seen_filter: SeenFilter | None,
    settled: RecentUrls | None,
    ignore_query_order: bool,
) -> None:
    """The links a page's admission refused, each an excluded row with its reason unless the
    URL is known (the first reason stays). Off-scope links repeat on every page of a site, so
    the URLs ``settled`` remembers are not inserted again; the rows this call proves it made
    (the filter said new, and every one of them was inserted) are remembered, except those
    excluded for depth, which a shallower link may still admit."""
    if ignore_query_order:  # another order of a URL already stored is that URL, seen
        forms = stored_forms(db, (url for url, _ in excluded))
        excluded = [(stored_form(url, forms), why) for url, why in excluded]
    reasons: dict[str, str] = {}
    for url, why in excluded:
        if settled is None or url not in settled:
            reasons.setdefault(url, why)
    if not reasons:
        return
    new: list[str] = []
    if seen_filter is not None and settled is not None:
        new = [url for url in reasons if seen_filter.proves_new(url)]
    proven = set(new)
    rest = [url for url in reasons if url not in proven]
    for batch in (new, rest):
        if not batch:
            continue
        before = db.total_changes
        db.executemany(
            _INSERT_EXCLUDED,
            [
                (url, depth, reasons[url], now, now, stored_key(url, ignore_query_order))
                for url in batch
            ],
        )
        if batch is new and settled is not None and db.total_changes - before == len(new):
            settled.learn(url for url in new if reasons[url] != "depth")
    if seen_filter is not None:
        for url in reasons:
            seen_filter.add(url)
