"""The address tokens of a crawl one process owns (memory and SQLite engines), in memory: the
rule of limits.py kept in a dict per address; a shared frontier keeps the same state in Redis
(lua/address.lua)."""

from __future__ import annotations

from dataclasses import dataclass, field

from crawlspace.limits import AddressPolicy, RateCap

__all__ = ["AddressTokens", "RequestStarts"]

_SWEEP_EVERY = 4096  # gives between sweeps of idle addresses


@dataclass(slots=True)
class _Address:
    holders: dict[str, float] = field(default_factory=dict)  # holder -> expires_at
    next_allowed_at: float = float("-inf")


class AddressTokens:
    """The address tokens of one crawl, in memory (the embedded engines' implementation)."""

    def __init__(self, policy: AddressPolicy) -> None:
        self.policy = policy
        self._addresses: dict[str, _Address] = {}
        self._gives = 0

    def take(self, address: str, holder: str, now: float, expires_at: float) -> float | None:
        """Hold a token of ``address`` until ``give`` or ``expires_at``: None when granted,
        else the time to try again."""
        state = self._addresses.setdefault(address, _Address())
        for other, expiry in list(state.holders.items()):
            if expiry <= now:
                del state.holders[other]  # a lease that expired: its token lapsed with it
        if holder in state.holders:
            return None  # already held: taking twice is one token
        busy = len(state.holders) >= self.policy.max_in_flight
        if busy or state.next_allowed_at > now:
            return self.policy.retry_at(now, state.next_allowed_at, busy)
        state.holders[holder] = expires_at
        return None

    def give(self, address: str, holder: str, ended: float) -> None:
        state = self._addresses.get(address)
        if state is None or state.holders.pop(holder, None) is None:
            return  # not held (lapsed, or given already): nothing to give back
        state.next_allowed_at = max(state.next_allowed_at, ended + self.policy.min_gap)
        self._gives += 1
        if self._gives % _SWEEP_EVERY == 0:
            self._sweep(ended)

    def _sweep(self, now: float) -> None:
        """Forget idle addresses whose gap has passed: memory must not grow with the addresses
        a crawl has seen (a forgotten address is as free as a new one)."""
        idle = [
            address
            for address, state in self._addresses.items()
            if state.next_allowed_at <= now and all(e <= now for e in state.holders.values())
        ]
        for address in idle:
            del self._addresses[address]

    def in_flight(self, address: str) -> int:
        state = self._addresses.get(address)
        return len(state.holders) if state else 0


class RequestStarts:
    """The crawl's rate cap (limits.py RateCap) in memory: the next free start."""

    def __init__(self, cap: RateCap) -> None:
        self.cap = cap
        self._next_free = float("-inf")

    def take(self, now: float, latest_start: float) -> float:
        start, self._next_free = self.cap.reserve(self._next_free, now, latest_start)
        return start
