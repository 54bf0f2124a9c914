"""Every request holds a token of its server's address, taken just before it is sent; a request
a lease makes to another host (a robots.txt redirect hop) also holds that host's token.

The host's token comes with the lease (the frontier's); the address's is taken here, from the
store (``take_address``: in memory on the embedded engines, in Redis for a shared crawl, by the
rule of limits.py), because a host's address is known only once it is resolved, and
on a cluster the address's slot is not the host's. A busy address refuses: the visit raises
``AddressBusyError`` before sending anything and the lease goes back with its host deferred until
the address may have room (``release(..., not_before)``), so a fetch slot never idles waiting.

Another host's token (``take_host``) is waited for instead, within the lease: the lease already
sent its own host a request, so giving it back would only repeat that request. ``HostGate``
raises ``HostBusyError`` when the wait would outlast the lease.

With a rate cap (``max_rate``, limits.py RateCap) every request first takes a start from the
store (``take_start``: crawl-wide, on every worker together) and waits for it; a start later than
the lease allows is refused as a busy address is (``RateBusyError``: nothing is sent, the lease
goes back).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

from crawlspace.limits import RateCap
from crawlspace.records import Lease, RobotsRecord
from crawlspace.robots.policy import ALLOW_ALL, RULES


class TokenBusyError(Exception):
    """A token the visit needs is not free: the lease goes back, its host deferred until
    ``retry_at``."""

    def __init__(self, key: str, retry_at: float) -> None:
        super().__init__(f"{key} busy until {retry_at}")
        self.key = key
        self.retry_at = retry_at


class AddressBusyError(TokenBusyError):
    """The server's address has no free token: nothing was sent; try after ``retry_at``."""


class RateBusyError(AddressBusyError):
    """The crawl's rate cap has no start for the request within its lease: nothing was sent;
    the lease goes back as for a busy address."""


class HostBusyError(TokenBusyError):
    """Another host's token could not be had within the lease."""


class AddressTokenStore(Protocol):
    def take_address(
        self, address: str, holder: str, now: float, expires_at: float
    ) -> float | None: ...

    def give_address(self, address: str, holder: str, ended: float) -> None: ...

    def take_start(self, now: float, latest_start: float) -> float: ...


class AddressGate:
    def __init__(
        self,
        address_of: Callable[[str], Awaitable[str | None]],
        tokens: AddressTokenStore,
        now: Callable[[], float],
        *,
        rate: RateCap = RateCap(),  # noqa: B008 - frozen, so sharing is safe
        total_timeout: float = 0.0,
    ) -> None:
        self._address_of = address_of
        self._tokens = tokens
        self._now = now
        self._rate = rate
        self._total_timeout = total_timeout  # a request ends within it (the lease must hold)

    async def _wait_for_start(self, lease: Lease) -> None:
        """Wait for the start the crawl's rate cap gives this request (RateBusyError when it
        falls too late for the lease: nothing taken, nothing sent)."""
        now = self._now()
        latest_start = lease.expires_at - self._total_timeout
        start = self._tokens.take_start(now, latest_start)
        if start > latest_start:
            raise RateBusyError("the crawl's rate", self._rate.retry_at(start, now, latest_start))
        if start > now:
            await asyncio.sleep(start - now)

    @asynccontextmanager
    async def hold(self, lease: Lease, url: str) -> AsyncIterator[None]:
        """Hold the address token of ``url``'s server for the request sent inside."""
        address = await self._address_of(url)
        if address is None:  # unresolvable or refused: the fetch itself fails and says why
            yield
            return
        if self._rate.per_second > 0:
            await self._wait_for_start(lease)
        retry_at = self._tokens.take_address(address, lease.lease_id, self._now(), lease.expires_at)
        if retry_at is not None:
            raise AddressBusyError(address, retry_at)
        try:
            yield
        finally:
            self._tokens.give_address(address, lease.lease_id, self._now())


class HostTokenStore(Protocol):
    def robots(self, host_key: str) -> RobotsRecord | None: ...

    def take_host(
        self, host_key: str, holder: str, now: float, expires_at: float
    ) -> float | None: ...

    def give_host(self, host_key: str, holder: str, next_allowed_at: float) -> None: ...


class CrawlTokens(AddressTokenStore, HostTokenStore, Protocol):
    """Every token a crawl's requests take from its store: addresses', hosts' outside their
    leases, and the rate cap's starts."""


ANSWER_POLL = 0.5  # seconds between looks for an answer while waiting for a host's token


@dataclass(slots=True)
class HostHold:
    """A held token of another host; the request sets when that host may be fetched next."""

    next_allowed_at: float


class HostGate:
    def __init__(self, tokens: HostTokenStore, now: Callable[[], float]) -> None:
        self._tokens = tokens
        self._now = now

    def fresh_answer(self, host_key: str) -> RobotsRecord | None:
        """The host's own robots.txt answer while it is fresh (a 2xx or 4xx, not a failure), or
        None: what a hop to its /robots.txt would fetch, already fetched under its token."""
        record = self._tokens.robots(host_key)
        if record is None or record.attempts or record.expires_at <= self._now():
            return None
        return record if record.outcome in (RULES, ALLOW_ALL) else None

    @asynccontextmanager
    async def hold(
        self,
        lease: Lease,
        host_key: str,
        latest_start: float,
        answered: Callable[[], bool] = lambda: False,
    ) -> AsyncIterator[HostHold | None]:
        """Hold a token of ``host_key`` (not the lease's host) for the request sent inside,
        waiting for it until ``latest_start`` at most (then HostBusyError). None instead, and
        no token, as soon as ``answered()`` says the request is no longer needed (another
        hop's fresh answer appeared: robots_visit.py), checked every ``ANSWER_POLL`` seconds
        of the wait rather than once at its end, which the host's gap may put far off (the
        caller looked just before: not again before the first take)."""
        holder = lease.lease_id + "/hop"  # a lease sends one request at a time
        while True:
            now = self._now()
            retry_at = self._tokens.take_host(host_key, holder, now, lease.expires_at)
            if retry_at is None:
                break
            if retry_at > latest_start:
                raise HostBusyError(host_key, retry_at)
            await asyncio.sleep(min(max(0.0, retry_at - now), ANSWER_POLL))
            if answered():
                yield None
                return
        hold = HostHold(self._now())
        try:
            yield hold
        finally:
            self._tokens.give_host(host_key, holder, hold.next_allowed_at)
