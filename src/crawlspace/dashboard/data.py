"""What the dashboard and the HTML report show, read from ``crawl.db`` on a read-only connection.

One snapshot is a JSON-ready dict: the `crawlspace stats` summary, the sampled time series
(columnar, as the charts want it), a per-host table and the most recent errors. A worker of a
shared frontier shows the crawl's totals and hosts, read from the frontier.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawlspace.errors import OutputDirError
from crawlspace.ops.report import crawl_stats, open_crawl_db

# Enough points for a plot a few thousand pixels wide; longer series are thinned evenly.
MAX_POINTS = 2000
MAX_HOSTS = 500
MAX_ERRORS = 50
MAX_QUEUE = 100  # URLs of one host's queue the queue view lists
SAMPLE_COLUMNS = (
    "ts",
    "pages",
    "pages_per_s",
    "queued",
    "ready_hosts",
    "in_flight",
    "discovered",
    "discovery_ratio",
    "errors",
    "bytes",
    "duplicates",
    "latency_p50_ms",
    "latency_p95_ms",
    "status_2xx",
    "status_3xx",
    "status_4xx",
    "status_5xx",
)


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}


def samples(db: sqlite3.Connection) -> dict[str, list[Any]]:
    have = _columns(db, "samples")
    if "ts" not in have:
        return {name: [] for name in SAMPLE_COLUMNS}
    # A crawl.db from before a column was added (opened read-only here): NULL for it.
    picked = ", ".join(name if name in have else f"NULL AS {name}" for name in SAMPLE_COLUMNS)
    rows = db.execute(f"SELECT {picked} FROM samples ORDER BY ts").fetchall()
    if len(rows) > MAX_POINTS:
        step = len(rows) / MAX_POINTS
        rows = [rows[int(i * step)] for i in range(MAX_POINTS - 1)] + [rows[-1]]
    return {name: [row[i] for row in rows] for i, name in enumerate(SAMPLE_COLUMNS)}


def hosts(db: sqlite3.Connection, limit: int = MAX_HOSTS) -> list[dict[str, Any]]:
    """One row per host, busiest first. Columns other engineers add (backoff) show when present."""
    optional = [c for c in ("backoff_level", "failures") if c in _columns(db, "hosts")]
    extra = "".join(f", h.{c}" for c in optional)
    rows = db.execute(
        "SELECT h.id, h.host_key, h.queued, h.in_flight, h.admitted, h.next_allowed_at,"
        f" r.outcome AS robots, r.status AS robots_status, r.expires_at AS robots_expires_at{extra}"
        " FROM hosts h LEFT JOIN robots r ON r.host_id = h.id"
        " ORDER BY h.fetched DESC, h.queued DESC, h.id LIMIT ?",
        (limit,),
    ).fetchall()
    ids = [row["id"] for row in rows]
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    per_host = {
        row[0]: row[1:]
        for row in db.execute(
            "SELECT u.host_id, COUNT(*), SUM(f.status >= 400), SUM(f.status = 429),"
            " COUNT(f.text_sha256), COUNT(DISTINCT f.text_sha256)"
            f" FROM fetches f JOIN urls u ON u.id = f.url_id WHERE u.host_id IN ({marks})"
            " GROUP BY u.host_id",
            ids,
        )
    }
    failed = dict(
        db.execute(
            "SELECT host_id, COUNT(*) FROM urls WHERE state = 'failed'"
            f" AND host_id IN ({marks}) GROUP BY host_id",
            ids,
        ).fetchall()
    )
    table = []
    for row in rows:
        fetched, errors, s429, texts, distinct = per_host.get(row["id"], (0, 0, 0, 0, 0))
        record = {k: row[k] for k in row.keys() if k != "id"}  # noqa: SIM118 (sqlite3.Row)
        record.update(
            fetched=fetched,
            errors=int(errors or 0),
            status_429=int(s429 or 0),
            failed=failed.get(row["id"], 0),
            duplicate_rate=(texts - distinct) / texts if texts else 0.0,
        )
        table.append(record)
    return table


def recent_errors(db: sqlite3.Connection, limit: int = MAX_ERRORS) -> list[dict[str, Any]]:
    """The latest responses of status 400 or more and URLs that failed, each with the page that
    led to it (``via``; None for a seed, or a crawl.db from before it was kept)."""
    fetch_via = "via" if "via" in _columns(db, "fetches") else "NULL"
    failed_via = (
        "(SELECT v.url FROM urls v WHERE v.id = urls.via_id)"
        if "via_id" in _columns(db, "urls")
        else "NULL"
    )
    rows = db.execute(
        "SELECT * FROM ("
        f" SELECT url, CAST(status AS TEXT) AS what, fetched_at AS at, {fetch_via} AS via"
        " FROM fetches WHERE status >= 400"
        " UNION ALL"
        " SELECT url, 'failed: ' || COALESCE(reason, '?') AS what, updated_at AS at,"
        f" {failed_via} AS via FROM urls WHERE state = 'failed'"
        ") ORDER BY at DESC LIMIT ?",
        (limit,),
    ).fetchall()
    return [dict(row) for row in rows]


@dataclass(frozen=True, slots=True)
class SharedFrontier:
    """Where a worker's crawl-wide figures live: its shared frontier (``--frontier``)."""

    url: str
    namespace: str = "cs"
    buckets: int | None = None


def snapshot(out_dir: Path | str, frontier: SharedFrontier | None = None) -> dict[str, Any]:
    """Everything one page view needs; ``ready`` is False while no crawl.db exists yet. A
    worker's (``frontier`` given) shows the crawl's totals and hosts, read from the shared
    frontier; its samples and recent errors are its own."""
    try:
        db = open_crawl_db(out_dir)
    except OutputDirError as exc:
        return {"ready": False, "message": str(exc)}
    try:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        data: dict[str, Any] = {
            "ready": True,
            "dir": str(out_dir),
            "summary": crawl_stats(out_dir),
            "meta": meta,
            "samples": samples(db),
            "hosts": hosts(db),
            "errors": recent_errors(db),
        }
    finally:
        db.close()
    if frontier is not None:
        data.update(crawl_wide(frontier, data["summary"]))
    return data


def crawl_wide(frontier: SharedFrontier, own: dict[str, Any]) -> dict[str, Any]:
    """A worker's snapshot parts that are the crawl's: totals and the busiest hosts."""
    from crawlspace.ops.shared_report import frontier_hosts, frontier_summary

    stats = frontier_summary(frontier.url, namespace=frontier.namespace, buckets=frontier.buckets)
    summary = {
        **own,
        "pages": stats["fetched"],
        "queued": stats["queued"],
        "urls": stats["urls"],
        "hosts": stats["hosts"],
        "hosts_crawled": stats["hosts_crawled"],
        "exact_duplicates": stats["dedup"].get("exact_duplicates", 0),
        "rejections": stats["rejections"],
    }
    rows = frontier_hosts(
        frontier.url, namespace=frontier.namespace, buckets=frontier.buckets, limit=MAX_HOSTS
    )
    shared = {"url": frontier.url, "namespace": frontier.namespace}
    return {"summary": summary, "hosts": rows, "frontier": shared}


def queued_urls(db: sqlite3.Connection, host_key: str, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` URLs queued on ``host_key``, in the order its leases take them
    (store/sqlite/lease.py: priority, then admission)."""
    rows = db.execute(
        "SELECT u.url, u.priority, u.depth, u.source, u.attempts FROM urls u"
        " JOIN hosts h ON h.id = u.host_id WHERE h.host_key = ? AND u.state = 'queued'"
        " ORDER BY u.priority, u.id LIMIT ?",
        (host_key, limit),
    ).fetchall()
    return [dict(row) for row in rows]


def host_queue(
    out_dir: Path | str, host_key: str, frontier: SharedFrontier | None = None
) -> dict[str, Any]:
    """One host's queue view: its next URLs in lease order, from crawl.db or, for a worker,
    from the shared frontier (whose queues are the crawl's)."""
    if frontier is not None:
        from crawlspace.ops.shared_report import frontier_host_queue

        urls = frontier_host_queue(
            frontier.url,
            host_key,
            namespace=frontier.namespace,
            buckets=frontier.buckets,
            limit=MAX_QUEUE,
        )
        return {"host": host_key, "urls": urls}
    db = open_crawl_db(out_dir)
    try:
        return {"host": host_key, "urls": queued_urls(db, host_key, MAX_QUEUE)}
    finally:
        db.close()
