"""HostGate (crawl/addresses.py): another host's token for a robots.txt redirect hop, taken from
a real frontier (the memory engine's): waited for within the lease, refused past it, and given
back with the host's next start."""

from __future__ import annotations

import asyncio
import time

import pytest

from crawlspace.crawl.addresses import ANSWER_POLL, HostBusyError, HostGate
from crawlspace.records import Lease, LeaseKind
from crawlspace.store.memory import MemoryFrontier

HUB = "http://hub.example"


def _lease(expires_at: float) -> Lease:
    return Lease(
        LeaseKind.ROBOTS,
        "L9",
        "http://a.example",
        "http://a.example/robots.txt",
        0,
        1,
        1,
        0,
        0,
        expires_at,
    )


def _hub_busy_for(seconds: float) -> tuple[MemoryFrontier, float]:
    """A frontier whose hub was just requested and may be again ``seconds`` from now."""
    frontier = MemoryFrontier()
    now = time.time()
    frontier.take_host(HUB, "page", now, now + 60)
    frontier.give_host(HUB, "page", now + seconds)
    return frontier, now


def test_the_gate_waits_for_the_hosts_clock_then_moves_it() -> None:
    frontier = MemoryFrontier()
    now = time.time()
    assert frontier.take_host(HUB, "page", now, now + 60) is None
    frontier.give_host(HUB, "page", now + 0.3)  # the hub's gap runs 0.3 s more
    gate = HostGate(frontier, time.time)

    async def hop() -> float:
        async with gate.hold(_lease(now + 60), HUB, latest_start=now + 50) as hold:
            assert hold is not None
            started = time.time()
            assert frontier.in_flight() == 1
            hold.next_allowed_at = started + 5.0
        return started

    started = asyncio.run(hop())
    assert started >= now + 0.3
    assert frontier.in_flight() == 0
    assert frontier.take_host(HUB, "next", started + 1.0, started + 60) == started + 5.0


def test_the_gate_refuses_a_wait_past_the_lease_and_holds_nothing() -> None:
    frontier, now = _hub_busy_for(30.0)
    gate = HostGate(frontier, time.time)

    async def hop() -> None:
        async with gate.hold(_lease(now + 20), HUB, latest_start=now + 10):
            raise AssertionError("no token may be granted before the hub's clock")

    with pytest.raises(HostBusyError) as refused:
        asyncio.run(hop())
    assert refused.value.retry_at == now + 30.0
    assert frontier.in_flight() == 0


def test_an_answer_while_waiting_ends_the_wait_without_a_token() -> None:
    """The hub's gap runs 30 s more, but another hop's answer appears after ~0.2 s: the wait
    ends at the next look (ANSWER_POLL), not at the gap's end, and takes nothing."""
    frontier, now = _hub_busy_for(30.0)
    gate = HostGate(frontier, time.time)

    async def hop() -> float:
        async with gate.hold(
            _lease(now + 60), HUB, latest_start=now + 50, answered=lambda: time.time() > now + 0.2
        ) as hold:
            assert hold is None
        return time.time()

    ended = asyncio.run(hop())
    assert ended < now + 0.2 + ANSWER_POLL + 0.3
    assert frontier.in_flight() == 0
    assert frontier.take_host(HUB, "next", now + 1.0, now + 60) == now + 30.0
