"""crawlspace: a polite, crash-safe web crawler."""

__version__ = "0.1.0"

from crawlspace.config import CrawlConfig, build_config
from crawlspace.crawl import Crawler, CrawlSummary

__all__ = ["CrawlConfig", "CrawlSummary", "Crawler", "__version__", "build_config"]
