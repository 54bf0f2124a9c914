"""What the fetcher is told: the few settings of a crawl that shape one HTTP exchange.

A small value of its own, so ``fetch/`` never sees the crawl's whole configuration (crawl/setup.py
builds it from ``CrawlConfig``), and tests and library users can make a transport from it alone.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from crawlspace.errors import ConfigError

__all__ = ["FetchSettings", "ResolveOverride"]


@dataclass(frozen=True)
class ResolveOverride:
    """``--resolve HOST:PORT:ADDR``, as in curl: connect to ADDR instead of asking DNS."""

    host: str
    port: int
    address: str

    @classmethod
    def parse(cls, text: str) -> ResolveOverride:
        host, sep1, rest = text.partition(":")
        port_text, sep2, address = rest.partition(":")
        if not (sep1 and sep2 and host and port_text.isdigit() and address):
            raise ConfigError(
                f"--resolve {text!r}: expected HOST:PORT:ADDRESS, e.g. example.com:443:127.0.0.1"
            )
        address = address.strip("[]")
        try:
            ipaddress.ip_address(address)
        except ValueError:
            raise ConfigError(f"--resolve {text!r}: {address!r} is not an IP address") from None
        return cls(host.lower(), int(port_text), address)

    def __str__(self) -> str:
        address = f"[{self.address}]" if ":" in self.address else self.address
        return f"{self.host}:{self.port}:{address}"


@dataclass(frozen=True, slots=True)
class FetchSettings:
    """Timeouts (0 turns one off), body caps, the connection pool, the User-Agent, the networks
    opted in past the address guard (address_guard.py) and the resolver's cache and overrides.
    No defaults: the crawl's (config.py) are the only ones."""

    user_agent: str
    concurrency: int
    connect_timeout: float
    read_timeout: float
    total_timeout: float
    max_body_bytes: int
    max_decompressed_bytes: int
    allow_nets: tuple[str, ...]
    resolve: tuple[ResolveOverride, ...]
    dns_cache_seconds: float
    dns_negative_seconds: float
    proxy: str | None  # http://[USER:PASSWORD@]HOST:PORT: every request through it
