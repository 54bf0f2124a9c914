"""The one I/O seam of the fetch stage: a request goes in, a complete response comes out.

Callers (robots, the crawl loop) depend on ``Transport`` only. ``AiohttpTransport`` is the real
one; ``HandlerTransport`` is a double that answers with a plain function, for unit tests of
callers where a real server would add nothing. Failures before a full response arrives are
raised as ``crawlspace.errors.FetchError`` subclasses; HTTP error statuses are responses.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

TruncatedReason = Literal["max_body_bytes", "max_decompressed_bytes"]


@dataclass(frozen=True)
class FetchRequest:
    """One GET. ``headers`` are extra headers (If-None-Match, If-Modified-Since, ...) sent in
    addition to User-Agent and Accept-Encoding. A ``None`` limit means the config's limit."""

    url: str
    headers: Sequence[tuple[str, str]] = ()
    max_body_bytes: int | None = None
    max_decompressed_bytes: int | None = None


@dataclass(frozen=True)
class FetchResponse:
    """A response as received (for the WARC) and as decoded (for parsing).

    ``raw_body`` is the payload after de-chunking but before content-decoding, so together with
    ``headers`` (Transfer-Encoding removed) it is a faithful WARC response record. ``body`` is
    the content-decoded payload. When decoding fails, ``decode_error`` says why and ``body``
    holds what decoded cleanly, or the raw bytes when nothing did (servers do label plain
    bodies as gzip); the response is still returned so the capture is not lost.
    """

    url: str
    status: int
    reason: str
    headers: list[tuple[str, str]]
    raw_body: bytes
    body: bytes
    request_headers: list[tuple[str, str]]
    started_at: float
    ended_at: float
    elapsed: float
    http_version: str = "1.1"
    truncated: bool = False
    truncated_reason: TruncatedReason | None = None
    decode_error: str | None = None
    peer_address: str | None = None  # the IP we connected to, for WARC-IP-Address

    def header(self, name: str) -> str | None:
        """The first value of a response header, matched case-insensitively."""
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), None)

    def header_values(self, name: str) -> list[str]:
        lowered = name.lower()
        return [v for k, v in self.headers if k.lower() == lowered]


class Transport(Protocol):
    async def fetch(self, request: FetchRequest) -> FetchResponse: ...

    async def address_of(self, url: str) -> str | None:
        """The server address a fetch of ``url`` would connect to (per-address politeness,
        limits.py), or None when it cannot tell (the fetch then says why)."""
        ...

    async def close(self) -> None: ...


Handler = Callable[[FetchRequest], FetchResponse | Awaitable[FetchResponse]]


def stub_response(
    request: FetchRequest,
    status: int = 200,
    body: bytes = b"",
    headers: Sequence[tuple[str, str]] = (),
    reason: str = "",
) -> FetchResponse:
    """A plausible response to ``request`` for handler doubles (identity-encoded body)."""
    now = time.time()
    return FetchResponse(
        url=request.url,
        status=status,
        reason=reason,
        headers=list(headers),
        raw_body=body,
        body=body,
        request_headers=list(request.headers),
        started_at=now,
        ended_at=now,
        elapsed=0.0,
    )


@dataclass
class HandlerTransport:
    """Answers each request by calling ``handler`` (sync or async); it may raise FetchError."""

    handler: Handler
    requests: list[FetchRequest] = field(default_factory=list)
    closed: bool = False

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        if self.closed:
            raise RuntimeError("HandlerTransport.fetch() after close()")
        self.requests.append(request)
        result = self.handler(request)
        if inspect.isawaitable(result):
            return await result
        return result

    async def address_of(self, url: str) -> str | None:
        return None  # no network: no server address to share

    async def close(self) -> None:
        self.closed = True


__all__ = [
    "FetchRequest",
    "FetchResponse",
    "Handler",
    "HandlerTransport",
    "Transport",
    "TruncatedReason",
    "stub_response",
]
