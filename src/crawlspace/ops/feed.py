"""Reading a crawl's index feed (docs/feed.md): its records in order, as JSON objects.

The feed lives in the crawl's crawl.db (store/sqlite/schema.py ``feed``), written in each
completion's transaction; this reads it while the crawl runs or after. A record's ``position``
is where a consumer resumes: it reads from the position after the last one it committed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from crawlspace.errors import ConfigError
from crawlspace.feed_codec import unpack
from crawlspace.store.sqlite.readonly import connect_read_only

__all__ = ["feed_end", "feed_records", "open_feed"]

_BATCH = 500


def open_feed(directory: Path) -> sqlite3.Connection:
    """A read-only connection to the crawl directory's feed."""
    path = directory / "crawl.db"
    if not path.is_file():
        raise ConfigError(f"{directory} holds no crawl (no crawl.db)")
    db = connect_read_only(path)
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'feed'").fetchone() is None:
        db.close()
        raise ConfigError(f"{directory}: this crawl was made before the index feed existed")
    return db


def feed_records(
    db: sqlite3.Connection, start: int = 0, limit: int | None = None
) -> Iterator[dict[str, Any]]:
    """The records from position ``start`` on, in order, at most ``limit`` of them. Read in
    batches, each its own read transaction, so a long read never holds the crawl's WAL."""
    left = limit
    while left is None or left > 0:
        size = _BATCH if left is None else min(_BATCH, left)
        rows = db.execute(
            "SELECT seq, meta, document FROM feed WHERE seq >= ? ORDER BY seq LIMIT ?",
            (start, size),
        ).fetchall()
        for seq, meta, document in rows:
            yield record(seq, meta, document)
        if len(rows) < size:
            return
        start = rows[-1][0] + 1
        if left is not None:
            left -= len(rows)


def record(position: int, meta: str, document: bytes | None) -> dict[str, Any]:
    """One feed record: its position, its meta and, for an upsert, its page part."""
    out: dict[str, Any] = {"position": position}
    out.update(json.loads(meta))
    if document is not None:
        out.update(unpack(document))
    return out


def feed_end(db: sqlite3.Connection) -> int:
    """The position after the last record written so far."""
    row = db.execute("SELECT MAX(seq) FROM feed").fetchone()
    return (row[0] or 0) + 1
