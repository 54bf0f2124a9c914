"""Every request holds a token of its server's address, taken just before it is sent.

The host's token comes with the lease (the frontier's); the address's is taken here, from the
store (``take_address``: in memory on the embedded engines, in Redis for a shared crawl, by the
rule of frontier/addresses.py), because a host's address is known only once it is resolved, and
on a cluster the address's slot is not the host's. A busy address refuses: the visit raises
``AddressBusyError`` before sending anything and the lease goes back with its host deferred until
the address may have room (``release(..., not_before)``), so a fetch slot never idles waiting.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Protocol

from crawlspace.records import Lease


class AddressBusyError(Exception):
    """The server's address has no free token: nothing was sent; try after ``retry_at``."""

    def __init__(self, address: str, retry_at: float) -> None:
        super().__init__(f"{address} busy until {retry_at}")
        self.address = address
        self.retry_at = retry_at


class AddressTokenStore(Protocol):
    def take_address(
        self, address: str, holder: str, now: float, expires_at: float
    ) -> float | None: ...

    def give_address(self, address: str, holder: str, ended: float) -> None: ...


class AddressGate:
    def __init__(
        self,
        address_of: Callable[[str], Awaitable[str | None]],
        tokens: AddressTokenStore,
        now: Callable[[], float],
    ) -> None:
        self._address_of = address_of
        self._tokens = tokens
        self._now = now

    @asynccontextmanager
    async def hold(self, lease: Lease, url: str) -> AsyncIterator[None]:
        """Hold the address token of ``url``'s server for the request sent inside."""
        address = await self._address_of(url)
        if address is None:  # unresolvable or refused: the fetch itself fails and says why
            yield
            return
        retry_at = self._tokens.take_address(address, lease.lease_id, self._now(), lease.expires_at)
        if retry_at is not None:
            raise AddressBusyError(address, retry_at)
        try:
            yield
        finally:
            self._tokens.give_address(address, lease.lease_id, self._now())
