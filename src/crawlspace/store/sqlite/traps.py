"""The SQLite side of the budgets a completion's plan counts (plans.py): per host, URLs admitted
per keyed budget's key, e.g. URL template (``host_templates``), and pages fetched per UTC day
(``host_days``). What is counted, under which cap, is the plan's; every function here runs
inside the caller's completion transaction, so a crash can neither lose nor double a count.
(``host_discovery``, the discovery window's table before it became a host note, is no longer
written.)
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Final

from crawlspace.plans import CompletionPlan, DayCount
from crawlspace.records import UrlCandidate
from crawlspace.store.sqlite.known import RecentUrls

__all__ = ["cap_keyed", "count_day", "new_urls"]

_CHUNK: Final = 500  # SQLite's default limit on host parameters is 32766; stay far below


HostIds = Callable[[sqlite3.Connection, str], int]


def new_urls(
    db: sqlite3.Connection, candidates: Sequence[UrlCandidate], settled: RecentUrls | None = None
) -> list[UrlCandidate]:
    """The candidates the store has never seen (one indexed IN query per chunk; a URL
    ``settled`` remembers has a row)."""
    known: set[str] = set()
    if settled is not None:
        known.update(c.url for c in candidates if c.url in settled)
    urls = list({c.url for c in candidates if c.url not in known})
    for i in range(0, len(urls), _CHUNK):
        chunk = urls[i : i + _CHUNK]
        marks = ",".join("?" * len(chunk))
        known.update(
            r[0] for r in db.execute(f"SELECT url FROM urls WHERE url IN ({marks})", chunk)
        )
    out, taken = [], set()
    for c in candidates:
        if c.url not in known and c.url not in taken:
            taken.add(c.url)
            out.append(c)
    return out


def cap_keyed(
    db: sqlite3.Connection,
    links: Sequence[UrlCandidate],
    plan: CompletionPlan,
    host_id: HostIds,
    settled: RecentUrls | None = None,
) -> tuple[list[UrlCandidate], list[tuple[str, str]]]:
    """Count the new URLs among ``links`` under the plan's keyed budgets: (the links still to
    admit, the (url, reason) of those whose counter was full)."""
    caps = plan.caps
    counts: dict[tuple[int, str], int] = {}
    over: list[tuple[str, str]] = []
    for cand in new_urls(db, links, settled):
        hid = host_id(db, cand.host_key)
        keys = [(hid, key) for key in plan.budget_keys(cand.url)]
        for key in keys:
            if key not in counts:
                row = db.execute(
                    "SELECT urls FROM host_templates WHERE host_id = ? AND template = ?", key
                ).fetchone()
                counts[key] = 0 if row is None else int(row[0])
        full = next(
            (reason for (reason, cap), k in zip(caps, keys, strict=True) if counts[k] >= cap),
            None,
        )
        if full is not None:
            over.append((cand.url, full))
            continue
        for key in keys:
            counts[key] += 1
    db.executemany(
        "INSERT INTO host_templates (host_id, template, urls) VALUES (?, ?, ?)"
        " ON CONFLICT (host_id, template) DO UPDATE SET urls = excluded.urls",
        [(hid, key, n) for (hid, key), n in counts.items()],
    )
    if not over:
        return list(links), over
    dropped = {url for url, _ in over}
    return [c for c in links if c.url not in dropped], over


def count_day(
    db: sqlite3.Connection, host_id: int, day: DayCount, rejections: Counter[str]
) -> None:
    """One more page on the plan's day; at the cap the host's clock moves to its ``until``."""
    db.execute(
        "INSERT INTO host_days (host_id, day, pages) VALUES (?, ?, 1)"
        " ON CONFLICT (host_id, day) DO UPDATE SET pages = pages + 1",
        (host_id, day.day),
    )
    pages = int(
        db.execute(
            "SELECT pages FROM host_days WHERE host_id = ? AND day = ?", (host_id, day.day)
        ).fetchone()[0]
    )
    if pages >= day.cap:
        db.execute(
            "UPDATE hosts SET next_allowed_at = MAX(next_allowed_at, ?) WHERE id = ?",
            (day.until, host_id),
        )
        if pages == day.cap:
            rejections["budget_host_day"] += 1
