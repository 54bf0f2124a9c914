"""Opt-ins are narrow (issue #18): on an address only ``allow_nets`` opens, the scope is the
seeds' exact host:port pairs and ``allow_hosts`` entries, in every mode (discovery/scope.py)."""

from __future__ import annotations

import pickle

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.setup import crawl_scope
from crawlspace.discovery.scope import SCOPE_REASON, Scope, ScopeMode
from crawlspace.urls import normalize

LOOPBACK = ("127.0.0.0/8",)
MODES: tuple[ScopeMode, ...] = ("host", "domain", "any")


def _n(url: str) -> str:
    result = normalize(url)
    assert result is not None, url
    return result


def _scope(
    mode: ScopeMode,
    seeds: tuple[str, ...],
    allow_nets: tuple[str, ...] = LOOPBACK,
    allow_hosts: tuple[str, ...] = (),
) -> Scope:
    return Scope(mode, [_n(s) for s in seeds], allow_hosts, allow_nets)


def _reason(scope: Scope, url: str) -> str | None:
    return scope.reason(_n(url))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8000/", None),
        ("http://127.0.0.1:8000/deep/page.html?q=1", None),
        # Same socket, other scheme: the pair is host and port, not the scheme.
        ("https://127.0.0.1:8000/", None),
        # Another service on the same machine: the cloud-metadata and admin bait of #18.
        ("http://127.0.0.1:8099/latest/meta-data/", SCOPE_REASON),
        ("http://127.0.0.1:8099/admin/", SCOPE_REASON),
        ("http://127.0.0.1/", SCOPE_REASON),  # port 80
        ("https://127.0.0.1/", SCOPE_REASON),  # port 443
        # Another opted-in address, even on the seed's port.
        ("http://127.0.0.2:8000/", SCOPE_REASON),
        ("http://127.1.2.3:8000/", SCOPE_REASON),
        # Other spellings of loopback: alternative IPv4 forms normalize to the seed's host.
        ("http://0x7f.0.0.1:8000/", None),
        ("http://2130706433:8000/", None),
    ],
)
def test_seed_port_only_on_opted_in_loopback(
    mode: ScopeMode, url: str, expected: str | None
) -> None:
    scope = _scope(mode, ("http://127.0.0.1:8000/",))
    assert _reason(scope, url) == expected


@pytest.mark.parametrize("mode", MODES)
def test_public_hosts_keep_their_port_agnostic_rule(mode: ScopeMode) -> None:
    scope = _scope(mode, ("http://127.0.0.1:8000/", "https://example.com/"))
    assert _reason(scope, "http://example.com:8080/x") is None
    assert _reason(scope, "http://example.com/") is None
    # Off-host public URLs follow the mode as before.
    expected = None if mode == "any" else SCOPE_REASON
    assert _reason(scope, "https://example.org:8443/") == expected
    assert _reason(scope, "http://93.184.216.34:8080/") == expected


def test_default_ports_equal_no_port() -> None:
    scope = _scope("host", ("http://10.0.0.5/", "https://10.0.0.6/"), ("10.0.0.0/8",))
    assert _reason(scope, "http://10.0.0.5:80/a") is None
    assert _reason(scope, "http://10.0.0.5/a") is None
    assert _reason(scope, "https://10.0.0.5/") == SCOPE_REASON  # 443 is another service
    assert _reason(scope, "https://10.0.0.6:443/") is None
    assert _reason(scope, "http://10.0.0.6:443/") is None  # the same socket, spelled out
    assert _reason(scope, "http://10.0.0.6/") == SCOPE_REASON


def test_without_allow_nets_nothing_changes() -> None:
    """No opt-in: loopback hosts keep the port-agnostic host rule (the guard refuses them)."""
    scope = _scope("host", ("http://127.0.0.1:8000/",), allow_nets=())
    assert _reason(scope, "http://127.0.0.1:8099/admin/") is None
    assert _reason(scope, "http://127.0.0.2:8000/") == SCOPE_REASON
    assert _reason(_scope("any", (), allow_nets=()), "http://10.1.1.1:22/") is None


def test_private_address_outside_the_opted_in_nets_keeps_the_mode_rule() -> None:
    """Only what the opt-in opens is narrowed; 192.168.x stays refused by the guard at connect
    time (reason ``private``), which is what the crawl reports today."""
    scope = _scope("host", ("http://192.168.1.1:8000/",), ("10.0.0.0/8",))
    assert _reason(scope, "http://192.168.1.1:9000/") is None
    assert _reason(_scope("any", (), ("10.0.0.0/8",)), "http://192.168.1.1:9000/") is None
    assert _reason(_scope("any", (), ("10.0.0.0/8",)), "http://10.0.0.1:9000/") == SCOPE_REASON


def test_opting_a_public_net_in_changes_nothing() -> None:
    """The guard already allows public addresses: allow_nets does not open them."""
    scope = _scope("host", ("http://93.184.216.34:8000/",), ("93.184.216.0/24",))
    assert _reason(scope, "http://93.184.216.34:9000/") is None


def test_wide_opt_in_narrows_every_non_public_address() -> None:
    scope = _scope("any", ("http://10.0.0.5:8000/",), ("0.0.0.0/0", "::/0"))
    assert _reason(scope, "http://10.0.0.5:8000/") is None
    assert _reason(scope, "http://10.0.0.5:8001/") == SCOPE_REASON
    assert _reason(scope, "http://192.168.0.1/") == SCOPE_REASON
    assert _reason(scope, "http://169.254.169.254/latest/meta-data/") == SCOPE_REASON
    assert _reason(scope, "http://[fd00::1]:8000/") == SCOPE_REASON
    assert _reason(scope, "http://example.com:1234/") is None


def test_link_local_metadata_address() -> None:
    scope = _scope("domain", ("http://169.254.10.1/",), ("169.254.0.0/16",))
    assert _reason(scope, "http://169.254.10.1/x") is None
    assert _reason(scope, "http://169.254.169.254/latest/meta-data/") == SCOPE_REASON
    assert _reason(scope, "http://169.254.10.1:8080/") == SCOPE_REASON


def test_ipv6_addresses() -> None:
    scope = _scope("host", ("http://[::1]:8000/", "http://[fd12::5]/"), ("::1/128", "fc00::/7"))
    assert _reason(scope, "http://[::1]:8000/a") is None
    assert _reason(scope, "http://[0:0::1]:8000/a") is None  # canonicalized to ::1
    assert _reason(scope, "http://[::1]:8001/") == SCOPE_REASON
    assert _reason(scope, "http://[fd12::5]:80/") is None
    assert _reason(scope, "http://[fd12::5]:8080/") == SCOPE_REASON
    assert _reason(scope, "http://[fd12::6]/") == SCOPE_REASON


def test_ipv4_mapped_ipv6_is_not_a_way_around() -> None:
    """::ffff:127.0.0.1 reaches the seed's machine; the guard opens it through 127.0.0.0/8,
    so it is an opted-in address, and not one of the seed's pairs."""
    scope = _scope("any", ("http://127.0.0.1:8000/",))
    assert _reason(scope, "http://[::ffff:127.0.0.1]:8099/") == SCOPE_REASON
    assert _reason(scope, "http://[::ffff:7f00:1]:8000/") == SCOPE_REASON


@pytest.mark.parametrize("mode", MODES)
def test_localhost_names_are_loopback(mode: ScopeMode) -> None:
    """RFC 6761 §6.3: judged without DNS as the loopback addresses they stand for."""
    scope = _scope(mode, ("http://localhost:8000/",))
    assert _reason(scope, "http://localhost:8000/a") is None
    assert _reason(scope, "http://LOCALHOST:8000/a") is None
    assert _reason(scope, "http://localhost:8099/admin/") == SCOPE_REASON
    assert _reason(scope, "http://admin.localhost:8000/") == SCOPE_REASON
    # The seed names localhost, not 127.0.0.1: the pair is (host, port) as written.
    assert _reason(scope, "http://127.0.0.1:8000/") == SCOPE_REASON
    # Opting only ::1 in opens localhost too (it may resolve there).
    v6 = _scope(mode, ("http://localhost:8000/",), ("::1/128",))
    assert _reason(v6, "http://localhost:8099/") == SCOPE_REASON


def test_other_names_keep_the_mode_rule() -> None:
    """A name's address is known only at connect time; the guard judges it there. Staying pure,
    the scope cannot narrow it (documented in discovery/scope.py)."""
    scope = _scope("host", ("http://intranet.corp:8000/",), ("10.0.0.0/8",))
    assert _reason(scope, "http://intranet.corp:8099/") is None
    assert _reason(scope, "http://other.corp:8000/") == SCOPE_REASON
    assert _reason(_scope("any", (), ("10.0.0.0/8",)), "http://wiki:8099/") is None


@pytest.mark.parametrize("mode", MODES)
def test_allow_host_with_port_opts_that_port_in(mode: ScopeMode) -> None:
    scope = _scope(
        mode, ("http://127.0.0.1:8000/",), allow_hosts=("127.0.0.1:8099", "127.0.0.2:80")
    )
    assert _reason(scope, "http://127.0.0.1:8099/admin/") is None
    assert _reason(scope, "http://127.0.0.1:8100/") == SCOPE_REASON
    assert _reason(scope, "http://127.0.0.2/") is None
    assert _reason(scope, "https://127.0.0.2/") == SCOPE_REASON


@pytest.mark.parametrize("mode", MODES)
def test_allow_host_without_port_opts_every_port_in(mode: ScopeMode) -> None:
    scope = _scope(mode, (), allow_hosts=("127.0.0.3", "[::1]", "localhost"))
    assert _reason(scope, "http://127.0.0.3:1/") is None
    assert _reason(scope, "https://127.0.0.3/") is None
    assert _reason(scope, "http://[::1]:9999/") is None
    assert _reason(scope, "http://localhost:5000/") is None
    assert _reason(scope, "http://127.0.0.4/") == SCOPE_REASON


def test_add_seed_opts_its_pair_in() -> None:
    """``--sitemap`` hosts and seeds added to a running crawl join the same way."""
    scope = _scope("host", ("http://127.0.0.1:8000/",))
    assert _reason(scope, "http://127.0.0.1:8001/sitemap.xml") == SCOPE_REASON
    revision = scope.revision
    scope.add_seed(_n("http://127.0.0.1:8001/sitemap.xml"))
    assert scope.revision == revision + 1
    assert _reason(scope, "http://127.0.0.1:8001/page") is None
    assert _reason(scope, "http://127.0.0.1:8002/") == SCOPE_REASON


def test_opt_in_reason_is_the_narrow_rule_alone() -> None:
    """For robots.txt redirects: off-host public targets are not the scope's business there."""
    scope = _scope("host", ("http://127.0.0.1:8000/",), allow_hosts=("127.0.0.1:8001",))
    assert scope.opt_in_reason(_n("http://127.0.0.1:8000/robots.txt")) is None
    assert scope.opt_in_reason(_n("http://127.0.0.1:8001/robots.txt")) is None
    assert scope.opt_in_reason(_n("http://127.0.0.1:8099/latest/meta-data/")) == SCOPE_REASON
    assert scope.opt_in_reason(_n("https://www.example.com/robots.txt")) is None
    assert _scope("host", (), allow_nets=()).opt_in_reason(_n("http://127.0.0.1:9/")) is None


def test_survives_pickling_for_parse_workers() -> None:
    """Parse worker processes admit links with a pickled copy (crawl/stages.py)."""
    scope = _scope("any", ("http://127.0.0.1:8000/",), allow_hosts=("127.0.0.1:8001",))
    assert _reason(scope, "http://127.0.0.1:8099/") == SCOPE_REASON  # fills the caches
    copy = pickle.loads(pickle.dumps(scope))
    assert _reason(copy, "http://127.0.0.1:8000/a") is None
    assert _reason(copy, "http://127.0.0.1:8001/a") is None
    assert _reason(copy, "http://127.0.0.1:8099/") == SCOPE_REASON
    assert _reason(copy, "http://example.com:1/") is None


def test_crawl_scope_takes_allow_nets_from_the_config() -> None:
    """crawl, seed and worker all build their scope with crawl/setup.py's crawl_scope."""
    config = CrawlConfig(scope="any", allow_nets=LOOPBACK, allow_hosts=("127.0.0.1:8001",))
    scope = crawl_scope(config, [_n("http://127.0.0.1:8000/")])
    assert _reason(scope, "http://127.0.0.1:8000/") is None
    assert _reason(scope, "http://127.0.0.1:8001/") is None
    assert _reason(scope, "http://127.0.0.1:8099/admin/") == SCOPE_REASON
    assert _reason(scope, "http://example.com/") is None
