"""`crawlspace export`: one record per line from crawl.db (or a shared Redis frontier), as JSON
Lines or CSV."""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from crawlspace.errors import ConfigError
from crawlspace.frontier.learned import NOTE as LEARNED
from crawlspace.frontier.learned import rules_text, traps_text
from crawlspace.ops.report import open_crawl_db
from crawlspace.store.sqlite.rows import unpack_links
from crawlspace.urls import host_key

QUERIES = {
    "urls": (
        "SELECT u.url, h.host_key, u.depth, u.state, u.reason, u.version, u.attempts,"
        " u.source, u.discovered_at, u.updated_at, u.etag, u.last_modified,"
        " u.lastmod, u.changefreq, u.sitemap_priority,"
        " u.revisit_interval, u.last_changed_at, u.next_fetch_at"
        " FROM urls u LEFT JOIN hosts h ON h.id = u.host_id ORDER BY u.id"
    ),
    "fetches": (
        "SELECT url, final_url, status, fetched_at, duration_ms, content_type, bytes, truncated,"
        " content_sha256, text_sha256, noindex, canonical, warc_file, warc_offset, warc_length,"
        " version, redirect_to, rendered, render_error FROM fetches ORDER BY id"
    ),
    "events": (
        "SELECT event_id, seq, url, version, state, reason, status, content_sha256, text_sha256,"
        " warc_file, warc_offset, created_at FROM events ORDER BY seq"
    ),
    # A row a link: crawl.db files before page_links (store/sqlite/schema.py); see _page_links.
    "links": (
        "SELECT f.url AS from_url, l.to_url, l.nofollow FROM links l"
        " JOIN fetches f ON f.id = l.fetch_id ORDER BY l.rowid"
    ),
    # Each host's robots.txt state (RFC 9309) next to its crawl counters.
    "hosts": (
        "SELECT h.host_key, r.status AS robots_status, r.outcome AS robots_outcome,"
        " r.fetched_at AS robots_fetched_at, r.expires_at AS robots_expires_at,"
        " r.body_sha256 AS robots_sha256, r.attempts AS robots_attempts,"
        " r.error AS robots_error, h.fetched, h.queued"
        " FROM hosts h LEFT JOIN robots r ON r.host_id = h.id ORDER BY h.id"
    ),
    # The extraction hook's items (parse/extract.py), each with the page it came from.
    "items": (
        "SELECT f.url AS page_url, f.fetched_at, i.item FROM items i"
        " JOIN fetches f ON f.id = i.fetch_id ORDER BY i.id"
    ),
    # Fetches whose extracted text equals another fetch's: one group per text_sha256.
    "duplicates": (
        "SELECT text_sha256, url, final_url, status, fetched_at, canonical, content_sha256"
        " FROM fetches WHERE text_sha256 IN (SELECT text_sha256 FROM fetches"
        " WHERE text_sha256 IS NOT NULL GROUP BY text_sha256 HAVING COUNT(*) > 1)"
        " ORDER BY text_sha256, id"
    ),
}
FORMATS = ("jsonl", "csv")


def iter_records(out_dir: Path | str, what: str) -> Iterator[dict[str, Any]]:
    if what not in QUERIES:
        raise ConfigError(f"--what {what!r}: choose one of {', '.join(QUERIES)}")
    db = open_crawl_db(out_dir)
    try:
        learned = _learned(db) if what == "hosts" else {}
        if what == "items" and not _has_table(db, "items"):
            return  # a crawl.db from before the extraction hook: no items
        query = QUERIES[what]
        if what == "fetches" and "render_error" not in _columns(db, "fetches"):
            old = " rendered, render_error FROM"  # an older crawl.db: neither column
            query = query.replace(old, " 0 AS rendered, NULL AS render_error FROM")
        for row in db.execute(query):
            record = dict(row)
            if what == "items":  # the item's own fields, after the page it came from
                record = {"page_url": row["page_url"], "fetched_at": row["fetched_at"]}
                record.update(json.loads(row["item"]))
            if what == "hosts":
                _with_learned(record, learned.get(record["host_key"]))
            if what == "urls" and record["host_key"] is None:
                # URLs excluded at the frontier's entry have no host row.
                record["host_key"] = host_key(record["url"])
            for flag in ("truncated", "noindex", "nofollow", "rendered"):
                if flag in record:
                    record[flag] = bool(record[flag])
            yield record
        if what == "links":  # after the rows of a crawl.db from before page_links, if any
            yield from _page_links(db)
    finally:
        db.close()


def _page_links(db: sqlite3.Connection) -> Iterator[dict[str, Any]]:
    """Each fetched page's links (store/sqlite/schema.py page_links), in the pages' order."""
    if not _has_table(db, "page_links"):
        return
    rows = db.execute(
        "SELECT f.url, p.urls, p.nofollow FROM page_links p JOIN fetches f ON f.id = p.fetch_id"
        " ORDER BY p.fetch_id"
    )
    for from_url, urls, nofollow in rows:
        for to_url, marked in unpack_links(urls, nofollow):
            yield {"from_url": from_url, "to_url": to_url, "nofollow": marked}


def _learned(db: sqlite3.Connection) -> dict[str, str]:
    """Each host's "learned" note (frontier/learned.py): trap families, URL rules."""
    if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'host_notes'").fetchone():
        return {}  # a crawl.db from before host notes
    rows = db.execute(
        "SELECT h.host_key, n.text FROM host_notes n JOIN hosts h ON h.id = n.host_id"
        " WHERE n.name = ?",
        (LEARNED,),
    )
    return {str(host): str(text) for host, text in rows}


# A spreadsheet runs a cell that starts with one of these as a formula (OWASP, "CSV injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# C0 and C1 controls: escape sequences a terminal would act on (titles, screen clears).
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _csv_cell(value: Any, *, terminal: bool) -> Any:
    """Crawled values (a canonical href, an ETag, a Content-Type) are the sites' own text."""
    if not isinstance(value, str):
        return value
    if terminal:
        value = _CONTROLS.sub(lambda m: f"\\x{ord(m.group(0)):02x}", value)
    if value.startswith(_FORMULA_START):
        value = "'" + value  # shown as text; the leading quote is the usual, visible marker
    return value


def write_records(records: Iterable[dict[str, Any]], fmt: str, stream: TextIO) -> int:
    """Write ``records`` (all with the same keys) as JSON Lines or CSV; returns how many.

    CSV cells that a spreadsheet would run as formulas get a leading ``'``. On a terminal,
    control characters are escaped (JSON Lines: everything outside ASCII), so a crawled value
    cannot drive the terminal."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    terminal = stream.isatty()
    count = 0
    writer: csv.DictWriter[str] | None = None
    for record in records:
        if fmt == "jsonl":
            stream.write(json.dumps(record, ensure_ascii=terminal) + "\n")
        else:
            if writer is None:
                writer = csv.DictWriter(stream, fieldnames=list(record))
                writer.writeheader()
            writer.writerow({k: _csv_cell(v, terminal=terminal) for k, v in record.items()})
        count += 1
    return count


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
    return found.fetchone() is not None


def write_export(out_dir: Path | str, what: str, fmt: str, stream: TextIO) -> int:
    return write_records(iter_records(out_dir, what), fmt, stream)


def write_frontier_export(
    url: str,
    what: str,
    fmt: str,
    stream: TextIO,
    *,
    namespace: str = "cs",
    buckets: int | None = None,
) -> int:
    """As ``write_export``, from a shared Redis frontier: ``what`` is urls, events or hosts."""
    from crawlspace.store.redis.views import frontier_view, iter_frontier_records

    if fmt not in FORMATS:  # before connecting
        raise ConfigError(f"--format {fmt!r} with --frontier: choose one of {', '.join(FORMATS)}")
    with frontier_view(url, namespace=namespace, buckets=buckets) as frontier:
        records = iter_frontier_records(frontier, what)
        if what == "hosts":
            records = (
                _with_learned(record, record.pop("notes").get(LEARNED)) for record in records
            )
        return write_records(records, fmt, stream)


def _with_learned(record: dict[str, Any], text: str | None) -> dict[str, Any]:
    """A host record with what the crawl learned about it (frontier/learned.py), as text."""
    record["trap_families"] = traps_text(text) or None
    record["url_rules"] = rules_text(text) or None
    return record
