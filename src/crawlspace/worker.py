"""Many crawler processes on one shared frontier: ``crawlspace seed`` and ``crawlspace worker``.

Each worker is the ordinary Crawler with a ``SharedStore``: frontier operations go to Redis (or a
Redis Cluster), what the worker fetched goes to its own directory (``DIR/crawl.db`` + WARC files).
Politeness is global because every host's token lives in one Redis hash slot.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from crawlspace.config import CrawlConfig
from crawlspace.crawl import Crawler, CrawlSummary, frontier_limits
from crawlspace.store.redis.content import RedisContentIndex
from crawlspace.store.redis.frontier import DEFAULT_BUCKETS, RedisFrontier, connect
from crawlspace.store.shared import SharedStore


@dataclass(frozen=True, slots=True)
class Durability:
    """A lease grant must reach ``wait_replicas`` replicas before its fetch, and a page's links
    on other shards before it completes (``WAIT``, at most ``wait_timeout`` s), so a failover can
    neither give one host to two workers at once nor lose links (store/redis/wait.py).
    0 replicas: off."""

    wait_replicas: int = 1
    wait_timeout: float = 0.2


def open_frontier(
    config: CrawlConfig,
    url: str,
    *,
    namespace: str = "cs",
    buckets: int = DEFAULT_BUCKETS,
    durability: Durability | None = None,
) -> RedisFrontier:
    """Connect and take a fresh worker epoch (the fencing token of this process's leases)."""
    durability = durability or Durability()
    frontier = RedisFrontier(
        connect(url),
        frontier_limits(config),
        namespace=namespace,
        buckets=buckets,
        wait_replicas=durability.wait_replicas,
        wait_timeout=durability.wait_timeout,
    )
    frontier.hold_seconds = 2 * config.lease_seconds  # outlives every fetch of a live worker
    return frontier


def _crawler(
    config: CrawlConfig,
    out_dir: Path,
    url: str,
    namespace: str,
    buckets: int,
    *,
    durability: Durability | None = None,
) -> Crawler:
    def factory(db_path: Path) -> SharedStore:
        frontier = open_frontier(
            config, url, namespace=namespace, buckets=buckets, durability=durability
        )
        content = RedisContentIndex(
            frontier, config.near_duplicate_bits, config.near_duplicate_max_pages
        )
        return SharedStore(db_path, frontier, content)

    return Crawler(config, out_dir, store_factory=factory)


def seed_frontier(
    config: CrawlConfig,
    url: str,
    seeds: Sequence[str],
    *,
    namespace: str = "cs",
    buckets: int = DEFAULT_BUCKETS,
) -> int:
    """Normalize ``seeds`` exactly as ``crawl`` does and add them to the shared frontier."""
    with tempfile.TemporaryDirectory(prefix="crawlspace-seed-") as scratch:
        crawler = _crawler(config, Path(scratch), url, namespace, buckets)
        try:
            return crawler.add_seeds(seeds)
        finally:
            crawler.close()


def run_worker(
    config: CrawlConfig,
    out_dir: Path,
    url: str,
    *,
    namespace: str = "cs",
    buckets: int = DEFAULT_BUCKETS,
    durability: Durability | None = None,
) -> CrawlSummary:
    """Crawl from the shared frontier until no worker holds a lease and nothing is queued."""
    crawler = _crawler(config, out_dir, url, namespace, buckets, durability=durability)
    try:
        return crawler.run()
    finally:
        crawler.close()
