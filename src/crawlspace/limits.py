"""What every engine enforces the same way: the per-address token rule.

Politeness per server address: at most N requests in flight to one IP, and a gap between them.

A host's token bounds what one host name gets; a server that hosts a thousand names (virtual
hosts, a CDN edge, a shared blog platform) would still get a thousand requests at once. So every
request also holds a token of the address it connects to (BUbiNG keeps host and IP politeness
together the same way; Heritrix users ask for it as "queue groups"). Pure: callers pass ``now``.

The rule, the same on every engine (the embedded ones keep ``AddressTokens`` in memory, since
one process owns their crawl; a shared frontier keeps the same state in Redis, lua/address.lua):

- ``take``: granted while fewer than ``max_in_flight`` live holders hold the address and its
  gap has passed. A holder is live until it gives the token back or its lease expires, so a
  killed worker's tokens lapse with its leases. Refused, it says when to try again.
- ``give``: the holder's token back; the address's next start moves to ``ended + min_gap``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["BUSY_RETRY", "AddressPolicy", "token_retry_at"]

# How long a lease refused by a busy address waits before its host is tried again: long enough
# not to spin on a crowded server, short against the politeness gaps that space each host.
BUSY_RETRY: Final = 0.25


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    max_in_flight: int = 4
    min_gap: float = 0.0

    def retry_at(self, now: float, next_allowed_at: float, busy: bool) -> float:
        return token_retry_at(now, next_allowed_at, busy)


def token_retry_at(now: float, next_allowed_at: float, busy: bool) -> float:
    """When a refused take of a token (an address's, or a host's outside its leases) may
    succeed: after the gap, or a short wait for a free token."""
    return max(next_allowed_at, now + BUSY_RETRY) if busy else next_allowed_at
