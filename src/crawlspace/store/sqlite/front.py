"""The SQLite side of the front bands (bands.py): each host's best queued
priority and its band, and the ready hosts read band by band.

``hosts.head_priority`` and ``hosts.band`` are derived data, kept by triggers on ``urls`` rather
than by every statement that queues, leases, requeues or re-prioritises a URL (a dozen paths in
four modules): a trigger cannot be forgotten by the next one. The band expression comes from the
crawl's FrontQueues, so the triggers are recreated whenever the store opens, and every host's
band is recomputed when the bands changed since the last open (a resume with another priority
policy). The triggers are plain SQL: another program writing crawl.db needs no functions of ours.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import Final

from crawlspace.bands import FrontQueues

__all__ = ["migrate", "next_ready_sql", "ready_sql"]

HOST_COLUMNS: Final = (("head_priority", "INTEGER"), ("band", "INTEGER NOT NULL DEFAULT 0"))
_BANDS_KEY: Final = "front_bands"
_QUEUE_MIN: Final = (
    "SELECT MIN(priority) FROM urls WHERE host_id = OLD.host_id AND state = 'queued'"
)


def _triggers(front: FrontQueues) -> str:
    new_band = front.sql_band("NEW.priority")
    head_band = front.sql_band("head_priority")
    return f"""
DROP TRIGGER IF EXISTS urls_front_insert;
DROP TRIGGER IF EXISTS urls_front_update;
-- A newly queued URL better than its host's head becomes the head.
CREATE TRIGGER urls_front_insert AFTER INSERT ON urls WHEN NEW.state = 'queued' BEGIN
    UPDATE hosts SET head_priority = NEW.priority, band = {new_band}
    WHERE id = NEW.host_id AND (head_priority IS NULL OR head_priority > NEW.priority);
END;
-- A lease (queued -> leased) is left to the lease itself (sqlite/lease.py): it reads the URL
-- after the head with the head and writes the host row anyway, which saves a trigger run and a
-- seek per leased URL on the hottest path.
CREATE TRIGGER urls_front_update AFTER UPDATE OF state, priority ON urls
WHEN (OLD.state = 'queued' OR NEW.state = 'queued') AND NEW.state <> 'leased' BEGIN
    UPDATE hosts SET head_priority = NEW.priority, band = {new_band}
    WHERE NEW.state = 'queued' AND id = NEW.host_id
      AND (head_priority IS NULL OR head_priority > NEW.priority);
    -- The head left the queue (leased, excluded) or got worse (demoted): read the new head,
    -- and move the host's band only if it changed (the band is indexed; the head is not).
    UPDATE hosts SET head_priority = ({_QUEUE_MIN})
    WHERE OLD.state = 'queued' AND id = OLD.host_id AND head_priority = OLD.priority
      AND NOT (NEW.state = 'queued' AND NEW.priority <= OLD.priority);
    UPDATE hosts SET band = {head_band}
    WHERE OLD.state = 'queued' AND id = OLD.host_id AND band <> {head_band};
END;
"""


def migrate(db: sqlite3.Connection, front: FrontQueues) -> None:
    """Add the columns to an older crawl.db, (re)create the triggers and the band index, and
    recompute every host's head and band if the bands are not those it was kept with."""
    have = {row[1] for row in db.execute("PRAGMA table_info(hosts)")}
    for column, kind in HOST_COLUMNS:
        if column not in have:
            db.execute(f"ALTER TABLE hosts ADD COLUMN {column} {kind}")
    db.execute("CREATE INDEX IF NOT EXISTS hosts_front ON hosts (band, ready_at)")
    # The band index answers every ready-time question (ready_sql, next_ready_sql): one index
    # less to update whenever a host's token or clock moves.
    db.execute("DROP INDEX IF EXISTS hosts_ready")
    db.executescript(f"BEGIN IMMEDIATE;\n{_triggers(front)}\nCOMMIT;")
    signature = f"{front.origin}/{front.width}/{front.count}"
    row = db.execute("SELECT value FROM meta WHERE key = ?", (_BANDS_KEY,)).fetchone()
    if row is not None and row[0] == signature:
        return
    head = "(SELECT MIN(priority) FROM urls WHERE host_id = hosts.id AND state = 'queued')"
    db.execute(
        f"UPDATE hosts SET head_priority = {head}, band = COALESCE({front.sql_band(head)}, 0)"
    )
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (_BANDS_KEY, signature))


@functools.cache
def ready_sql(front: FrontQueues, columns: str) -> str:
    """One statement reading ``columns`` of up to ``?`` ready hosts of each band, oldest first,
    each band one seek of ``hosts_front``; parameters: (now, limit) per band. The band and
    ready_at come first, for ``FrontQueues.merge``."""
    per_band = [
        f"SELECT * FROM (SELECT band, ready_at, {columns} FROM hosts INDEXED BY hosts_front"
        f" WHERE band = {band} AND ready_at <= ? ORDER BY ready_at LIMIT ?)"
        for band in range(front.count)
    ]
    return " UNION ALL ".join(per_band)


@functools.cache
def next_ready_sql(front: FrontQueues) -> str:
    """The earliest ready time of any host: one ``hosts_front`` seek per band."""
    per_band = [
        f"SELECT MIN(ready_at) AS at FROM hosts INDEXED BY hosts_front WHERE band = {band}"
        for band in range(front.count)
    ]
    return f"SELECT MIN(at) FROM ({' UNION ALL '.join(per_band)})"
