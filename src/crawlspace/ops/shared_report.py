"""`crawlspace stats --frontier`: the figures of a shared Redis frontier, as a table or a dict.

The per-worker figures (fetch statuses, bytes, duplicates, WARC files) stay in each worker's own
directory: `crawlspace stats DIR`.
"""

from __future__ import annotations

import itertools
from typing import Any

from rich.console import Console
from rich.table import Table


def frontier_summary(
    url: str, *, namespace: str = "cs", buckets: int | None = None
) -> dict[str, Any]:
    """``store.redis.views.frontier_stats`` of the crawl at ``url``, opened for reading only."""
    from crawlspace.ops.stats import link_duplicate_rates
    from crawlspace.store.redis.views import frontier_stats, frontier_view

    with frontier_view(url, namespace=namespace, buckets=buckets) as frontier:
        stats = frontier_stats(frontier)
    stats["dedup"].update(link_duplicate_rates(stats["dedup"]))
    return stats


# A dashboard refreshes every few seconds: its host table reads this many hosts at most.
HOSTS_READ = 5000


def frontier_hosts(
    url: str, *, namespace: str = "cs", buckets: int | None = None, limit: int = 500
) -> list[dict[str, Any]]:
    """The busiest hosts of a shared crawl (of the first ``HOSTS_READ`` read), in the columns
    of the dashboard's host table."""
    from crawlspace.store.redis.views import frontier_view, iter_frontier_records

    with frontier_view(url, namespace=namespace, buckets=buckets) as frontier:
        read = list(itertools.islice(iter_frontier_records(frontier, "hosts"), HOSTS_READ))
    read.sort(key=lambda h: (-h["fetched"], -h["queued"], h["host_key"]))
    return [
        {
            "host_key": h["host_key"],
            "queued": h["queued"],
            "in_flight": h["in_flight"],
            "admitted": h["admitted"],
            "fetched": h["fetched"],
            "next_allowed_at": h["next_allowed_at"],
            "robots": h["robots_outcome"],
            "robots_status": h["robots_status"],
            "robots_expires_at": h["robots_expires_at"],
            "backoff_level": h["backoff_level"],
            "failures": h["failures"],
        }
        for h in read[:limit]
    ]


def frontier_host_queue(
    url: str, host_key: str, *, namespace: str = "cs", buckets: int | None = None, limit: int
) -> list[dict[str, Any]]:
    """The next ``limit`` URLs of one host of a shared crawl, in lease order, in the columns of
    the dashboard's queue view (dashboard/data.py host_queue)."""
    from crawlspace.store.redis.views import frontier_view, host_queue

    with frontier_view(url, namespace=namespace, buckets=buckets) as frontier:
        records = host_queue(frontier, host_key, limit)
    return [
        {
            "url": r["url"],
            "priority": int(r["prio"]),
            "depth": int(r["depth"]),
            "source": r["src"],
            "attempts": int(r.get("attempts") or 0),
        }
        for r in records
    ]


def _pairs(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in counts.items()) or "-"


def print_frontier_stats(stats: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title=f"shared frontier {stats['namespace']!r}", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("URLs known", f"{stats['urls']:,} ({stats['queued']:,} queued)")
    table.add_row("in flight", f"{stats['in_flight']:,}")
    table.add_row("pages fetched", f"{stats['fetched']:,}")
    table.add_row(
        "hosts (crawled / ready / known)",
        f"{stats['hosts_crawled']:,} / {stats['hosts_ready']:,} / {stats['hosts']:,}",
    )
    table.add_row("URL states", _pairs(stats["states"]))
    table.add_row("excluded/failed", _pairs(stats["reasons"]))
    table.add_row("links rejected", _pairs(stats["rejections"]))
    table.add_row("robots.txt", _pairs(stats["robots"]))
    table.add_row("completion events", f"{stats['events']:,}")
    table.add_row("seed hosts / worker epochs", f"{stats['seed_hosts']:,} / {stats['epochs']:,}")
    table.add_row("buckets", f"{stats['buckets']:,}")
    if stats["wait_short"]:
        table.add_row("replication not confirmed", f"{stats['wait_short']:,} completions")
    if stats["wait_lease_short"]:
        table.add_row("leases given back unconfirmed", f"{stats['wait_lease_short']:,}")
    console.print(table)
