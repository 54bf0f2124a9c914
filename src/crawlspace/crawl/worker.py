"""Many crawler processes on one shared frontier: ``crawlspace seed`` and ``crawlspace worker``.

Each worker is the ordinary Crawler with a ``SharedStore``: frontier operations go to Redis (or a
Redis Cluster), what the worker fetched goes to its own directory (``DIR/crawl.db`` + WARC files).
Politeness is global because every host's token lives in one Redis hash slot.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler, CrawlSummary, frontier_limits
from crawlspace.crawl.settings import SettingChange, given_by_default, settle, stored_form
from crawlspace.crawl.setup import lift_exclusions
from crawlspace.errors import ConfigError
from crawlspace.store.redis.captures import RedisCaptureLog
from crawlspace.store.redis.content import RedisContentIndex
from crawlspace.store.redis.frontier import DEFAULT_BUCKETS, RedisFrontier, connect
from crawlspace.store.redis.scripts import ride_out
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
        feed_entries=config.feed_stream_entries if config.feed else 0,
    )
    frontier.hold_seconds = 2 * config.lease_seconds  # outlives every fetch of a live worker
    return frontier


log = logging.getLogger("crawlspace.crawl.worker")
# Settings only the single-process engine can honour: a worker refuses them in one line. (A
# Bloom filter per worker could say "definitely new" of a URL another worker added.)
SINGLE_PROCESS_ONLY = frozenset({"bloom_expected_urls", "bloom_fp_rate"})
# A worker starting during a failover waits for the cluster as the frontier's calls do.
RETRY_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class Resume:
    """The settings this process was given (None: those that differ from the defaults) and
    whether it may change the ones the shared crawl started with (crawl/settings.py)."""

    given: frozenset[str] | None = None
    reconfigure: bool = False


def shared_settings(
    config: CrawlConfig, url: str, namespace: str, resume: Resume
) -> tuple[CrawlConfig, list[SettingChange]]:
    """The settings of the crawl in ``namespace``: stored in Redis (``{ns}:settings``) by the
    first process, then used by every ``seed`` and ``worker``, as a crawl directory does; and
    the changes this process made to them (``--reconfigure``)."""
    given = given_by_default(config) if resume.given is None else resume.given
    refused = sorted(given & SINGLE_PROCESS_ONLY)
    if refused:
        raise ConfigError(
            f"{', '.join(refused)}: the Bloom filter of a single-process crawl; a shared"
            " frontier's seen set is exact in Redis with no filter in front (leave them out)"
        )
    client = connect(url)
    key = f"{namespace}:settings"

    def store(form: str, *, first: bool) -> bool:
        return bool(ride_out(lambda: client.set(key, form, nx=first), RETRY_SECONDS))

    try:
        while True:
            stored = ride_out(lambda: client.get(key), RETRY_SECONDS)
            settled, changes = settle(config, stored, given, reconfigure=resume.reconfigure)
            if stored is None and not store(stored_form(settled), first=True):
                continue  # another process stored them first: settle against those
            if changes:
                store(stored_form(settled), first=False)
                for change in changes:
                    log.warning("--reconfigure: %s", change.describe())
            return settled, changes
    finally:
        client.close()


def _crawler(
    config: CrawlConfig,
    out_dir: Path,
    url: str,
    namespace: str,
    buckets: int,
    *,
    durability: Durability | None = None,
    resume: Resume | None = None,
) -> Crawler:
    config, changes = shared_settings(config, url, namespace, resume or Resume())

    def factory(db_path: Path) -> SharedStore:
        frontier = open_frontier(
            config, url, namespace=namespace, buckets=buckets, durability=durability
        )
        content = RedisContentIndex(
            frontier, config.near_duplicate_bits, config.near_duplicate_max_pages
        )
        # What the other workers archived lately, for revisit records (warc_revisit_window).
        window = config.warc_revisit_window
        captures = RedisCaptureLog(frontier, window) if window else None
        return SharedStore(db_path, frontier, content, captures)

    crawler = Crawler(config, out_dir, store_factory=factory)
    lift_exclusions(crawler.store, changes, crawler.clock.now())  # by the process that changed
    return crawler


def seed_frontier(
    config: CrawlConfig,
    url: str,
    seeds: Sequence[str],
    *,
    namespace: str = "cs",
    buckets: int = DEFAULT_BUCKETS,
    resume: Resume | None = None,
) -> int:
    """Normalize ``seeds`` exactly as ``crawl`` does and add them, and ``config.sitemaps``, to
    the shared frontier; returns how many seeds were new."""
    with tempfile.TemporaryDirectory(prefix="crawlspace-seed-") as scratch:
        crawler = _crawler(config, Path(scratch), url, namespace, buckets, resume=resume)
        try:
            added = crawler.add_seeds(seeds)
            crawler.add_sitemaps(config.sitemaps)
            return added
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
    resume: Resume | None = None,
) -> CrawlSummary:
    """Crawl from the shared frontier until no worker holds a lease and nothing is queued."""
    crawler = _crawler(
        config, out_dir, url, namespace, buckets, durability=durability, resume=resume
    )
    try:
        return crawler.run()
    finally:
        crawler.close()
