"""The SQLite side of recrawl: promotion of due URLs, the revisit/new split of leases and the
freshness lag. The schedule is decided in ``frontier/revisit.py`` (plan_revisit) and written by
the completion.

Two priority bands share each host queue: a promoted revisit's priority is its ordinary
priority minus ``REVISIT_BAND``, so revisits and new URLs are two index ranges of the same
``urls_queue`` index. When a host has both kinds queued, each lease picks a band so that about
``revisit_share`` of the host's contested leases are revisits (a deficit counter per host, kept
in memory: the split is a rate, not a durable invariant). When only one kind is queued it is
taken, so neither freshness nor discovery ever waits for the other.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable
from typing import Any, Final

from crawlspace.bands import REVISIT_BAND
from crawlspace.lifecycle import REVISITABLE, check_revisit

__all__ = [
    "REVISIT_BAND",
    "migrate",
    "next_due_at",
    "pick_queued",
    "promote_due",
]


URL_COLUMNS: Final = (
    ("revisit_interval", "REAL"),  # seconds until the next visit, adapted per visit
    ("next_fetch_at", "REAL"),  # when the URL is due again (NULL: never / not scheduled)
    ("due_at", "REAL"),  # when a queued revisit became due (for the freshness lag)
    ("last_changed_at", "REAL"),  # last visit that found the content changed
    ("content_hash", "TEXT"),  # extracted-text sha256 (else body sha256) at the last 200
)

PAGE_COLUMNS: Final = (
    "id, url, version, attempts, depth, redirect_hops, etag, last_modified, source,"
    " revisit_interval, content_hash, changefreq, priority, linked_at, via_id"
)


def migrate(db: sqlite3.Connection) -> None:
    """Add the revisit columns to an older crawl.db, and the due-time index."""
    have = {row[1] for row in db.execute("PRAGMA table_info(urls)")}
    for column, kind in URL_COLUMNS:
        if column not in have:
            db.execute(f"ALTER TABLE urls ADD COLUMN {column} {kind}")
    db.execute(
        "CREATE INDEX IF NOT EXISTS urls_due ON urls (next_fetch_at)"
        " WHERE next_fetch_at IS NOT NULL"
    )


def promote_due(db: sqlite3.Connection, now: float, limit: int) -> int:
    """Queue up to ``limit`` due URLs again, earliest due first. The version is bumped before
    the URL can be leased: the revisit is a new visit with its own fetch row and event."""
    rows = db.execute(
        "SELECT id, host_id, state, next_fetch_at FROM urls WHERE next_fetch_at <= ?"
        " ORDER BY next_fetch_at LIMIT ?",
        (now, limit),
    ).fetchall()
    per_host: Counter[int] = Counter()
    promoted = []
    for url_id, host_id, state, due in rows:
        if state not in REVISITABLE:  # e.g. queued again by a depth re-admission
            promoted.append((None, url_id))
            continue
        check_revisit(state)
        per_host[host_id] += 1
        promoted.append((due, url_id))
    db.executemany(
        "UPDATE urls SET next_fetch_at = NULL WHERE id = ?",
        [(url_id,) for due, url_id in promoted if due is None],
    )
    db.executemany(
        "UPDATE urls SET state = 'queued', reason = NULL, version = version + 1, attempts = 0,"
        " due_at = ?, next_fetch_at = NULL, priority = (CASE WHEN priority < 0"
        f" THEN priority + {REVISIT_BAND} ELSE priority END) - {REVISIT_BAND} WHERE id = ?",
        [(due, url_id) for due, url_id in promoted if due is not None],
    )
    db.executemany(
        "UPDATE hosts SET queued = queued + ? WHERE id = ?",
        [(n, host_id) for host_id, n in per_host.items()],
    )
    return sum(per_host.values())


def any_queued_revisit(db: sqlite3.Connection) -> bool:
    """Whether some host queue holds a revisit (the revisit band: negative priorities)."""
    row = db.execute("SELECT 1 FROM urls WHERE state = 'queued' AND priority < 0 LIMIT 1")
    return row.fetchone() is not None


def next_due_at(db: sqlite3.Connection) -> float | None:
    row = db.execute(
        "SELECT MIN(next_fetch_at) FROM urls WHERE next_fetch_at IS NOT NULL"
    ).fetchone()
    return None if row[0] is None else float(row[0])


Row = tuple[Any, ...]


def pick_queued(
    db: sqlite3.Connection,
    host_id: int,
    now: float,
    share: float,
    *,
    tally: dict[int, list[int]],
    record_lag: Callable[[float], None] | None = None,
) -> Row | None:
    """The host's next queued URL (the lease query's columns), revisit or new by ``share``."""
    revisit = db.execute(
        f"SELECT {PAGE_COLUMNS}, due_at FROM urls WHERE host_id = ? AND state = 'queued'"
        " AND priority < 0 ORDER BY priority, id LIMIT 1",
        (host_id,),
    ).fetchone()
    new = db.execute(
        f"SELECT {PAGE_COLUMNS}, NULL FROM urls WHERE host_id = ? AND state = 'queued'"
        " AND priority >= 0 ORDER BY priority, id LIMIT 1",
        (host_id,),
    ).fetchone()
    row = revisit or new
    if revisit is not None and new is not None:
        counts = tally.setdefault(host_id, [0, 0])  # contested leases: [revisits, new]
        take_revisit = counts[0] < share * (counts[0] + counts[1] + 1)
        row = revisit if take_revisit else new
        counts[0 if take_revisit else 1] += 1
    if row is None:
        return None
    due_at, attempts = row[-1], row[3]
    if due_at is not None and attempts == 0:
        lag = max(0.0, now - float(due_at))
        db.execute("INSERT INTO revisit_lags (leased_at, lag) VALUES (?, ?)", (now, lag))
        if record_lag is not None:
            record_lag(lag)
    return tuple(row[:-1])


def _percentile(sorted_values: list[float], q: float) -> float:
    # Nearest-rank percentile: a value that was actually observed.
    index = max(0, min(len(sorted_values) - 1, round(q * len(sorted_values) + 0.5) - 1))
    return sorted_values[index]
