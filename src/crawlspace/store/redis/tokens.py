"""Tokens held outside a host's own leases on the shared frontier: a server address's, in the
address's own slot (lua/address.lua), and a host's, for the request another host's lease makes
to it (a robots.txt redirect hop), in the host's bucket (lua/host_token.lua). A part of
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
        prefix = f"{{{self._scripts.namespace}:a:{address}}}:"
        gap = self.limits.address.min_gap
        next_at = num(ended + gap) if gap > 0 else ""
        args = (prefix, "give", holder, next_at, math.ceil(gap) + 1)
        self._scripts.run_key("address", prefix + "h", args)

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
