"""The sections of `crawlspace stats` read straight from a crawl.db: dedup, traps and revisits.

Read-only, and they work on a crawl.db of any age (a table or column a newer version added may be
missing). They live on the read side, beside the report that assembles them (report.py), not in
the engine modules that write those tables.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from crawlspace.frontier.budgets import WINDOW_NOTE, decode_window
from crawlspace.frontier.learned import NOTE as LEARNED
from crawlspace.frontier.learned import Learned

__all__ = ["dedup_stats", "freshness_stats", "link_duplicate_rates", "trap_stats"]


def dedup_stats(db: sqlite3.Connection) -> dict[str, int | float]:
    """The dedup section of ``crawlspace stats`` (read-only; works on a crawl.db of any age)."""
    counters = {
        str(name): int(value)
        for name, value in db.execute(
            "SELECT name, value FROM counters WHERE name LIKE 'dedup.%' OR name LIKE 'seen.%'"
        )
    }
    out: dict[str, int | float] = {k.partition(".")[2]: v for k, v in counters.items()}
    have = {row[1] for row in db.execute("PRAGMA table_info(fetches)")}
    if "near_dup_of" in have:
        exact, near, clusters = db.execute(
            "SELECT COUNT(dup_of), COUNT(near_dup_of), COUNT(DISTINCT near_dup_of) FROM fetches"
        ).fetchone()
        out.update(exact_duplicates=exact, near_duplicates=near, near_clusters=clusters)
    out.update(link_duplicate_rates(out))
    return out


def link_duplicate_rates(dedup: Mapping[str, int | float]) -> dict[str, float]:
    """The share of a crawl's links that were duplicates, at each stage of link dedup, from
    its ``dedup.`` counters (prefix removed): a crawl's, or a shared frontier's."""
    total = dedup.get("links_total", 0)
    rates = {}
    for stage in ("raw", "normalized", "policy"):
        distinct = dedup.get(f"links_distinct_{stage}")
        if total and distinct is not None:
            rates[f"link_duplicate_rate_{stage}"] = round(1.0 - distinct / total, 4)
    return rates


def freshness_stats(db: sqlite3.Connection) -> dict[str, Any]:
    """The ``revisits`` section of ``crawlspace stats``: how late due URLs were leased."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    columns = {r[1] for r in db.execute("PRAGMA table_info(urls)")}
    out: dict[str, Any] = {}
    if "next_fetch_at" in columns:
        out["scheduled"] = int(
            db.execute("SELECT COUNT(*) FROM urls WHERE next_fetch_at IS NOT NULL").fetchone()[0]
        )
        out["queued_revisits"] = int(
            db.execute(
                "SELECT COUNT(*) FROM urls WHERE state = 'queued' AND priority < 0"
            ).fetchone()[0]
        )
    out["not_modified"] = int(
        db.execute("SELECT COUNT(*) FROM fetches WHERE status = 304").fetchone()[0]
    )
    if "revisit_lags" in tables:
        lags = sorted(float(r[0]) for r in db.execute("SELECT lag FROM revisit_lags"))
        out["revisits_leased"] = len(lags)
        if lags:
            out["due_to_lease_p50_s"] = round(_percentile(lags, 0.50), 3)
            out["due_to_lease_p99_s"] = round(_percentile(lags, 0.99), 3)
    return out


def trap_stats(db: sqlite3.Connection) -> dict[str, Any]:
    """The ``traps`` section of ``crawlspace stats`` (read-only; any crawl.db age)."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    out: dict[str, Any] = {}
    flagged: dict[str, float | None] = {}
    if "host_discovery" in tables:  # a crawl.db from before the window became a host note
        flagged.update(
            db.execute(
                "SELECT h.host_key, d.last_ratio FROM host_discovery d"
                " JOIN hosts h ON h.id = d.host_id WHERE d.flagged = 1"
            ).fetchall()
        )
    if "host_notes" in tables:
        # Hosts whose discovery window is flagged (frontier/budgets.py).
        for host, text in _notes(db, WINDOW_NOTE):
            window = decode_window(text)
            if window.flagged:
                flagged[host] = window.last_ratio
            else:
                flagged.pop(host, None)
        # URL families flagged by what they yield (frontier/trap_yield.py).
        out["flagged_families"] = [
            {"host": host, "family": family, "reason": reason}
            for host, text in _notes(db, LEARNED)
            for family, reason in sorted(Learned.decode(text).traps.items())
        ]
    if flagged or "host_discovery" in tables or "host_notes" in tables:
        out["flagged_hosts"] = [
            {"host": host, "discovery_ratio": ratio} for host, ratio in sorted(flagged.items())
        ]
    if "host_templates" in tables:
        row = db.execute("SELECT COUNT(*), MAX(urls) FROM host_templates").fetchone()
        out["templates"] = int(row[0])
        out["largest_template"] = int(row[1] or 0)
    return out


def _notes(db: sqlite3.Connection, name: str) -> list[tuple[str, str]]:
    """Each host's note ``name``: (host, text), by host."""
    return db.execute(
        "SELECT h.host_key, n.text FROM host_notes n JOIN hosts h ON h.id = n.host_id"
        " WHERE n.name = ? ORDER BY h.host_key",
        (name,),
    ).fetchall()


def _percentile(sorted_values: list[float], q: float) -> float:
    # Nearest-rank percentile: a value that was actually observed.
    index = max(0, min(len(sorted_values) - 1, round(q * len(sorted_values) + 0.5) - 1))
    return sorted_values[index]
