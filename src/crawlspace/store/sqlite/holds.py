"""A host's token held outside its leases (store/base.py ``take_host``), in the crawl file.

The token is the hosts row's ``in_flight``, as a lease's is, so the ready-host index (a view of
that row, store/sqlite/front.py) drops the host while it is held; ``host_holds`` names its holder
and expiry, so an expiry (or the next start's recovery) lapses it as it does a lost lease.
"""

from __future__ import annotations

import sqlite3

from crawlspace.limits import token_retry_at


def take(
    db: sqlite3.Connection, host_id: int, holder: str, now: float, expires_at: float
) -> float | None:
    """Inside the caller's transaction: the token, or when to try again."""
    if db.execute("SELECT 1 FROM host_holds WHERE holder = ?", (holder,)).fetchone():
        return None  # held already: taking twice is one token
    cur = db.execute(
        "UPDATE hosts SET in_flight = in_flight + 1"
        " WHERE id = ? AND in_flight < max_in_flight AND next_allowed_at <= ?",
        (host_id, now),
    )
    if cur.rowcount == 1:
        db.execute(
            "INSERT INTO host_holds (holder, host_id, expires_at) VALUES (?, ?, ?)",
            (holder, host_id, expires_at),
        )
        return None
    in_flight, max_in_flight, next_allowed_at = db.execute(
        "SELECT in_flight, max_in_flight, next_allowed_at FROM hosts WHERE id = ?", (host_id,)
    ).fetchone()
    return token_retry_at(now, float(next_allowed_at), in_flight >= max_in_flight)


def give(db: sqlite3.Connection, host_key: str, holder: str, next_allowed_at: float) -> None:
    row = db.execute(
        "SELECT host_id FROM host_holds WHERE holder = ?"
        " AND host_id = (SELECT id FROM hosts WHERE host_key = ?)",
        (holder, host_key),
    ).fetchone()
    if row is not None:
        db.execute("DELETE FROM host_holds WHERE holder = ?", (holder,))
        db.execute(
            "UPDATE hosts SET in_flight = in_flight - 1,"
            " next_allowed_at = MAX(next_allowed_at, ?) WHERE id = ?",
            (next_allowed_at, row[0]),
        )


def lapse(db: sqlite3.Connection, cutoff: float, hold: float) -> int:
    """Tokens whose expiry is <= ``cutoff`` given back; each host waits until ``hold``."""
    lapsed = db.execute(
        "SELECT host_id FROM host_holds WHERE expires_at <= ?", (cutoff,)
    ).fetchall()
    db.execute("DELETE FROM host_holds WHERE expires_at <= ?", (cutoff,))
    db.executemany(
        "UPDATE hosts SET in_flight = in_flight - 1, next_allowed_at = MAX(next_allowed_at, ?)"
        " WHERE id = ?",
        [(hold, host_id) for (host_id,) in lapsed],
    )
    return len(lapsed)
