"""URLs excluded for a robots.txt reason on the SQLite frontier, looked at again: a host's
robots.txt refetched (crawl/leases.py re-evaluates what it excluded) and an exclusion lifted
crawl-wide (a robots.txt that was unavailable, an address newly allowed). Functions over the
caller's connection; the writers run inside its transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final

from crawlspace.lifecycle import ROBOTS_EXCLUSIONS

__all__ = ["lift_exclusion", "requeue_excluded", "robots_excluded"]

# Matches the partial index urls_robots_reevaluated (schema.py), so the lookups use it.
_ROBOTS_EXCLUDED: Final = (
    "state = 'excluded' AND reason IN ('robots', 'robots_unavailable', 'blocked_address')"
)
assert {"robots", "robots_unavailable", "blocked_address"} == ROBOTS_EXCLUSIONS


def robots_excluded(db: sqlite3.Connection, host_key: str, limit: int) -> list[tuple[int, str]]:
    """Up to ``limit`` of the host's URLs excluded for a robots reason: (id, URL), oldest first."""
    rows = db.execute(
        "SELECT u.id, u.url FROM urls u JOIN hosts h ON h.id = u.host_id"
        f" WHERE h.host_key = ? AND {_ROBOTS_EXCLUDED} ORDER BY u.id LIMIT ?",
        (host_key, limit),
    ).fetchall()
    return [(int(url_id), str(url)) for url_id, url in rows]


def requeue_excluded(
    db: sqlite3.Connection, host_key: str, url_ids: Sequence[int], now: float
) -> int:
    """Queue again those of ``url_ids`` still excluded for a robots reason on the host, each as
    a new version; how many."""
    row = db.execute("SELECT id FROM hosts WHERE host_key = ?", (host_key,)).fetchone()
    if row is None:
        return 0
    requeued = 0
    for url_id in url_ids:  # each still excluded for a robots reason, on this host
        requeued += db.execute(
            "UPDATE urls SET state = 'queued', reason = NULL, version = version + 1,"
            " attempts = 0, updated_at = ? WHERE id = ? AND host_id = ?"
            f" AND {_ROBOTS_EXCLUDED}",
            (now, url_id, row[0]),
        ).rowcount
    db.execute("UPDATE hosts SET queued = queued + ? WHERE id = ?", (requeued, row[0]))
    return requeued


def lift_exclusion(db: sqlite3.Connection, reason: str, now: float) -> int:
    """Every URL excluded for ``reason`` queued again, and the robots.txt that failed for it
    due now; how many URLs."""
    assert reason in ROBOTS_EXCLUSIONS, reason  # the index below holds those only
    lifted = f"{_ROBOTS_EXCLUDED} AND reason = ?"
    db.execute("UPDATE robots SET expires_at = ? WHERE error = ?", (now, reason))
    db.execute(
        "UPDATE hosts SET robots_expires_at = ?"
        " WHERE id IN (SELECT host_id FROM robots WHERE error = ?)",
        (now, reason),
    )
    db.execute(
        "UPDATE hosts SET queued = queued + (SELECT COUNT(*) FROM urls"
        f" WHERE urls.host_id = hosts.id AND {lifted})"
        f" WHERE id IN (SELECT host_id FROM urls WHERE {lifted})",
        (reason, reason),
    )
    return int(
        db.execute(
            "UPDATE urls SET state = 'queued', reason = NULL, version = version + 1,"
            f" attempts = 0, updated_at = ? WHERE {lifted}",
            (now, reason),
        ).rowcount
    )
