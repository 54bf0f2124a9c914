"""The SQLite side of trap budgets: counters that need state, kept out of ``sqlite.py``.

Per host: URLs admitted per keyed budget's key, e.g. URL template (``host_templates``), pages
fetched per UTC day (``host_days``) and the discovery-ratio window (``host_discovery``). The pure
rules are in ``frontier/budgets.py``; every function here runs inside the caller's completion
transaction, so a crash can neither lose nor double a count.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Final

from crawlspace.frontier.budgets import DiscoveryWindow, KeyedBudget, advance_window, day_budget
from crawlspace.records import Completion, Lease, UrlCandidate
from crawlspace.store.base import FrontierLimits

__all__ = ["account_discovery", "apply_budgets", "new_urls"]

_CHUNK: Final = 500  # SQLite's default limit on host parameters is 32766; stay far below


HostIds = Callable[[sqlite3.Connection, str], int]


def new_urls(db: sqlite3.Connection, candidates: Sequence[UrlCandidate]) -> list[UrlCandidate]:
    """The candidates the store has never seen (one indexed IN query per chunk)."""
    urls = list({c.url for c in candidates})
    known: set[str] = set()
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


def _cap_keyed(
    db: sqlite3.Connection,
    fresh: list[UrlCandidate],
    budgets: Sequence[KeyedBudget],
    host_id: HostIds,
) -> list[tuple[str, str]]:
    """Count the keyed budgets of the new URLs ``fresh``; return the (url, reason) over one."""
    counts: dict[tuple[int, str], int] = {}
    over: list[tuple[str, str]] = []
    for cand in fresh:
        hid = host_id(db, cand.host_key)
        keys = [(hid, budget.key_of(cand.url)) for budget in budgets]
        for key in keys:
            if key not in counts:
                row = db.execute(
                    "SELECT urls FROM host_templates WHERE host_id = ? AND template = ?", key
                ).fetchone()
                counts[key] = 0 if row is None else int(row[0])
        full = next(
            (b.reason for b, k in zip(budgets, keys, strict=True) if counts[k] >= b.cap), None
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
    return over


def _count_day(
    db: sqlite3.Connection, host_id: int, now: float, cap: int, rejections: Counter[str]
) -> None:
    """One more page today; at the cap the host's clock moves to the next UTC midnight."""
    day, next_day = day_budget(now)
    db.execute(
        "INSERT INTO host_days (host_id, day, pages) VALUES (?, ?, 1)"
        " ON CONFLICT (host_id, day) DO UPDATE SET pages = pages + 1",
        (host_id, day),
    )
    pages = int(
        db.execute(
            "SELECT pages FROM host_days WHERE host_id = ? AND day = ?", (host_id, day)
        ).fetchone()[0]
    )
    if pages >= cap:
        db.execute(
            "UPDATE hosts SET next_allowed_at = MAX(next_allowed_at, ?) WHERE id = ?",
            (next_day, host_id),
        )
        if pages == cap:
            rejections["budget_host_day"] += 1


def _advance_discovery(
    db: sqlite3.Connection, host_id: int, found: int, limits: FrontierLimits
) -> bool:
    row = db.execute(
        "SELECT pages, new_urls, last_ratio, flagged FROM host_discovery WHERE host_id = ?",
        (host_id,),
    ).fetchone()
    state = (
        DiscoveryWindow() if row is None else DiscoveryWindow(row[0], row[1], row[2], bool(row[3]))
    )
    state = advance_window(
        state, found, window=limits.discovery_window, min_ratio=limits.discovery_trap_ratio
    )
    db.execute(
        "INSERT OR REPLACE INTO host_discovery (host_id, pages, new_urls, last_ratio, flagged)"
        " VALUES (?, ?, ?, ?, ?)",
        (host_id, state.pages, state.new_urls, state.last_ratio, int(state.flagged)),
    )
    return state.flagged


def apply_budgets(
    db: sqlite3.Connection,
    host_id: int,
    completion: Completion,
    now: float,
    *,
    limits: FrontierLimits,
    host_ids: HostIds,
) -> None:
    """Before the completion's links are added: the per-day page budget and the keyed budgets
    (over-budget links become exclusions)."""
    rejections: Counter[str] = Counter()
    if completion.fetch is not None and limits.max_pages_per_host_per_day:
        _count_day(db, host_id, now, limits.max_pages_per_host_per_day, rejections)
    if completion.discovered and limits.budgets:
        over = _cap_keyed(db, new_urls(db, completion.discovered), limits.budgets, host_ids)
        if over:
            dropped = {url for url, _ in over}
            completion.discovered = [c for c in completion.discovered if c.url not in dropped]
            completion.excluded = [*completion.excluded, *over]
            rejections.update(reason for _, reason in over)
    for reason, n in rejections.items():
        completion.rejections[reason] = completion.rejections.get(reason, 0) + n


def account_discovery(
    db: sqlite3.Connection,
    lease: Lease,
    host_id: int,
    completion: Completion,
    *,
    admitted: Sequence[str],
    over_host_budget: int,
    limits: FrontierLimits,
) -> None:
    """After a fetched page's links are added: its host's discovery window counts the new URLs
    (``admitted``: the rows just queued, so no lookup repeats the seen test; plus those new
    ones the per-host budget stored as excluded), and a flagged host's newly admitted links
    sink in its queue."""
    if completion.fetch is None or completion.state != "fetched":
        return
    found = len(admitted) + over_host_budget
    flagged = _advance_discovery(db, host_id, found, limits)
    penalty = limits.trap_priority_penalty
    if flagged and penalty and admitted:
        same_host = {c.url for c in completion.discovered if c.host_key == lease.host_key}
        db.executemany(
            "UPDATE urls SET priority = priority + ? WHERE url = ? AND state = 'queued'",
            [(penalty, url) for url in admitted if url in same_host],
        )
