"""Which IP addresses a crawler may connect to: only globally routable ones, unless opted in.

Pure: no sockets, no DNS. The resolver (``dns.py``) filters every resolved address through
``AddressGuard.check`` and the transport checks IP-literal URLs, so the decision is made on the
address actually connected to (a hostname that re-resolves to 10.0.0.1 is caught; DNS rebinding
gains nothing).

We use explicit tables instead of ``ipaddress``'s ``is_private``/``is_global`` flags because those
changed between CPython patch releases (3.11.10, 3.12.4); a safety policy must not drift with
the interpreter. ``is_global`` is still consulted last, as a backstop.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Sequence
from typing import Final

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Order matters: the first matching network names the reason, so specific entries come first.
_V4_TABLE: Final[tuple[tuple[str, str], ...]] = (
    # Cloud instance-metadata endpoints: the classic SSRF target (AWS/GCP/Azure/OCI, Alibaba,
    # Azure's WireServer). Named separately so the refusal message is unmistakable.
    ("169.254.169.254/32", "metadata"),
    ("100.100.100.200/32", "metadata"),
    ("168.63.129.16/32", "metadata"),
    ("0.0.0.0/8", "unspecified"),  # RFC 791 "this network"; 0.0.0.0 reaches localhost on Linux
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private"),  # RFC 1918
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("100.64.0.0/10", "private"),  # RFC 6598 carrier-grade NAT shared space
    ("169.254.0.0/16", "link_local"),  # RFC 3927
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),  # includes 255.255.255.255 broadcast
    ("192.0.0.0/24", "reserved"),  # RFC 6890 IETF protocol assignments
    ("192.0.2.0/24", "reserved"),  # RFC 5737 documentation
    ("198.51.100.0/24", "reserved"),
    ("203.0.113.0/24", "reserved"),
    ("198.18.0.0/15", "reserved"),  # RFC 2544 benchmarking
    ("192.88.99.0/24", "reserved"),  # RFC 7526 deprecated 6to4 relay anycast
)

_V6_TABLE: Final[tuple[tuple[str, str], ...]] = (
    ("fd00:ec2::254/128", "metadata"),  # AWS IMDS over IPv6
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("fe80::/10", "link_local"),
    ("fc00::/7", "private"),  # RFC 4193 unique local
    ("fec0::/10", "private"),  # RFC 3879 deprecated site-local
    ("ff00::/8", "multicast"),
    ("64:ff9b:1::/48", "private"),  # RFC 8215 local-use NAT64
    ("100::/64", "reserved"),  # RFC 6666 discard
    ("2001:db8::/32", "reserved"),  # RFC 3849 documentation
    ("3fff::/20", "reserved"),  # RFC 9637 documentation
    ("2001:2::/48", "reserved"),  # RFC 5180 benchmarking
    ("2001:10::/28", "reserved"),  # ORCHID
    ("2001:20::/28", "reserved"),  # ORCHIDv2
    ("5f00::/16", "reserved"),  # RFC 9602 SRv6 SIDs
)

# RFC 4291 §2.4: only 2000::/3 is global unicast; everything else is unassigned or special.
_V6_GLOBAL_UNICAST: Final = ipaddress.IPv6Network("2000::/3")
# Prefixes that carry an IPv4 address in their low 32 bits; judged by that address.
_V4_MAPPED: Final = ipaddress.IPv6Network("::ffff:0:0/96")  # RFC 4291 §2.5.5.2
_V4_TRANSLATED: Final = ipaddress.IPv6Network("::ffff:0:0:0/96")  # RFC 2765 SIIT
_V4_COMPATIBLE: Final = ipaddress.IPv6Network("::/96")  # RFC 4291 §2.5.5.1 (deprecated)
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052 well-known prefix

_CACHE_LIMIT: Final = 65_536


def _compile(table: tuple[tuple[str, str], ...]) -> tuple[tuple[IPNetwork, str], ...]:
    return tuple((ipaddress.ip_network(net), reason) for net, reason in table)


_V4_NETS: Final = _compile(_V4_TABLE)
_V6_NETS: Final = _compile(_V6_TABLE)


# Cached: a fetch asks it of its URL's host twice (the address it will take, then the request
# itself), ~2-3 µs in ipaddress each time, for the same few hosts.
@functools.lru_cache(maxsize=4096)
def parse_ip(text: str) -> IPAddress | None:
    """Parse an IP literal as it appears in a URL host or a getaddrinfo answer; None if not one."""
    text = text.strip("[]")
    # A zone id (fe80::1%eth0) names an interface, not part of the address.
    text = text.split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _embedded_v4(addr: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """IPv4 addresses an IPv6 address smuggles: a packet to it may end up at those."""
    if addr.ipv4_mapped is not None:
        return (addr.ipv4_mapped,)
    if addr.sixtofour is not None:
        return (addr.sixtofour,)
    if addr.teredo is not None:
        server, client = addr.teredo
        return (server, client)
    low32 = ipaddress.IPv4Address(int(addr) & 0xFFFF_FFFF)
    if addr in _V4_TRANSLATED or addr in _NAT64:
        return (low32,)
    # ::/128 and ::1 sit inside ::/96 but are their own thing; the table names them.
    if addr in _V4_COMPATIBLE and int(addr) > 1:
        return (low32,)
    return ()


def _table_reason(addr: IPAddress) -> str | None:
    table = _V4_NETS if addr.version == 4 else _V6_NETS
    for net, reason in table:
        if addr in net:
            return reason
    return None


class AddressGuard:
    """Refuses every address that is not globally routable, except networks opted into.

    ``check`` returns None when the address may be connected to, else a short reason slug:
    loopback, private, link_local, multicast, unspecified, reserved, metadata or not_global.
    """

    def __init__(self, allow_nets: Sequence[str] = ()) -> None:
        self._allow: tuple[IPNetwork, ...] = tuple(
            ipaddress.ip_network(net, strict=False) for net in allow_nets
        )
        # A crawl asks about the same few thousand addresses over and over.
        self._cache: dict[str, str | None] = {}

    @property
    def allow_nets(self) -> tuple[str, ...]:
        return tuple(str(net) for net in self._allow)

    def check(self, ip: str) -> str | None:
        try:
            return self._cache[ip]
        except KeyError:
            pass
        addr = parse_ip(ip)
        verdict = "not_global" if addr is None else self._judge(addr)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[ip] = verdict
        return verdict

    def allows(self, ip: str) -> bool:
        return self.check(ip) is None

    def _allowed_explicitly(self, addr: IPAddress) -> bool:
        return any(addr.version == net.version and addr in net for net in self._allow)

    def _judge(self, addr: IPAddress) -> str | None:
        if self._allowed_explicitly(addr):
            return None
        reason = _table_reason(addr)
        if reason is not None:
            return reason
        if isinstance(addr, ipaddress.IPv6Address):
            embedded = _embedded_v4(addr)
            if embedded:
                # Refuse if any embedded address is refused: ::ffff:10.0.0.1 is 10.0.0.1.
                for v4 in embedded:
                    verdict = self._judge(v4)
                    if verdict is not None:
                        return verdict
                return None
            if addr not in _V6_GLOBAL_UNICAST:
                return "reserved"
        if not addr.is_global:
            return "not_global"
        return None


__all__ = ["AddressGuard", "parse_ip"]
