"""Tokens held outside a host's own leases on the shared frontier: a server address's, in the
address's own slot (lua/address.lua), and a host's, for the request another host's lease makes
to it (a robots.txt redirect hop), in the host's bucket (lua/host_token.lua); the starts of
the crawl's rate cap (lua/rate.lua); and the renders of the crawl-wide render budget
(lua/render.lua). A part of
``RedisFrontier`` (frontier.py), given its scripts, limits and bucket index.
"""

from __future__ import annotations

import math
from typing import Any

from crawlspace.limits import token_retry_at
from crawlspace.store.base import FrontierLimits
from crawlspace.store.redis.codec import num
from crawlspace.store.redis.index import BucketIndex
from crawlspace.store.redis.scripts import ScriptRunner

__all__ = ["HeldTokens"]


class HeldTokens:
    """``take_address``/``give_address`` and ``take_host``/``give_host`` of
    ``crawlspace.store.base.Frontier``."""

    def __init__(self, scripts: ScriptRunner, limits: FrontierLimits, index: BucketIndex) -> None:
        self._scripts = scripts
        self.limits = limits
        self.index = index
        self._gives: list[tuple[str, tuple[object, ...]]] = []  # (prefix, args) waiting
        scripts.riders.append(self)

    # -- per server address, in the address's own slot (lua/address.lua) ---------------------

    def take_address(
        self, address: str, holder: str, now: float, expires_at: float
    ) -> float | None:
        prefix = f"{{{self._scripts.namespace}:a:{address}}}:"
        policy = self.limits.address
        args = (prefix, "take", holder, num(now), num(expires_at), policy.max_in_flight)
        reply = self._scripts.run_key("address", prefix + "h", args)
        if int(reply[0]) == 1:
            return None
        next_at = float(reply[2]) if reply[2] else float("-inf")
        return policy.retry_at(now, next_at, busy=int(reply[1]) == 1)

    def give_address(self, address: str, holder: str, ended: float) -> None:
        """The token goes back with this process's next round trip (a ``Rider``): it is
        only held a moment longer, and its address's next start is set from ``ended``, so
        the gap is never shorter. This process's next take of it goes after it."""
        prefix = f"{{{self._scripts.namespace}:a:{address}}}:"
        gap = self.limits.address.min_gap
        next_at = num(ended + gap) if gap > 0 else ""
        self._gives.append((prefix, (prefix, "give", holder, next_at, math.ceil(gap) + 1)))

    # -- the crawl's rate cap, one key for every worker (lua/rate.lua) -------------------------

    def take_start(self, now: float, latest_start: float) -> float:
        cap = self.limits.rate
        if cap.per_second <= 0:
            return now
        key = f"{self._scripts.namespace}:rate"
        reply = self._scripts.run_key("rate", key, (num(now), num(latest_start), num(cap.interval)))
        return float(reply)

    # -- the crawl-wide render budget, one key for every worker (lua/render.lua) --------------

    def reserve_render(self) -> tuple[str | None, int, float]:
        budget = self.limits.render
        caps = ("" if cap is None else num(cap) for cap in (budget.max_pages, budget.max_seconds))
        reply = self._scripts.run_key("render", self._render_key, ("reserve", *caps))
        why = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
        return why or None, int(reply[1]), float(reply[2])

    def spend_render(self, seconds: float) -> None:
        self._scripts.run_key("render", self._render_key, ("spend", num(max(0.0, seconds))))

    @property
    def _render_key(self) -> str:
        return f"{self._scripts.namespace}:renders"

    # -- as a Rider (scripts.py) ---------------------------------------------------------------

    def waiting(self) -> bool:
        return bool(self._gives)

    def queue_waiting(self, pipe: Any) -> int:
        # A give is idempotent (it names its holder), so a repeat after a lost reply is harmless.
        for prefix, args in self._gives:
            self._scripts.queue(pipe, "address", prefix + "h", args)
        return len(self._gives)

    def sent(self) -> None:
        self._gives.clear()

    # -- per host, in the host's bucket (lua/host_token.lua); expire.lua lapses them ------------

    def take_host(self, host_key: str, holder: str, now: float, expires_at: float) -> float | None:
        reply = self._host_token("take", host_key, holder, num(now), num(expires_at))
        if int(reply[0]) == 1:
            return None
        next_at = float(reply[2]) if reply[2] else float("-inf")
        return token_retry_at(now, next_at, busy=int(reply[1]) == 1)

    def give_host(self, host_key: str, holder: str, next_allowed_at: float) -> None:
        self._host_token("give", host_key, holder, num(next_allowed_at))

    def _host_token(self, op: str, host_key: str, holder: str, *args: object) -> Any:
        bucket = self._scripts.bucket(host_key)
        max_in_flight = self.limits.max_in_flight_per_host
        reply = self._scripts.run("host_token", bucket, op, host_key, holder, max_in_flight, *args)
        return self.index.apply_replies([bucket], [reply])[0]
