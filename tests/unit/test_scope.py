"""Tests for crawlspace.discovery.scope."""

from __future__ import annotations

import pytest

from crawlspace.discovery.scope import SCOPE_REASON, Scope, registrable_domain
from crawlspace.urls import normalize


def _n(url: str) -> str:
    result = normalize(url)
    assert result is not None
    return result


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("example.com", "example.com"),
        ("www.example.com", "example.com"),
        ("a.b.c.example.com", "example.com"),
        ("a.example.co.uk", "example.co.uk"),
        ("example.co.uk", "example.co.uk"),
        # Public suffixes themselves have no registrable domain: fall back to the hostname.
        ("co.uk", "co.uk"),
        ("com", "com"),
        # PRIVATE section of the PSL is included by publicsuffixlist by default.
        ("alice.github.io", "alice.github.io"),
        ("www.alice.github.io", "alice.github.io"),
        ("github.io", "github.io"),
        ("x.y.blogspot.com", "y.blogspot.com"),
        # IP literals and single-label hosts compare by exact hostname.
        ("127.0.0.1", "127.0.0.1"),
        ("10.1.2.3", "10.1.2.3"),
        ("::1", "::1"),
        ("2001:db8::1", "2001:db8::1"),
        ("localhost", "localhost"),
        ("intranet", "intranet"),
        ("xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("shop.xn--bcher-kva.de", "xn--bcher-kva.de"),
        # Unknown TLDs act like one-label suffixes ("*" default rule, PSL algorithm step 2).
        ("a.b.notarealtld", "b.notarealtld"),
    ],
)
def test_registrable_domain(host: str, domain: str) -> None:
    assert registrable_domain(host) == domain


def test_host_mode_same_hostname_any_port_any_scheme() -> None:
    scope = Scope("host", [_n("https://example.com/start")])
    assert scope.reason(_n("https://example.com/other")) is None
    assert scope.reason(_n("http://example.com/")) is None
    assert scope.reason(_n("http://example.com:8080/x")) is None
    assert scope.reason(_n("https://www.example.com/")) == SCOPE_REASON
    assert scope.reason(_n("https://example.org/")) == SCOPE_REASON
    assert scope.reason(_n("https://evil-example.com/")) == SCOPE_REASON


def test_domain_mode_psl() -> None:
    scope = Scope("domain", [_n("http://a.example.co.uk/")])
    assert scope.reason(_n("http://b.example.co.uk/")) is None
    assert scope.reason(_n("https://example.co.uk/")) is None
    assert scope.reason(_n("http://deep.sub.example.co.uk:81/")) is None
    assert scope.reason(_n("http://other.co.uk/")) == SCOPE_REASON
    assert scope.reason(_n("http://co.uk/")) == SCOPE_REASON
    assert scope.reason(_n("http://example.com/")) == SCOPE_REASON


def test_domain_mode_private_suffix_github_io() -> None:
    scope = Scope("domain", [_n("https://alice.github.io/")])
    assert scope.reason(_n("https://www.alice.github.io/")) is None
    assert scope.reason(_n("https://bob.github.io/")) == SCOPE_REASON
    assert scope.reason(_n("https://github.io/")) == SCOPE_REASON


def test_domain_mode_ip_and_single_label_hosts() -> None:
    scope = Scope("domain", [_n("http://127.0.0.1:8000/"), _n("http://localhost/")])
    assert scope.reason(_n("http://127.0.0.1:9000/")) is None
    assert scope.reason(_n("http://127.0.0.2/")) == SCOPE_REASON
    assert scope.reason(_n("http://localhost:5000/")) is None
    assert scope.reason(_n("http://foo.localhost/")) == SCOPE_REASON
    v6 = Scope("domain", [_n("http://[::1]:8080/")])
    assert v6.reason(_n("http://[0::1]/")) is None
    assert v6.reason(_n("http://[::2]/")) == SCOPE_REASON


def test_domain_mode_idn_seed() -> None:
    scope = Scope("domain", [_n("http://b\u00fccher.de/")])
    assert scope.reason(_n("http://shop.B\u00dcCHER.de/")) is None
    assert scope.reason(_n("http://bucher.de/")) == SCOPE_REASON


def test_any_mode() -> None:
    scope = Scope("any")
    assert scope.reason(_n("http://anything.example/")) is None
    assert scope.reason(_n("https://[::1]:1/")) is None


def test_no_seeds_means_nothing_in_scope() -> None:
    assert Scope("host").reason(_n("http://example.com/")) == SCOPE_REASON
    assert Scope("domain").reason(_n("http://example.com/")) == SCOPE_REASON


def test_add_seed_later() -> None:
    scope = Scope("host", [_n("http://a.example/")])
    assert scope.reason(_n("http://b.example/")) == SCOPE_REASON
    scope.add_seed(_n("http://b.example/x"))
    assert scope.reason(_n("http://b.example/y")) is None
    dom = Scope("domain")
    dom.add_seed(_n("https://www.example.net/"))
    assert dom.reason(_n("http://cdn.example.net/")) is None


def test_allow_hosts_without_port() -> None:
    scope = Scope("host", [_n("http://example.com/")], allow_hosts=["cdn.example.net", "LOCALHOST"])
    assert scope.reason(_n("http://cdn.example.net/a")) is None
    assert scope.reason(_n("https://cdn.example.net:8443/a")) is None
    assert scope.reason(_n("http://localhost:1234/")) is None
    assert scope.reason(_n("http://img.cdn.example.net/")) == SCOPE_REASON


def test_allow_hosts_with_port() -> None:
    scope = Scope(
        "host",
        [_n("http://example.com/")],
        allow_hosts=["api.example.net:8080", "secure.example.net:443", "[::1]:9000"],
    )
    assert scope.reason(_n("http://api.example.net:8080/")) is None
    assert scope.reason(_n("http://api.example.net/")) == SCOPE_REASON
    assert scope.reason(_n("https://api.example.net:8081/")) == SCOPE_REASON
    # No explicit port: the scheme default (443 for https) is the effective port.
    assert scope.reason(_n("https://secure.example.net/")) is None
    assert scope.reason(_n("http://secure.example.net/")) == SCOPE_REASON
    assert scope.reason(_n("http://[::1]:9000/")) is None
    assert scope.reason(_n("http://[::1]:9001/")) == SCOPE_REASON


def test_allow_hosts_canonicalized() -> None:
    scope = Scope(
        "domain",
        [_n("http://example.com/")],
        allow_hosts=[" B\u00fccher.DE ", "0x7f.1:80", "[0:0::1]"],
    )
    assert scope.reason(_n("http://xn--bcher-kva.de/")) is None
    assert scope.reason(_n("http://127.0.0.1/")) is None
    assert scope.reason(_n("http://127.0.0.1:81/")) == SCOPE_REASON
    assert scope.reason(_n("http://[::1]:7/")) is None


@pytest.mark.parametrize(
    "entry", ["", "host:0", "host:70000", "host:http", "[::1", "bad host", "a:b:c:d:e"]
)
def test_allow_hosts_rejects_bad_entries(entry: str) -> None:
    with pytest.raises(ValueError, match="allow_hosts entry"):
        Scope("any", allow_hosts=[entry])


def test_bad_mode() -> None:
    with pytest.raises(ValueError, match="scope mode"):
        Scope("everything", [])  # type: ignore[arg-type]


def test_contains() -> None:
    scope = Scope("host", [_n("http://example.com/")])
    assert _n("http://example.com/a") in scope
    assert _n("http://example.org/a") not in scope
    assert 42 not in scope
