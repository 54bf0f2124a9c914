"""Name resolution for fetches: ``--resolve`` overrides, a small cache, and the address guard.

``CachingResolver`` is library-neutral; ``aiohttp_transport`` adapts it to aiohttp's resolver
interface. aiohttp connects to exactly the addresses a resolver returns, so filtering them here
means the guard judges the address actually connected to, which defeats DNS rebinding.

getaddrinfo exposes no TTL, so answers are cached for fixed times
(``FetchSettings.dns_cache_seconds`` / ``dns_negative_seconds``) instead of the record's TTL.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from crawlspace.address_guard import AddressGuard, parse_ip
from crawlspace.errors import BlockedAddressError, DnsError
from crawlspace.fetch.settings import FetchSettings, ResolveOverride

# (family, type, proto, canonname, sockaddr), as loop.getaddrinfo returns.
AddrInfo: TypeAlias = tuple[Any, Any, int, str, tuple[Any, ...]]
Lookup: TypeAlias = Callable[[str, int, int], Awaitable[Sequence[AddrInfo]]]

_MAX_ENTRIES: Final = 10_000


@dataclass(frozen=True)
class ResolvedAddress:
    hostname: str
    address: str
    port: int
    family: int


@dataclass
class _Entry:
    expires: float
    addresses: tuple[tuple[str, int], ...] = ()  # (address, family)
    error: str | None = None


async def _system_lookup(host: str, port: int, family: int) -> Sequence[AddrInfo]:
    # loop.getaddrinfo runs the blocking libc call in the default executor, off the event loop.
    loop = asyncio.get_running_loop()
    return await loop.getaddrinfo(host, port, family=family, type=socket.SOCK_STREAM)


class CachingResolver:
    """Resolve a hostname to the addresses we may connect to, or raise a FetchError.

    Order: ``--resolve`` override (host and port must match, as in curl), then the cache, then
    one shared lookup per (host, family) however many fetches ask at once. The guard runs on
    every answer, cached or not, so changing ``allow_nets`` never needs a cache flush.
    """

    def __init__(
        self,
        guard: AddressGuard,
        *,
        overrides: Sequence[ResolveOverride] = (),
        positive_seconds: float = 300.0,
        negative_seconds: float = 30.0,
        lookup_timeout: float | None = 10.0,
        now: Callable[[], float] = time.monotonic,
        lookup: Lookup = _system_lookup,
    ) -> None:
        self._guard = guard
        self._overrides = {(o.host.lower(), o.port): o.address for o in overrides}
        self._positive = positive_seconds
        self._negative = negative_seconds
        self._lookup_timeout = lookup_timeout
        self._now = now
        self._lookup = lookup
        self._cache: dict[tuple[str, int], _Entry] = {}
        self._inflight: dict[tuple[str, int], asyncio.Task[_Entry]] = {}
        self.lookups = 0  # how many times the system resolver was asked (for tests and stats)

    @classmethod
    def from_settings(
        cls,
        config: FetchSettings,
        guard: AddressGuard,
        *,
        now: Callable[[], float] = time.monotonic,
        lookup: Lookup = _system_lookup,
    ) -> CachingResolver:
        return cls(
            guard,
            overrides=config.resolve,
            positive_seconds=config.dns_cache_seconds,
            negative_seconds=config.dns_negative_seconds,
            lookup_timeout=config.connect_timeout or None,
            now=now,
            lookup=lookup,
        )

    async def resolve(
        self, host: str, port: int = 0, family: int = socket.AF_UNSPEC
    ) -> list[ResolvedAddress]:
        name = host.rstrip(".").lower() if host not in (".", "") else host
        override = self._overrides.get((name, port))
        if override is not None:
            ip = parse_ip(override)
            fam: int = socket.AF_INET6 if ip is not None and ip.version == 6 else socket.AF_INET
            candidates: tuple[tuple[str, int], ...] = ((override, fam),)
        else:
            entry = await self._cached_or_lookup(name, family)
            if entry.error is not None:
                raise DnsError(f"cannot resolve {host!r}: {entry.error}")
            candidates = entry.addresses
        allowed: list[ResolvedAddress] = []
        refused: list[str] = []
        for address, fam in candidates:
            reason = self._guard.check(address)
            if reason is None:
                allowed.append(ResolvedAddress(host, address, port, fam))
            else:
                refused.append(f"{address} ({reason})")
        if not allowed:
            raise BlockedAddressError(
                f"refusing to connect to {host!r}: it resolves to {', '.join(refused)}, which the "
                "address policy blocks; pass --allow-net CIDR to permit such networks"
            )
        return allowed

    def clear(self) -> None:
        self._cache.clear()

    async def close(self) -> None:
        for task in self._inflight.values():
            task.cancel()
        self._inflight.clear()

    async def _cached_or_lookup(self, name: str, family: int) -> _Entry:
        key = (name, family)
        entry = self._cache.get(key)
        if entry is not None and entry.expires > self._now():
            return entry
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.create_task(self._do_lookup(name, family))
            self._inflight[key] = task
            task.add_done_callback(lambda _t: self._inflight.pop(key, None))
        try:
            # shield: one waiter giving up must not cancel the lookup the others share.
            return await asyncio.wait_for(asyncio.shield(task), self._lookup_timeout)
        except TimeoutError:
            raise DnsError(
                f"cannot resolve {name!r}: no answer within {self._lookup_timeout} s",
                reason="dns_timeout",
            ) from None

    async def _do_lookup(self, name: str, family: int) -> _Entry:
        self.lookups += 1
        try:
            infos = await self._lookup(name, 0, family)
        except (OSError, UnicodeError) as exc:
            entry = _Entry(self._now() + self._negative, error=str(exc) or type(exc).__name__)
        else:
            seen: dict[tuple[str, int], None] = {}
            for fam, _type, _proto, _canon, sockaddr in infos:
                # IPv6 sockaddrs are (host, port, flowinfo, scope_id); the scope is in host.
                seen.setdefault((str(sockaddr[0]), int(fam)), None)
            if seen:
                entry = _Entry(self._now() + self._positive, addresses=tuple(seen))
            else:
                entry = _Entry(self._now() + self._negative, error="no addresses")
        self._store((name, family), entry)
        return entry

    def _store(self, key: tuple[str, int], entry: _Entry) -> None:
        if len(self._cache) >= _MAX_ENTRIES:
            now = self._now()
            for stale in [k for k, e in self._cache.items() if e.expires <= now]:
                del self._cache[stale]
            # Still full of live entries: drop the oldest inserted (dicts keep insertion order).
            while len(self._cache) >= _MAX_ENTRIES:
                del self._cache[next(iter(self._cache))]
        self._cache[key] = entry


__all__ = ["CachingResolver", "ResolvedAddress"]
