"""The crawlee side of crawl_vs_scrapy.py, run as its own process.

crawlee-python's ParselCrawler, as fast as its documented options let it go: robots.txt obeyed
(``respect_robots_txt_file``), in-memory storage (``MemoryStorageClient``: nothing persisted),
concurrency pinned at ``--concurrency`` tasks (min = desired = max, so the autoscaler never
changes it), no session pool, no blocked-page detection, no browser impersonation, logs at
WARNING. It follows links on the seeds' host:port pairs only (a regex, as the Scrapy side) and
writes every response body to OUT/bodies.jsonl (one JSON object per response, 404s included).

crawlee has no per-host concurrency limit (``ThrottlingRequestManager`` only spaces out
requests after a 429 or a robots.txt ``Crawl-delay``), so ``--concurrency`` is global; the
benchmark sets it to the number of hosts, the most that the other crawlers' one request per
host can have in flight.

Run: python benchmarks/crawlee_crawler.py --out DIR [--max-pages N] [--concurrency N] SEED...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
from datetime import timedelta
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

from crawlee import ConcurrencySettings, service_locator
from crawlee.configuration import Configuration
from crawlee.crawlers import ParselCrawler, ParselCrawlingContext
from crawlee.http_clients import ImpitHttpClient
from crawlee.statistics import Statistics
from crawlee.storage_clients import MemoryStorageClient

# Never reached in a benchmark run: the periodic status and statistics messages stay off.
QUIET_INTERVAL = timedelta(hours=24)


def scope_pattern(seeds: list[str]) -> re.Pattern[str]:
    """Links on the seeds' host:port pairs only (host *and* port, like the Scrapy side)."""
    netlocs = sorted({urlsplit(s).netloc for s in seeds})
    return re.compile(rf"^http://(?:{'|'.join(re.escape(n) for n in netlocs)})/")


def build_crawler(
    out: TextIO,
    seeds: list[str],
    *,
    max_pages: int,
    max_depth: int,
    user_agent: str,
    concurrency: int,
) -> ParselCrawler:
    # Set before anything creates the event manager, which reads the configuration.
    service_locator.set_configuration(Configuration(log_level="WARNING", purge_on_start=True))
    service_locator.set_storage_client(MemoryStorageClient())
    crawler = ParselCrawler(
        # No impersonation: plain requests with our User-Agent (robots.txt fetches included).
        http_client=ImpitHttpClient(
            browser=None, persist_cookies_per_session=False, headers={"User-Agent": user_agent}
        ),
        respect_robots_txt_file=True,
        concurrency_settings=ConcurrencySettings(
            min_concurrency=concurrency,
            desired_concurrency=concurrency,
            max_concurrency=concurrency,
        ),
        max_requests_per_crawl=max_pages or None,
        max_crawl_depth=max_depth,
        # crawlspace and Scrapy record 4xx and 5xx responses as pages; so does this side.
        ignore_http_error_status_codes=range(400, 600),
        use_session_pool=False,
        retry_on_blocked=False,
        configure_logging=False,
        statistics=Statistics.with_default_state(
            persistence_enabled=False, log_interval=QUIET_INTERVAL, statistics_log_format="inline"
        ),
        status_message_logging_interval=QUIET_INTERVAL,
    )
    in_scope = scope_pattern(seeds)

    @crawler.router.default_handler
    async def handle(context: ParselCrawlingContext) -> None:
        response = context.http_response
        body = await response.read()
        url = context.request.loaded_url or context.request.url
        record = {
            "url": url,
            "status": response.status_code,
            "body": body.decode("utf-8", "replace"),
        }
        out.write(json.dumps(record) + "\n")
        if response.status_code == 200:
            await context.enqueue_links(strategy="all", include=[in_scope])

    return crawler


async def crawl(args: argparse.Namespace) -> None:
    with (args.out / "bodies.jsonl").open("w", encoding="utf-8") as out:
        crawler = build_crawler(
            out,
            args.seeds,
            max_pages=args.max_pages,
            max_depth=args.max_depth,
            user_agent=args.user_agent,
            concurrency=args.concurrency,
        )
        await crawler.run(args.seeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("seeds", nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--max-pages", type=int, default=0)
    parser.add_argument("--max-depth", type=int, default=50)
    parser.add_argument("--user-agent", default="BenchBot/1.0")
    parser.add_argument("--concurrency", type=int, default=0, help="0 = one per seed host")
    args = parser.parse_args()
    args.concurrency = args.concurrency or len({urlsplit(s).netloc for s in args.seeds})
    args.out.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(crawl(args))


if __name__ == "__main__":
    main()
