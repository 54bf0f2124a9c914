"""The request headers a user adds (``headers``, ``host_headers``, ``auth``): to every request,
or only to one host's, as ``curl -H`` and wget's ``--header`` do, with HTTP Basic credentials
per host (RFC 7617) and a host's cookies as a ``Cookie`` header.

Pure: settings in, headers for a URL out. A host's headers and credentials go to that host
only: a redirect elsewhere is a new request to the other host, which gets its own. Headers the
crawl itself decides are refused with one line: the User-Agent (robots.txt groups match it),
conditional GET's validators, the content coding the crawl decodes within its caps, and the
framing of the connection.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

from crawlspace.errors import ConfigError

__all__ = ["RequestHeaders"]

_CRAWLS_OWN: Final = {
    "user-agent": "set user_agent instead (robots.txt groups match its product token)",
    "accept-encoding": "the crawl asks for the codings it decodes within its caps",
    "if-none-match": "conditional GET is the crawl's (recrawl)",
    "if-modified-since": "conditional GET is the crawl's (recrawl)",
    "host": "the connection's own",
    "content-length": "the connection's own",
    "transfer-encoding": "the connection's own",
    "connection": "the connection's own",
    "keep-alive": "the connection's own",
    "te": "the connection's own",
    "upgrade": "the connection's own",
}
_TOKEN_CHARS: Final = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")


@dataclass(frozen=True, slots=True)
class _HostMatch:
    host: str
    port: int | None  # None: any port of the host

    def matches(self, host: str, port: int) -> bool:
        return host == self.host and (self.port is None or port == self.port)


@dataclass(frozen=True, slots=True)
class RequestHeaders:
    everywhere: tuple[tuple[str, str], ...] = ()
    per_host: tuple[tuple[_HostMatch, tuple[str, str]], ...] = field(default=())

    @classmethod
    def parse(
        cls, headers: Iterable[str] = (), host_headers: Iterable[str] = (), auth: Iterable[str] = ()
    ) -> RequestHeaders:
        """``headers``: "Name: value"; ``host_headers``: "HOST[:PORT] Name: value";
        ``auth``: "HOST[:PORT] USER:PASSWORD". ConfigError names the entry that is wrong."""
        everywhere = tuple(_header("headers", entry, entry) for entry in headers)
        per_host = []
        for entry in host_headers:
            target, _, header = entry.strip().partition(" ")
            per_host.append(
                (_host("host_headers", entry, target), _header("host_headers", entry, header))
            )
        for entry in auth:
            target, _, credentials = entry.strip().partition(" ")
            user, colon, _password = credentials.strip().partition(":")
            if not colon or not user:
                raise ConfigError(f"auth {entry!r}: expected HOST[:PORT] USER:PASSWORD")
            token = base64.b64encode(credentials.strip().encode()).decode("ascii")
            per_host.append((_host("auth", entry, target), ("Authorization", f"Basic {token}")))
        return cls(everywhere, tuple(per_host))

    def __bool__(self) -> bool:
        return bool(self.everywhere or self.per_host)

    def for_url(self, url: str) -> list[tuple[str, str]]:
        """The headers a request of ``url`` carries besides the crawl's own."""
        out = list(self.everywhere)
        if self.per_host:
            parts = urlsplit(url)
            host = (parts.hostname or "").lower()
            port = parts.port or (443 if parts.scheme == "https" else 80)
            out += [header for match, header in self.per_host if match.matches(host, port)]
        return out


def _header(setting: str, entry: str, text: str) -> tuple[str, str]:
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not name or not set(name.lower()) <= _TOKEN_CHARS:
        raise ConfigError(f"{setting} {entry!r}: expected 'Name: value'")
    if "\r" in value or "\n" in value:
        raise ConfigError(f"{setting} {entry!r}: a header value cannot hold a line break")
    why = _CRAWLS_OWN.get(name.lower())
    if why is not None:
        raise ConfigError(f"{setting} {entry!r}: {name} cannot be set here: {why}")
    return name, value


def _host(setting: str, entry: str, target: str) -> _HostMatch:
    parts = urlsplit(f"//{target}")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if not parts.hostname or port == -1 or parts.path or parts.username or target.endswith(":"):
        raise ConfigError(f"{setting} {entry!r}: expected HOST[:PORT] first, e.g. example.com")
    return _HostMatch(parts.hostname.lower(), port)
