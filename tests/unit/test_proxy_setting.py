"""The proxy setting: one clear line for a URL that is not an HTTP proxy's, and never stored
with the crawl (it is this machine's way out and may hold a password)."""

from __future__ import annotations

import json

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.settings import stored_form
from crawlspace.errors import ConfigError


@pytest.mark.parametrize(
    "proxy",
    ["socks5://127.0.0.1:1080", "http://127.0.0.1", "127.0.0.1:3128", "http://:3128", "http://h:x"],
)
def test_anything_but_an_http_proxy_url_is_refused(proxy: str) -> None:
    with pytest.raises(ConfigError, match=r"expected http://\[USER:PASSWORD@\]HOST:PORT"):
        CrawlConfig(proxy=proxy)


def test_a_proxy_is_accepted_and_not_stored() -> None:
    config = CrawlConfig(proxy="http://user:secret@proxy.example:3128")
    assert "secret" not in stored_form(config)
    assert "proxy" not in json.loads(stored_form(config))
