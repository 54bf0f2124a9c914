"""Crawl scope: which normalized URLs the crawler may follow.

Modes:

* ``"host"``: the URL's hostname equals a seed's hostname. Scheme and port are ignored on
  purpose: ``http://example.com`` commonly redirects to ``https://example.com`` and sites serve
  assets on a second port; both are the same operator, and politeness is per host key anyway.
* ``"domain"``: the URL's registrable domain ("eTLD+1", per the Public Suffix List,
  https://publicsuffix.org/list/) equals a seed's. The ``publicsuffixlist`` package bundles the
  list, including its PRIVATE section, so ``alice.github.io`` and ``bob.github.io`` are *different*
  domains (``github.io`` is a private public suffix). IP literals and single-label hosts such as
  ``localhost`` have no registrable domain and compare by exact hostname, as do hosts that are
  themselves public suffixes (``co.uk``).
* ``"any"``: everything ``normalize()`` accepted.

``allow_hosts`` widens any mode: ``"HOST"`` admits that hostname on every port,
``"HOST:PORT"`` only on that effective port (a URL without a port has its scheme default).

Opt-ins are narrow (issue #18). An address that ``allow_nets`` opens (one the connect-time
guard, ``address_guard.py``, would refuse without the opt-in: loopback, private, link-local...)
is in scope, in every mode, only on a seed's exact host and effective port or by an
``allow_hosts`` entry. A hostile page on an opted-in intranet host must not steer the crawler
to another service of the same machine (``http://10.0.0.5:8099/admin/``) or to its neighbours.

Which hosts that covers is decided without DNS, so it stays pure: IP literals by their range,
and ``localhost``/``*.localhost``, which RFC 6761 §6.3 reserves for loopback. Any other name
keeps the mode's port-agnostic rule: its address is only known at connect time, where the guard
still refuses every address outside ``allow_nets``. Public addresses are not affected.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Final, Literal

from publicsuffixlist import PublicSuffixList

from crawlspace.address_guard import AddressGuard, parse_ip
from crawlspace.urls import host_and_port, host_of, normalize

__all__ = ["SCOPE_REASON", "Scope", "ScopeMode", "registrable_domain"]

ScopeMode = Literal["host", "domain", "any"]
SCOPE_REASON: Final = "scope"
_MODES: Final = frozenset(("host", "domain", "any"))

# What the connect-time guard allows with no opt-in: an address it refuses is not public.
_NO_OPT_IN: Final = AddressGuard()
# RFC 6761 §6.3: "localhost" names are loopback whatever a resolver says; judge them as both.
_LOOPBACK_ADDRESSES: Final = ("127.0.0.1", "::1")
_OPENED_CACHE_LIMIT: Final = 65_536


def _is_ip_or_single_label(host: str) -> bool:
    if ":" in host or "." not in host.rstrip("."):  # IPv6 literal, or e.g. "localhost"
        return True
    # WHATWG URL §3.5 "ends in a number": a host whose last label is numeric was parsed as IPv4,
    # so after normalization such a host is always dotted-decimal IPv4.
    return host.rstrip(".").rsplit(".", 1)[-1].isdigit()


@lru_cache(maxsize=1)
def _public_suffixes() -> PublicSuffixList:
    """Read once, when first needed: parsing the list costs ~30 ms, which every process
    (the crawl's and each parse worker's) paid at import though only ``scope = "domain"``
    uses it."""
    return PublicSuffixList()


@lru_cache(maxsize=65536)
def registrable_domain(host: str) -> str:
    """Registrable domain of a normalized hostname, or the hostname itself when it has none."""
    if _is_ip_or_single_label(host):
        return host
    domain: str | None = _public_suffixes().privatesuffix(host)
    return host if domain is None else domain


def parse_allow_entry(entry: str) -> tuple[str, int | None]:
    """Parse ``HOST``, ``HOST:PORT``, ``[V6]`` or ``[V6]:PORT`` into a canonical host and port."""
    text = entry.strip()
    port_text = ""
    if text.startswith("["):
        close = text.find("]")
        host_text, rest = text[: close + 1], text[close + 1 :]
        if rest:
            port_text = rest.removeprefix(":")
    elif text.count(":") == 1:
        host_text, port_text = text.split(":")
    else:
        host_text = text
    port: int | None = None
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"allow_hosts entry {entry!r}: port must be 1-65535")
        port = int(port_text)
    # Canonicalize the host exactly as normalize() would (IDN -> punycode, case, IPv4 forms).
    canonical = normalize(f"http://{host_text}/") if host_text else None
    if canonical is None:
        raise ValueError(f"allow_hosts entry {entry!r}: expected HOST or HOST:PORT")
    return host_of(canonical), port


def _addresses_of(host: str) -> tuple[str, ...]:
    """The addresses a host stands for without DNS: an IP literal itself, a ``localhost`` name
    loopback; () for any other name (its address is only known at connect time)."""
    if host == "localhost" or host.endswith(".localhost"):
        return _LOOPBACK_ADDRESSES
    if _is_ip_or_single_label(host) and parse_ip(host) is not None:
        return (host,)
    return ()


class Scope:
    """Decides whether a normalized URL is in scope. Pure and cheap: called once per link."""

    def __init__(
        self,
        mode: ScopeMode,
        seeds: Iterable[str] = (),
        allow_hosts: Iterable[str] = (),
        allow_nets: Iterable[str] = (),
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"scope mode {mode!r}: expected one of host, domain, any")
        self.mode: ScopeMode = mode
        # Bumped by add_seed: a copy taken earlier (a parse worker's, crawl/stages.py) is stale.
        self.revision = 0
        self._hosts: set[str] = set()
        self._domains: set[str] = set()
        # (host, effective port) of every seed: the only ports of an opted-in address in scope.
        self._seed_ports: set[tuple[str, int]] = set()
        self._allow_any_port: set[str] = set()
        self._allow_port: set[tuple[str, int]] = set()
        nets = tuple(allow_nets)
        # The same judgement as the connect-time guard's, so the two cannot disagree.
        self._opt_in: AddressGuard | None = AddressGuard(nets) if nets else None
        self._opened: dict[str, bool] = {}
        for seed in seeds:
            self.add_seed(seed)
        for entry in allow_hosts:
            host, port = parse_allow_entry(entry)
            if port is None:
                self._allow_any_port.add(host)
            else:
                self._allow_port.add((host, port))

    def add_seed(self, url: str) -> None:
        """Add a normalized seed URL; its host (and registrable domain) become in scope, and its
        exact host and effective port when that host is an opted-in address."""
        host, port = host_and_port(url)
        self.revision += 1
        self._hosts.add(host)
        self._domains.add(registrable_domain(host))
        self._seed_ports.add((host, port))

    def reason(self, url: str) -> str | None:
        """Return None if the normalized ``url`` is in scope, else ``SCOPE_REASON``."""
        if self.mode == "any" and self._opt_in is None:
            return None
        host, port = host_and_port(url)
        if self._opened_by_opt_in(host):
            return None if self._port_opted_in(host, port) else SCOPE_REASON
        if self.mode == "any":
            return None
        if self.mode == "host":
            if host in self._hosts:
                return None
        elif registrable_domain(host) in self._domains:
            return None
        if host in self._allow_any_port or (host, port) in self._allow_port:
            return None
        return SCOPE_REASON

    def opt_in_reason(self, url: str) -> str | None:
        """The narrow opt-in rule alone: ``SCOPE_REASON`` if ``url`` is on an opted-in address
        but not on a seed's host:port nor an ``allow_hosts`` entry. For fetches that follow
        redirects outside link admission (robots.txt), where the mode's host rule does not
        apply but an opted-in network must stay as narrow as for links."""
        if self._opt_in is None:
            return None
        host, port = host_and_port(url)
        if self._opened_by_opt_in(host) and not self._port_opted_in(host, port):
            return SCOPE_REASON
        return None

    def _port_opted_in(self, host: str, port: int) -> bool:
        pair = (host, port)
        return pair in self._seed_ports or pair in self._allow_port or host in self._allow_any_port

    def _opened_by_opt_in(self, host: str) -> bool:
        """Whether ``host`` is an address only ``allow_nets`` lets the guard connect to."""
        guard = self._opt_in
        if guard is None:
            return False
        try:
            return self._opened[host]
        except KeyError:
            pass
        opened = any(
            _NO_OPT_IN.check(ip) is not None and guard.check(ip) is None
            for ip in _addresses_of(host)
        )
        if len(self._opened) >= _OPENED_CACHE_LIMIT:
            self._opened.clear()
        self._opened[host] = opened
        return opened

    def __contains__(self, url: object) -> bool:
        return isinstance(url, str) and self.reason(url) is None
