"""The real transport, over aiohttp. The only module that imports aiohttp (or yarl).

What it guarantees against an untrusted server: it never connects to an address the guard
refuses, never follows a redirect, never holds more than ``max_body_bytes`` of wire bytes or
``max_decompressed_bytes`` of decoded bytes (a gzip bomb is decoded piece by piece and
abandoned at the cap), and never takes longer than ``total_timeout``. aiohttp and OS errors
leave this module only as ``crawlspace.errors.FetchError`` subclasses.

Through an HTTP proxy (``proxy``) every request goes to the proxy, a ``https`` one as a CONNECT
tunnel. The proxy is the operator's choice, so its own address is not the guard's to judge (a
proxy on this machine needs no ``--allow-net``). The target is: it is resolved here and checked
before the request is sent, as without a proxy (the per-address politeness keys on that address
too). The proxy resolves the name again itself; that lookup is out of our reach.
"""

from __future__ import annotations

import asyncio
import contextvars
import socket
import sys
import time
from typing import Final

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.client_reqrep import ClientRequest
from aiohttp.tracing import Trace
from yarl import URL

from crawlspace.address_guard import AddressGuard, parse_ip
from crawlspace.errors import (
    BlockedAddressError,
    ConnectError,
    FetchError,
    FetchTimeoutError,
    ProtocolError,
)
from crawlspace.fetch.body import BodyReader, ReadBody
from crawlspace.fetch.dns import CachingResolver
from crawlspace.fetch.settings import FetchSettings
from crawlspace.fetch.transport import FetchRequest, FetchResponse

ACCEPT_ENCODING: Final = "gzip, deflate, br"
# The proxy's own address: the operator named it, so the guard does not judge it.
_ANY_ADDRESS: Final = AddressGuard(("0.0.0.0/0", "::/0"))


class _GuardedResolver(AbstractResolver):
    """Adapts CachingResolver (overrides, cache, guard) to aiohttp's resolver interface."""

    def __init__(self, inner: CachingResolver, proxy: CachingResolver | None = None) -> None:
        self._inner = inner
        self._proxy = proxy  # with a proxy, the connector only ever resolves the proxy's name

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        # Our FetchErrors are not OSErrors, so aiohttp's connector lets them through unwrapped.
        resolver = self._proxy or self._inner
        answers = await resolver.resolve(host, port, family)
        return [
            ResolveResult(
                hostname=a.hostname,
                host=a.address,
                port=a.port,
                family=a.family,
                proto=0,
                flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
            )
            for a in answers
        ]

    async def close(self) -> None:
        await self._inner.close()
        if self._proxy is not None:
            await self._proxy.close()


# Where _PeerRecordingConnector writes the peer of the connection used by the current fetch task.
_peer_slot: contextvars.ContextVar[list[str]] = contextvars.ContextVar("crawlspace_peer")


class _PeerRecordingConnector(aiohttp.TCPConnector):
    """Notes the IP actually connected to (for WARC-IP-Address). A response may already have
    released its connection by the time we see it, so ask at connect time instead."""

    async def connect(
        self,
        req: ClientRequest,
        traces: list[Trace],
        timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109 - aiohttp's signature, kept as is
    ) -> aiohttp.connector.Connection:
        conn = await super().connect(req, traces, timeout)
        slot = _peer_slot.get(None)
        transport = conn.transport
        peername = transport.get_extra_info("peername") if transport is not None else None
        if slot is not None and peername:
            slot.append(str(peername[0]))
        return conn


def _version(version: aiohttp.HttpVersion | None) -> str:
    return "1.1" if version is None else f"{version.major}.{version.minor}"


def _or_none(seconds: float) -> float | None:
    return seconds if seconds > 0 else None  # 0 disables a timeout, as in aiohttp


class AiohttpTransport:
    """Fetch over aiohttp with the address guard, body caps and timeouts of ``config``."""

    def __init__(
        self,
        config: FetchSettings,
        *,
        guard: AddressGuard | None = None,
        resolver: CachingResolver | None = None,
    ) -> None:
        self._config = config
        self._guard = guard if guard is not None else AddressGuard(config.allow_nets)
        self._resolver = resolver or CachingResolver.from_settings(config, self._guard)
        self._proxy = URL(config.proxy) if config.proxy else None
        self._session: aiohttp.ClientSession | None = None
        self._timeout = aiohttp.ClientTimeout(
            total=None,  # enforced around the whole fetch, body included, in fetch()
            connect=None,  # would include waiting for a pool slot; DNS has its own timeout
            sock_connect=_or_none(config.connect_timeout),
            sock_read=_or_none(config.read_timeout),
        )

    @property
    def resolver(self) -> CachingResolver:
        return self._resolver

    def _get_session(self) -> aiohttp.ClientSession:
        # Created lazily: aiohttp sessions must be made inside the running event loop.
        if self._session is None:
            proxy_resolver = None
            if self._proxy is not None:
                proxy_resolver = CachingResolver.from_settings(self._config, _ANY_ADDRESS)
            connector = _PeerRecordingConnector(
                resolver=_GuardedResolver(self._resolver, proxy_resolver),
                use_dns_cache=False,  # CachingResolver caches; a second cache would skip the guard
                limit=self._config.concurrency,
                # Leaked aborted TLS transports were fixed in CPython 3.12.7; aiohttp warns after.
                enable_cleanup_closed=sys.version_info < (3, 12, 7),
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                auto_decompress=False,  # we keep raw bytes for the WARC and decode with caps
                cookie_jar=aiohttp.DummyCookieJar(),  # a crawler must not carry state across sites
                trust_env=False,  # never route through an environment proxy around the guard
                timeout=self._timeout,
                headers={"User-Agent": self._config.user_agent, "Accept-Encoding": ACCEPT_ENCODING},
            )
            # aiohttp sends a GET again, on a new connection, when the first is reset before
            # its answer (RFC 9112 §9.3.1 allows it for a reused connection; aiohttp does it for
            # any). A crawler's lease is one request: the politeness gap, the address token and
            # the outage rules (frontier/outage.py) all count it as one. No public switch: the
            # attribute is the one aiohttp's own test client turns off (test_fetch.py checks
            # that the server sees one request).
            if hasattr(self._session, "_retry_connection"):
                self._session._retry_connection = False
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        await self._resolver.close()

    async def address_of(self, url: str) -> str | None:
        """The first address the resolver allows, which aiohttp tries first; the lookup is
        cached, so the fetch that follows resolves from the same answer."""
        try:
            parsed = self._checked_url(url)
        except FetchError:
            return None
        host = parsed.host or ""
        if parse_ip(host) is not None:
            return host
        try:
            resolved = await self._resolver.resolve(host, parsed.port or 0)
        except FetchError:
            return None  # the fetch meets the same error and records it
        return resolved[0].address if resolved else None

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        url = self._checked_url(request.url)
        peer: list[str] = []
        token = _peer_slot.set(peer)
        try:
            async with asyncio.timeout(_or_none(self._config.total_timeout)):
                return await self._fetch(url, request, peer)
        except TimeoutError:
            raise FetchTimeoutError(
                f"{request.url}: no complete response within the total timeout of "
                f"{self._config.total_timeout} s",
                reason="total_timeout",
            ) from None
        finally:
            _peer_slot.reset(token)

    def _checked_url(self, text: str) -> URL:
        try:
            url = URL(text, encoded=True)  # the crawler already normalized it; send as is
        except ValueError as exc:
            raise FetchError(f"invalid URL {text!r}: {exc}", reason="invalid_url") from None
        if url.scheme not in ("http", "https") or not url.host:
            raise FetchError(f"cannot fetch {text!r}: only http(s) URLs", reason="invalid_url")
        # aiohttp skips the resolver for IP literals, so the guard must see them here.
        if parse_ip(url.host) is not None:
            reason = self._guard.check(url.host)
            if reason is not None:
                raise BlockedAddressError(
                    f"refusing to connect to {url.host} in {text!r}: {reason} address; pass "
                    "--allow-net CIDR to permit such networks"
                )
        return url

    async def _fetch(self, url: URL, request: FetchRequest, peer: list[str]) -> FetchResponse:
        session = self._get_session()
        started_at, t0 = time.time(), time.monotonic()
        headers = list(request.headers)
        phase = "connect"
        try:
            if self._proxy is not None:  # the target is checked here; the proxy connects to it
                await self._resolver.resolve(url.host or "", url.port or 0)
            async with session.get(
                url, headers=headers, allow_redirects=False, proxy=self._proxy
            ) as resp:
                phase = "body"
                raw, body, truncated, decode_error = await self._read_body(resp, request)
                return FetchResponse(
                    url=request.url,
                    status=resp.status,
                    reason=resp.reason or "",
                    http_version=_version(resp.version),
                    # The body is stored de-chunked, so keeping Transfer-Encoding: chunked would
                    # make the WARC record lie about its own payload framing.
                    headers=[
                        (k.decode("latin-1"), v.decode("latin-1"))
                        for k, v in resp.raw_headers
                        if k.lower() != b"transfer-encoding"
                    ],
                    raw_body=raw,
                    body=body,
                    truncated=truncated is not None,
                    truncated_reason=truncated,
                    decode_error=decode_error,
                    request_headers=list(resp.request_info.headers.items()),
                    started_at=started_at,
                    ended_at=time.time(),
                    elapsed=time.monotonic() - t0,
                    # Through a proxy the peer is the proxy, not the server: not recorded.
                    peer_address=peer[-1] if peer and self._proxy is None else None,
                )
        except FetchError:
            raise
        except aiohttp.ServerTimeoutError as exc:
            what = "connect" if isinstance(exc, aiohttp.ConnectionTimeoutError) else "read"
            limit = self._config.connect_timeout if what == "connect" else self._config.read_timeout
            raise FetchTimeoutError(
                f"{request.url}: {what} timed out after {limit} s", reason=f"{what}_timeout"
            ) from exc
        except aiohttp.ClientConnectorError as exc:
            raise ConnectError(f"{request.url}: cannot connect: {exc.os_error}") from exc
        except (aiohttp.ClientPayloadError, aiohttp.ClientResponseError) as exc:
            raise ProtocolError(f"{request.url}: broken HTTP response: {exc}") from exc
        except (aiohttp.ClientConnectionError, OSError) as exc:
            # A reset before any response is a connect-level failure; mid-body it is broken HTTP.
            message = f"{request.url}: connection lost during {phase}: {exc!r}"
            if phase == "connect":
                raise ConnectError(message) from exc
            raise ProtocolError(message) from exc
        except aiohttp.InvalidURL as exc:
            raise FetchError(f"invalid URL {request.url!r}: {exc}", reason="invalid_url") from exc
        except aiohttp.ClientError as exc:
            raise ProtocolError(f"{request.url}: {exc!r}") from exc

    async def _read_body(self, resp: aiohttp.ClientResponse, request: FetchRequest) -> ReadBody:
        """Read at most the caps; returns (raw, decoded, truncated_reason, decode_error)."""
        reader = BodyReader(
            resp.headers.get("Content-Encoding", ""),
            request.max_body_bytes or self._config.max_body_bytes,
            request.max_decompressed_bytes or self._config.max_decompressed_bytes,
        )
        async for chunk in resp.content.iter_any():
            if not reader.feed(chunk):
                # The rest of the body is unread; the connection cannot be reused. Its socket
                # is closed on the event loop's next turn: let that happen before the exchange
                # is said to have ended, or the host's politeness gap would start before the
                # server could see us go (it is still writing the body we cut).
                resp.close()
                await asyncio.sleep(0)
                break
        return reader.result()


__all__ = ["ACCEPT_ENCODING", "AiohttpTransport"]
