"""The SQLite rows a finished visit leaves: its fetch row and links, its completion event, its
index feed record, and a host's robots.txt. Functions over the caller's connection, inside its
transaction."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
from collections.abc import Sequence
from typing import Final

from crawlspace.plans import FeedEntry
from crawlspace.records import Completion, FetchRecord, Lease, LinkRecord, RobotsRecord

__all__ = [
    "emit_event",
    "event_id",
    "insert_feed",
    "insert_fetch",
    "pack_links",
    "store_robots",
    "unpack_links",
]

_COMPACT: Final = json.JSONEncoder(separators=(",", ":"))


def event_id(url: str, version: int) -> str:
    """A completion event's id: the same URL and version always give the same id, in any store."""
    return f"{hashlib.sha256(url.encode()).hexdigest()[:20]}-v{version}"


def _validated(db: sqlite3.Connection, lease: Lease, fetch: FetchRecord) -> FetchRecord:
    """A 304's row and event describe the copy it validated: the URL's last 2xx fetch's
    content type, hashes, noindex and canonical. The 304's own empty body would read as
    "the content is now empty, and noindex was lifted" to an indexer."""
    row = db.execute(
        "SELECT content_type, content_sha256, text_sha256, noindex, canonical FROM fetches"
        " WHERE url_id = ? AND status BETWEEN 200 AND 299 ORDER BY id DESC LIMIT 1",
        (lease.url_id,),
    ).fetchone()
    if row is None:  # validated a copy this store never saw: say nothing about content
        return dataclasses.replace(fetch, content_sha256=None, text_sha256=None)
    content_type, content_sha256, text_sha256, noindex, canonical = row
    return dataclasses.replace(
        fetch,
        content_type=content_type,
        content_sha256=content_sha256,
        text_sha256=text_sha256,
        noindex=bool(noindex),
        canonical=canonical,
    )


def pack_links(links: Sequence[LinkRecord]) -> tuple[str, str | None]:
    """A page's links as ``page_links`` keeps them (schema.py): its URLs as a JSON array, and
    the positions of the nofollow ones as another (None when there are none)."""
    urls = _COMPACT.encode([link.to_url for link in links])
    marked = [n for n, link in enumerate(links) if link.nofollow]
    return urls, _COMPACT.encode(marked) if marked else None


def unpack_links(urls: str, nofollow: str | None) -> list[tuple[str, bool]]:
    """``pack_links`` undone: (URL, nofollow) in the page's order."""
    marked = set(json.loads(nofollow)) if nofollow else set()
    return [(str(url), n in marked) for n, url in enumerate(json.loads(urls))]


def insert_fetch(
    db: sqlite3.Connection, lease: Lease, fetch: FetchRecord, completion: Completion
) -> int:
    """The fetch's row (its links' and items' too); returns its id."""
    if completion.state == "not_modified":
        fetch = _validated(db, lease, fetch)
    cur = db.execute(
        "INSERT INTO fetches (url_id, version, url, final_url, status, fetched_at,"
        " duration_ms, content_type, bytes, truncated, content_sha256, text_sha256,"
        " noindex, canonical, warc_file, warc_offset, warc_length, redirect_to, payload_key,"
        " payload_digest, via, rendered, render_error)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            lease.url_id,
            lease.version,
            fetch.url,
            fetch.final_url,
            fetch.status,
            fetch.fetched_at,
            fetch.duration_ms,
            fetch.content_type,
            fetch.bytes,
            int(fetch.truncated),
            fetch.content_sha256,
            fetch.text_sha256,
            int(fetch.noindex),
            fetch.canonical,
            fetch.warc_file,
            fetch.warc_offset,
            fetch.warc_length,
            fetch.redirect_to,
            fetch.payload_key,
            fetch.payload_digest,
            fetch.via,
            int(fetch.rendered),
            fetch.render_error,
        ),
    )
    if completion.links:
        db.execute(
            "INSERT INTO page_links (fetch_id, urls, nofollow) VALUES (?, ?, ?)",
            (cur.lastrowid, *pack_links(completion.links)),
        )
    if fetch.items:
        db.executemany(
            "INSERT INTO items (fetch_id, item) VALUES (?, ?)",
            [(cur.lastrowid, item) for item in fetch.items],
        )
    assert cur.lastrowid is not None  # an INSERT that did not raise made its row
    return cur.lastrowid


def emit_event(db: sqlite3.Connection, lease: Lease, completion: Completion, now: float) -> None:
    fetch = completion.fetch
    if fetch is not None and completion.state == "not_modified":
        fetch = _validated(db, lease, fetch)
    db.execute(
        "INSERT INTO events (event_id, url, version, state, reason, status, content_sha256,"
        " text_sha256, warc_file, warc_offset, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            event_id(lease.url, lease.version),
            lease.url,
            lease.version,
            completion.state,
            completion.reason,
            fetch.status if fetch else None,
            fetch.content_sha256 if fetch else None,
            fetch.text_sha256 if fetch else None,
            fetch.warc_file if fetch else None,
            fetch.warc_offset if fetch else None,
            now,
        ),
    )


def insert_feed(db: sqlite3.Connection, lease: Lease, entry: FeedEntry) -> None:
    """The completion's feed record; a replayed completion's is the one already there."""
    db.execute(
        "INSERT OR IGNORE INTO feed (event_id, doc_id, kind, meta, document)"
        " VALUES (?, ?, ?, ?, ?)",
        (event_id(lease.url, lease.version), entry.doc_id, entry.kind, entry.meta, entry.document),
    )


def store_robots(db: sqlite3.Connection, host_id: int, record: RobotsRecord) -> None:
    db.execute(
        "INSERT OR REPLACE INTO robots (host_id, status, outcome, body, body_sha256,"
        " fetched_at, expires_at, attempts, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            host_id,
            record.status,
            record.outcome,
            record.body,
            hashlib.sha256(record.body).hexdigest(),
            record.fetched_at,
            record.expires_at,
            record.attempts,
            record.error,
        ),
    )
