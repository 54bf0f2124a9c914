"""Clocks. Pure policy code takes ``now: float`` as an argument; only the wiring asks a Clock."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...


class SystemClock:
    """Wall-clock seconds since the epoch (timestamps are stored and exported)."""

    def now(self) -> float:
        return time.time()


class VirtualClock:
    """A clock that only moves when told to: tests run hours of crawl time in microseconds."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a clock cannot go backwards (advance by {seconds})")
        self._now += seconds

    def set(self, now: float) -> None:
        if now < self._now:
            raise ValueError(f"a clock cannot go backwards ({self._now} -> {now})")
        self._now = now
