"""The crawl's rate cap (limits.py RateCap) on a virtual clock, and AddressGate waiting for the
starts it gives (crawl/addresses.py), on the memory engine's frontier and the real clock."""

from __future__ import annotations

import asyncio
import time
from itertools import pairwise

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.addresses import AddressBusyError, AddressGate, RateBusyError
from crawlspace.crawl.settings import SettingChange
from crawlspace.errors import ConfigError
from crawlspace.limits import RateCap
from crawlspace.records import Lease, LeaseKind
from crawlspace.store.base import FrontierLimits
from crawlspace.store.memory import MemoryFrontier


def test_starts_are_one_interval_apart_and_a_late_one_is_not_taken() -> None:
    cap = RateCap(per_second=2.0)
    start, free = cap.reserve(float("-inf"), 5.0, 30.0)
    assert (start, free) == (5.0, 5.5)
    start, free = cap.reserve(free, 5.1, 30.0)
    assert (start, free) == (5.5, 6.0)
    start, after = cap.reserve(free, 5.2, 5.9)  # the lease ends too soon for 6.0
    assert (start, after) == (6.0, 6.0)
    # Retried when a lease as long as this one (0.7 s of room) reaches 6.0.
    assert cap.retry_at(start, 5.2, 5.9) == pytest.approx(5.3)
    assert cap.retry_at(100.0, 5.2, 5.0) == 100.0  # no room at all: at the start itself


def _lease(lease_id: str, expires_at: float) -> Lease:
    host = "http://a.example"
    return Lease(LeaseKind.PAGE, lease_id, host, host + "/", 1, 1, 1, 0, 0, expires_at)


async def _resolve(url: str) -> str:
    return "192.0.2.1"


def test_every_request_waits_for_its_start() -> None:
    cap = RateCap(per_second=20.0)
    frontier = MemoryFrontier(FrontierLimits(rate=cap))
    gate = AddressGate(_resolve, frontier, time.time, rate=cap, total_timeout=1.0)
    starts: list[float] = []

    async def request(lease_id: str) -> None:
        async with gate.hold(_lease(lease_id, time.time() + 30.0), "http://a.example/"):
            starts.append(time.monotonic())

    async def main() -> None:
        await asyncio.gather(*(request(f"L{i}") for i in range(6)))

    asyncio.run(main())
    gaps = [b - a for a, b in pairwise(starts)]
    assert len(starts) == 6
    assert min(gaps) >= 0.05 - 0.005, gaps
    assert starts[-1] - starts[0] >= 5 * 0.05 - 0.01


def test_a_start_past_the_lease_refuses_the_request() -> None:
    cap = RateCap(per_second=1.0)
    frontier = MemoryFrontier(FrontierLimits(rate=cap))
    gate = AddressGate(_resolve, frontier, time.time, rate=cap, total_timeout=5.0)
    sent: list[str] = []

    async def request(lease_id: str, seconds: float) -> None:
        async with gate.hold(_lease(lease_id, time.time() + seconds), "http://a.example/"):
            sent.append(lease_id)

    async def main() -> None:
        await request("first", 30.0)
        with pytest.raises(RateBusyError) as refused:
            await request("short", 5.5)  # its latest start is 0.5 s away; the next is 1 s
        assert isinstance(refused.value, AddressBusyError)  # handled as a busy address is
        assert refused.value.retry_at > time.time()

    asyncio.run(main())
    assert sent == ["first"]
    assert frontier.take_start(time.time(), time.time() + 10) > time.time() + 0.5  # kept


def test_raising_or_lifting_the_cap_is_less_polite() -> None:
    assert SettingChange("max_rate", 5.0, 10.0).less_polite
    assert SettingChange("max_rate", 5.0, None).less_polite
    assert SettingChange("max_rate", None, 5.0).less_polite is False
    assert SettingChange("max_rate", 10.0, 5.0).less_polite is False


def test_a_cap_of_zero_or_less_is_refused() -> None:
    with pytest.raises(ConfigError, match="max_rate must be > 0"):
        CrawlConfig(max_rate=0)
