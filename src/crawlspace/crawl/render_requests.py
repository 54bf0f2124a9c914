"""The crawl's rules for every request a rendered page makes (issue #33): the ``fetch`` that
render/browser.py hands each of them to. A rendered page is many requests; each is as polite
as a page fetch, or it is not made.

In order, a request is refused (never sent) when its resource type is not wanted (images, media
and fonts by default: a browser would fetch megabytes nobody asked for), it is not an http(s)
URL, it is out of the crawl's scope, its host's robots.txt disallows it, or that robots.txt is
not known yet (another host's answer is read from the store while fresh; the crawl never asks
a host for a page before its robots.txt). Then it is sent as the lease sends any request:

* to the lease's own host, one at a time, each after the host's politeness gap since the end
  of the previous one (the page's own fetch first); the host's next lease comes after the
  last of them (``free_at``);
* to another host, holding that host's token as a robots.txt redirect hop does
  (crawl/addresses.py HostGate): after that host's gap, never beside its own leases;
* always holding its server address's token and a start under the crawl's rate cap
  (``send``: VisitParts.fetch), so the address guard, the per-address politeness and the
  request headers apply as to any fetch;

and archived (request and response records), its bytes counted. Nothing here is the browser's:
a test drives it with a real Chromium, or with plain calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

from crawlspace.crawl.addresses import AddressBusyError, HostGate, TokenBusyError
from crawlspace.errors import BlockedAddressError, FetchError
from crawlspace.fetch.transport import FetchRequest, FetchResponse
from crawlspace.records import Lease
from crawlspace.render.browser import Answer, BrowserRequest
from crawlspace.robots import RobotsTxt
from crawlspace.urls import host_key, normalize

__all__ = ["SKIPPED_RESOURCES", "RenderRequests"]

# What a render does not fetch unless asked (render_resources): bytes, not content.
SKIPPED_RESOURCES: Final = frozenset({"image", "media", "font"})


@dataclass
class RenderRequests:
    """One rendered page's requests, under ``lease`` (whose host's robots.txt is ``rules``)."""

    lease: Lease
    rules: RobotsTxt
    user_agent: str
    send: Callable[[Lease, FetchRequest], Awaitable[FetchResponse]]
    hosts: HostGate
    robots_of: Callable[[str], RobotsTxt | None]  # another host's fresh robots.txt, if known
    in_scope: Callable[[str], bool]
    gap: Callable[[float], float]  # the politeness gap after a request of that many seconds
    now: Callable[[], float]
    archive: Callable[[FetchResponse], Awaitable[object]]
    free_at: float  # when the lease's host may be asked next (after the page's own fetch)
    total_timeout: float  # a request ends within it: none starts later than the lease allows
    skipped: frozenset[str] = SKIPPED_RESOURCES
    sent: int = 0
    bytes: int = 0
    _one_at_a_time: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def __call__(self, request: BrowserRequest) -> Answer | str:
        """The request's response, or why it was not sent."""
        refused = self._refusal(request)
        if refused is not None:
            return refused
        url = normalize(request.url) or request.url
        async with self._one_at_a_time:  # as a lease sends its requests: one after another
            try:
                if host_key(url) == self.lease.host_key:
                    response = await self._to_own_host(url)
                else:
                    response = await self._to_other_host(host_key(url), url)
            except BlockedAddressError:
                return "blocked_address"
            except TokenBusyError:
                return "busy"
            except FetchError as exc:
                return exc.reason
        await self.archive(response)
        self.sent += 1
        self.bytes += len(response.raw_body)
        return Answer(response.status, response.headers, response.body)

    def _refusal(self, request: BrowserRequest) -> str | None:
        if request.resource_type in self.skipped:
            return "resource_type"
        url = normalize(request.url)
        if url is None or not url.startswith(("http://", "https://")):
            return "invalid_url"
        if not self.in_scope(url):
            return "scope"
        target = host_key(url)
        rules = self.rules if target == self.lease.host_key else self.robots_of(target)
        if rules is None:
            return "robots_unknown"
        if not rules.is_allowed(self.user_agent, url):
            return "robots"
        return None

    @property
    def _latest_start(self) -> float:
        return self.lease.expires_at - self.total_timeout

    async def _to_own_host(self, url: str) -> FetchResponse:
        await asyncio.sleep(max(0.0, self.free_at - self.now()))
        began = self.now()
        try:
            return await self._send(url)
        finally:
            ended = self.now()
            self.free_at = max(self.free_at, ended + self.gap(ended - began))

    async def _to_other_host(self, target: str, url: str) -> FetchResponse:
        async with self.hosts.hold(self.lease, target, self._latest_start) as hold:
            began = self.now()
            try:
                return await self._send(url)
            finally:
                if hold is not None:
                    ended = self.now()
                    hold.next_allowed_at = ended + self.gap(ended - began)

    async def _send(self, url: str) -> FetchResponse:
        """Sent under the address's token; a busy address is waited for within the lease (the
        page's other requests wait behind it), never past it."""
        while True:
            if self.now() > self._latest_start:
                raise TokenBusyError(self.lease.host_key, self.lease.expires_at)
            try:
                return await self.send(self.lease, FetchRequest(url))
            except AddressBusyError as busy:
                if busy.retry_at > self._latest_start:
                    raise
                await asyncio.sleep(max(0.0, busy.retry_at - self.now()))
