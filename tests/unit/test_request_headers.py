"""fetch/request_headers.py: which added headers a URL's request carries, and the one-line
refusals of wrong entries."""

from __future__ import annotations

import re

import pytest

from crawlspace.errors import ConfigError
from crawlspace.fetch.request_headers import RequestHeaders


def test_a_hosts_headers_go_to_that_host_and_port_only() -> None:
    headers = RequestHeaders.parse(
        ["X-Run: 1"],
        ["shop.test Cookie: a=1", "shop.test:8443 X-Only: 8443", "other.test X-Other: o"],
        ["shop.test user:pa:ss"],
    )
    assert headers.for_url("https://shop.test/cart") == [
        ("X-Run", "1"),
        ("Cookie", "a=1"),
        ("Authorization", "Basic dXNlcjpwYTpzcw=="),  # "user:pa:ss": the password may hold ':'
    ]
    assert ("X-Only", "8443") in headers.for_url("https://SHOP.test:8443/")
    assert headers.for_url("http://elsewhere.test/") == [("X-Run", "1")]
    assert not RequestHeaders.parse()
    assert RequestHeaders.parse().for_url("http://a.test/") == []


@pytest.mark.parametrize(
    ("headers", "host_headers", "auth", "message"),
    [
        (["User-Agent: x"], [], [], "set user_agent instead"),
        (["if-none-match: x"], [], [], "conditional GET"),
        (["No colon"], [], [], "expected 'Name: value'"),
        (["Bad Name: x"], [], [], "expected 'Name: value'"),
        (["X-A: line\r\nX-B: injected"], [], [], "line break"),
        ([], ["Cookie: a=1"], [], "expected HOST[:PORT] first"),
        ([], ["shop.test:99999 X-A: 1"], [], "expected HOST[:PORT] first"),
        ([], [], ["shop.test user"], "USER:PASSWORD"),
        ([], [], ["user:pass"], "USER:PASSWORD"),
    ],
)
def test_wrong_entries_are_refused_naming_them(
    headers: list[str], host_headers: list[str], auth: list[str], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        RequestHeaders.parse(headers, host_headers, auth)
