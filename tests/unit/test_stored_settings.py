"""A crawl remembers its settings (crawl/settings.py): a setting added later with a default that
changes what a crawl does keeps an older crawl doing what it did."""

from __future__ import annotations

import json

from crawlspace.config import CrawlConfig
from crawlspace.crawl.settings import settle, stored_form


def test_a_crawl_stored_before_query_order_keeps_keying_urls_as_linked() -> None:
    old = json.loads(stored_form(CrawlConfig()))
    del old["query_order"]
    settled, changes = settle(CrawlConfig(), json.dumps(old), frozenset(), reconfigure=False)
    assert (settled.query_order, changes) == ("learned", [])
    # Given by this run, it is this run's: a crawl may opt in.
    given = CrawlConfig(query_order="ignored")
    settled, _ = settle(given, json.dumps(old), frozenset({"query_order"}), reconfigure=False)
    assert settled.query_order == "ignored"
    # A crawl stored with it keeps its value; a new one takes the default.
    settled, _ = settle(CrawlConfig(), stored_form(CrawlConfig()), frozenset(), reconfigure=False)
    assert settled.query_order == "ignored"
    assert settle(CrawlConfig(), None, frozenset(), reconfigure=False)[0].query_order == "ignored"
