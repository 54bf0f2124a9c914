"""crawlspace: a polite, crash-safe web crawler."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawlspace.version import __version__

if TYPE_CHECKING:
    from crawlspace.config import CrawlConfig
    from crawlspace.config_sources import build_config
    from crawlspace.crawl.crawler import Crawler, CrawlSummary

__all__ = ["CrawlConfig", "CrawlSummary", "Crawler", "__version__", "build_config"]

_PUBLIC = {
    "CrawlConfig": "crawlspace.config",
    "build_config": "crawlspace.config_sources",
    "Crawler": "crawlspace.crawl.crawler",
    "CrawlSummary": "crawlspace.crawl.crawler",
}


def __getattr__(name: str) -> Any:
    # Imported on first use (PEP 562): every parse worker process imports this package, and
    # eagerly importing the crawler (aiohttp, asyncio, warcio, ...) cost each one ~10 MB.
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'crawlspace' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
