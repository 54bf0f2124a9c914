"""Leasing from the SQLite frontier: the ready hosts, each one's next URL, and the host tokens
taken, in the caller's ``BEGIN IMMEDIATE`` transaction (so two processes sharing the file can
never both take one host's token).

A host is ready when its generated ``ready_at`` (next-allowed time, or never while its token is
taken or its queue is empty) has passed: the ``hosts_front`` index on (band, ready_at) is the
Mercator heap of per-host next-allowed times, one per front band, and the ready hosts go in
order of rank (bands.py, store/sqlite/front.py). A host whose robots.txt is
missing or stale is leased for that first; otherwise for the head of its queue (lowest
priority, then first found). ``return_leases`` gives back the leases that expired.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from crawlspace.bands import FrontQueues
from crawlspace.records import Lease, LeaseKind
from crawlspace.store.sqlite import holds
from crawlspace.store.sqlite import revisit as sqlite_revisit
from crawlspace.store.sqlite.front import ready_sql
from crawlspace.urls import robots_url

__all__ = ["lease_ready", "return_leases"]

# (revisit_share, per-host band tally) when revisits may be queued (store/sqlite/revisit.py).
Revisits = tuple[float, dict[int, list[int]]]
# id, host key, backoff level, failures, and its queue: head URL id, head priority, and the
# priority of the URL after the head (the new head once the head is leased; None: none left).
_Host = tuple[int, str, int, int, int, int, int | None]
_QUEUE = "FROM urls u WHERE u.host_id = hosts.id AND u.state = 'queued' ORDER BY u.priority, u.id"
_HOST_COLUMNS = (
    "id, host_key, robots_expires_at, robots_lease_id, backoff_level, failures,"
    f" (SELECT u.id {_QUEUE} LIMIT 1), head_priority, (SELECT u.priority {_QUEUE} LIMIT 1 OFFSET 1)"
)


def lease_ready(
    db: sqlite3.Connection,
    now: float,
    limit: int,
    expires_at: float,
    *,
    new_id: Callable[[], str],
    revisits: Revisits | None,
    front: FrontQueues,
) -> list[Lease]:
    # The ready hosts of each front band and, in the same statement, each one's best queued URL
    # (the urls_queue index answers each subquery with one seek); the best ranks go first.
    rows = db.execute(ready_sql(front, _HOST_COLUMNS), (now, limit) * front.count).fetchall()
    hosts = front.merge(((row[0], row[1], row[2:]) for row in rows), limit)
    leases: list[Lease] = []
    robots_rows: list[tuple[str, float, int]] = []
    pages: list[_Host] = []
    head_ids: list[int] = []
    for host_id, host_key, robots_expires_at, robots_lease_id, level, failures, *queue in hosts:
        head = queue[0]
        if robots_expires_at is None or robots_expires_at <= now:
            if robots_lease_id is not None:
                continue  # robots.txt is being fetched; nothing else goes first
            lease_id = new_id()
            robots_rows.append((lease_id, expires_at, host_id))
            leases.append(
                Lease(
                    LeaseKind.ROBOTS,
                    lease_id,
                    host_key,
                    robots_url(host_key),
                    0,
                    0,
                    1,
                    0,
                    0,
                    expires_at,
                )
            )
        elif head is None:  # counters and rows disagree: heal rather than spin
            db.execute("UPDATE hosts SET queued = 0 WHERE id = ?", (host_id,))
        else:
            pages.append((host_id, host_key, level, failures, *queue))
            head_ids.append(head)
    db.executemany(
        "UPDATE hosts SET in_flight = in_flight + 1, robots_lease_id = ?,"
        " robots_lease_expires_at = ? WHERE id = ?",
        robots_rows,
    )
    if pages:
        rows = _page_rows(db, pages, head_ids, now, revisits)
        leases.extend(_lease_pages(db, pages, rows, expires_at, new_id, front=front))
    return leases


def _page_rows(
    db: sqlite3.Connection,
    pages: list[_Host],
    head_ids: list[int],
    now: float,
    revisits: Revisits | None,
) -> list[tuple[Any, ...] | None]:
    if revisits is not None:
        # Due revisits and new URLs: two bands of each host queue (sqlite/revisit.py).
        share, tally = revisits
        return [
            sqlite_revisit.pick_queued(db, host_id, now, share, tally=tally)
            for host_id, *_ in pages
        ]
    # No revisit was ever queued: the head of each queue is the URL.
    marks = ",".join("?" * len(head_ids))
    by_id = {
        row[0]: row
        for row in db.execute(
            f"SELECT {sqlite_revisit.PAGE_COLUMNS} FROM urls WHERE id IN ({marks})", head_ids
        )
    }
    return [by_id.get(head) for head in head_ids]


def _lease_pages(
    db: sqlite3.Connection,
    pages: list[_Host],
    rows: list[tuple[Any, ...] | None],
    expires_at: float,
    new_id: Callable[[], str],
    *,
    front: FrontQueues,
) -> list[Lease]:
    leases, url_rows, host_rows = [], [], []
    for (host_id, host_key, level, failures, head, head_priority, after), row in zip(
        pages, rows, strict=True
    ):
        if row is None:
            continue
        url_id, url, version, attempts, depth, hops, etag, last_modified, source = row[:9]
        interval, content_hash, changefreq, priority, linked_at, via_id = row[9:15]
        lease_id = new_id()
        url_rows.append((lease_id, expires_at, url_id))
        # The host's new head and front band (store/sqlite/front.py: a lease keeps them itself).
        new_head = after if url_id == head else head_priority
        band = 0 if new_head is None else front.band(new_head)
        host_rows.append((new_head, band, host_id))
        leases.append(
            Lease(
                LeaseKind.PAGE,
                lease_id,
                host_key,
                url,
                url_id,
                version,
                attempts + 1,
                depth,
                hops,
                expires_at,
                etag,
                last_modified,
                host_backoff=level,
                host_failures=failures,
                source=source,
                revisit_interval=interval,
                content_hash=content_hash,
                changefreq=changefreq,
                priority=priority,
                linked_at=linked_at,
                via_id=via_id,
            )
        )
    db.executemany(
        "UPDATE urls SET state = 'leased', lease_id = ?, lease_expires_at = ?,"
        " attempts = attempts + 1 WHERE id = ?",
        url_rows,
    )
    db.executemany(
        "UPDATE hosts SET in_flight = in_flight + 1, queued = queued - 1, head_priority = ?,"
        " band = ? WHERE id = ?",
        host_rows,
    )
    return leases


def return_leases(db: sqlite3.Connection, cutoff: float, hold: float) -> int:
    """Every lease (page, robots.txt, host hold) that expires by ``cutoff`` given back: its URL
    queued again, its host's token returned and its clock moved to ``hold`` at the earliest.
    How many leases."""
    expired = db.execute(
        "SELECT host_id, COUNT(*) FROM urls WHERE state = 'leased'"
        " AND lease_expires_at <= ? GROUP BY host_id",
        (cutoff,),
    ).fetchall()
    db.execute(
        "UPDATE urls SET state = 'queued', lease_id = NULL, lease_expires_at = NULL"
        " WHERE state = 'leased' AND lease_expires_at <= ?",
        (cutoff,),
    )
    db.executemany(
        "UPDATE hosts SET in_flight = in_flight - ?, queued = queued + ?,"
        " next_allowed_at = MAX(next_allowed_at, ?) WHERE id = ?",
        [(n, n, hold, host_id) for host_id, n in expired],
    )
    robots = db.execute(
        "UPDATE hosts SET in_flight = in_flight - 1, robots_lease_id = NULL,"
        " robots_lease_expires_at = NULL, next_allowed_at = MAX(next_allowed_at, ?)"
        " WHERE robots_lease_id IS NOT NULL AND robots_lease_expires_at <= ?",
        (hold, cutoff),
    ).rowcount
    lapsed = holds.lapse(db, cutoff, hold)
    return int(sum(n for _, n in expired) + robots + lapsed)
