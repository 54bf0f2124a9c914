"""The Scrapy side of crawl_vs_scrapy.py, run as its own process.

Crawls from SEED URLs with the same politeness as the crawlspace run (robots obeyed, one
request in flight per host, no delay), follows links on the seeds' host:port pairs only, and
writes every response body to OUT/bodies.jsonl (one JSON object per response).

Run: python benchmarks/scrapy_spider.py --out DIR [--max-pages N] SEED...
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from scrapy import Request, Spider
from scrapy.crawler import Crawler, CrawlerProcess
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor


class BodyWriter:
    """Item pipeline: one JSON line per response, body included, like a minimal archive."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.file: TextIO | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BodyWriter:
        return cls(crawler.settings["BENCH_BODIES"])

    def open_spider(self) -> None:
        # Open for the pipeline's lifetime; close_spider() closes it.
        self.file = Path(self.path).open("w", encoding="utf-8")  # noqa: SIM115

    def close_spider(self) -> None:
        if self.file is not None:
            self.file.close()

    def process_item(self, item: dict[str, Any]) -> dict[str, Any]:
        assert self.file is not None
        self.file.write(json.dumps(item) + "\n")
        return item


class BenchSpider(Spider):
    name = "bench"

    def __init__(self, seeds: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = seeds  # the default start() requests each, calling parse()
        netlocs = sorted({urlsplit(s).netloc for s in seeds})
        self.allowed_domains = sorted({urlsplit(s).hostname or "" for s in seeds})
        # allow_domains would compare hostnames only; the regex pins host *and* port.
        pattern = "|".join(n.replace(".", r"\.") for n in netlocs)
        self.links = LinkExtractor(allow=rf"^http://(?:{pattern})/")

    def parse(self, response: Response) -> Iterator[dict[str, Any] | Request]:
        if not isinstance(response, TextResponse):
            body = response.body.decode("latin-1")
            yield {"url": response.url, "status": response.status, "body": body}
            return
        yield {"url": response.url, "status": response.status, "body": response.text}
        if response.status == 200:
            # Drop fragments before making Requests, as crawlspace normalizes before its seen
            # check; otherwise a docs page yields one Request per #anchor for the dupefilter.
            links = self.links.extract_links(response)
            for url in {link.url.split("#", 1)[0] for link in links}:
                yield Request(url, callback=self.parse)


def settings(out: Path, max_pages: int, max_depth: int, user_agent: str) -> dict[str, Any]:
    return {
        "BENCH_BODIES": str(out / "bodies.jsonl"),
        "ITEM_PIPELINES": {BodyWriter: 100},
        "USER_AGENT": user_agent,
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS": 64,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "HTTPCACHE_ENABLED": False,
        "HTTPERROR_ALLOW_ALL": True,  # crawlspace records 404s too; count them on both sides
        "DEPTH_LIMIT": max_depth,
        "CLOSESPIDER_ITEMCOUNT": max_pages,  # 0 = no limit
        "LOG_LEVEL": os.environ.get("BENCH_SCRAPY_LOG", "WARNING"),
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,  # Scrapy >= 2.19 would open a control port otherwise
        # Scrapy's documented setting for crawls over many domains ("Broad Crawls" page).
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("seeds", nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--max-pages", type=int, default=0)
    parser.add_argument("--max-depth", type=int, default=50)
    parser.add_argument("--user-agent", default="BenchBot/1.0")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    process = CrawlerProcess(settings(args.out, args.max_pages, args.max_depth, args.user_agent))
    process.crawl(BenchSpider, seeds=args.seeds)
    process.start()


if __name__ == "__main__":
    main()
