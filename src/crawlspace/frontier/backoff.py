"""How long a host waits after it said "slow down" or kept failing. Pure; randomness is injected.

Two per-host counters travel with each lease and come back with its completion (the host's token
is exclusive, so there are no lost updates):

* ``level`` (throttling): +1 on 429/503, -1 on a success. The normal politeness gap is multiplied
  by ``widen_factor ** level``, so a host that throttles us is visited less often for a while and
  recovers slowly, never below the configured minimum.
* ``failures`` (consecutive connection errors, timeouts, 5xx): reset by any response that is not
  a server error. Each one in a row doubles the host's wait, from ``retry_seconds`` up to
  ``max_seconds``: a failing host gets one request per step, whichever URLs are queued on it
  (frontier/outage.py says which URL is charged for it).

A throttling streak (answers that all asked us to wait, in a row) also keeps the time it began,
as the host note ``THROTTLE_NOTE`` (:func:`throttle_note`), so the total wait can be capped:
``max_throttled_seconds`` (crawl/responses.py retry_or_fail).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HostWait:
    """The host's new counters and the minimum wait before its next request."""

    level: int
    failures: int
    wait: float


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    base_seconds: float = 5.0
    max_seconds: float = 3600.0  # also caps Retry-After, so a server cannot park us for a week
    widen_factor: float = 2.0
    max_level: int = 6
    jitter: float = 0.25
    retry_seconds: float = 2.0

    def gap_multiplier(self, level: int) -> float:
        return float(self.widen_factor ** max(0, min(level, self.max_level)))

    def _jittered(self, seconds: float, rand: float) -> float:
        # Full jitter around the nominal wait spreads retries of many URLs of one host (and of
        # many hosts behind one server) instead of synchronizing them (AWS "Exponential Backoff
        # and Jitter", 2015).
        return max(0.0, seconds * (1.0 + self.jitter * (2.0 * rand - 1.0)))

    def on_success(self, level: int) -> HostWait:
        return HostWait(max(0, level - 1), 0, 0.0)

    def on_throttled(
        self, level: int, failures: int, retry_after: float | None, rand: float
    ) -> HostWait:
        """429 or 503: honour Retry-After (capped), else exponential backoff with jitter."""
        new_level = min(level + 1, self.max_level)
        if retry_after is not None:
            wait = min(max(retry_after, 0.0), self.max_seconds)
        else:
            wait = min(self._jittered(self.base_seconds * 2.0**level, rand), self.max_seconds)
        return HostWait(new_level, failures, wait)

    def on_failure(self, level: int, failures: int, rand: float) -> HostWait:
        """A connection error, timeout or 5xx: the host waits ``retry_seconds``, doubled for
        each failure before it in a row (a 35 s outage is probed at about 2, 6, 14, 30 and 62
        s, not paused for minutes), jittered, capped at ``max_seconds``."""
        streak = failures + 1
        nominal = min(self.retry_seconds * 2.0 ** min(streak - 1, 64), self.max_seconds)
        return HostWait(level, streak, min(self._jittered(nominal, rand), self.max_seconds))


# The host note that holds when the host's current throttling streak began ("" or absent: none).
THROTTLE_NOTE = "throttled_since"


def throttled_since(note: str | None) -> float | None:
    """When the host's throttling streak began, from its note (None: not throttling us)."""
    return float(note) if note else None


def throttle_note(since: float | None, throttled: bool, answered_at: float) -> str | None:
    """The host's throttle note after an answer, or None to leave it as it is: a first
    throttled answer starts a streak, any other answer ends one (a note is never deleted,
    only emptied, so every engine writes it the same way)."""
    if throttled:
        return None if since is not None else repr(answered_at)
    return "" if since is not None else None
