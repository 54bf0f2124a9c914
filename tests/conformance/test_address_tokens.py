"""Per server address politeness on every engine (limits.py): at most N tokens of one
address held at once, a gap between the end of one request and the start of the next, tokens
that lapse with their lease, and a lease given back with its host deferred until the address may
have room. Memory, SQLite, one Redis and a 3-master Redis Cluster answer the same."""

from __future__ import annotations

import pytest

from crawlspace.limits import BUSY_RETRY, AddressPolicy, RateCap
from crawlspace.records import LeaseKind
from crawlspace.store.base import FrontierLimits
from tests.conformance.conftest import LEASE_SECONDS, FrontierFactory, cand, robots_ok

ADDR = "192.0.2.7"
OTHER = "2001:db8::7"


def test_at_most_max_in_flight_tokens_per_address(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits(address=AddressPolicy(max_in_flight=2)))
    assert frontier.take_address(ADDR, "L1", 10.0, 100.0) is None
    assert frontier.take_address(ADDR, "L2", 10.0, 100.0) is None
    # Full: the third waits a short while for a token, whatever its host.
    assert frontier.take_address(ADDR, "L3", 10.0, 100.0) == pytest.approx(10.0 + BUSY_RETRY)
    assert frontier.take_address(OTHER, "L3", 10.0, 100.0) is None  # another server is free
    # A holder asking again holds one token, not two (a retried call on a shared frontier).
    assert frontier.take_address(ADDR, "L1", 10.0, 100.0) is None
    frontier.give_address(ADDR, "L1", 11.0)
    assert frontier.take_address(ADDR, "L3", 11.0, 100.0) is None
    assert frontier.take_address(ADDR, "L4", 11.0, 100.0) is not None


def test_the_gap_runs_from_the_end_of_a_request(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits(address=AddressPolicy(max_in_flight=4, min_gap=2.0)))
    assert frontier.take_address(ADDR, "L1", 10.0, 100.0) is None
    assert frontier.take_address(ADDR, "L2", 10.0, 100.0) is None  # no request has ended yet
    frontier.give_address(ADDR, "L1", 12.5)
    assert frontier.take_address(ADDR, "L3", 13.0, 100.0) == pytest.approx(14.5)
    assert frontier.take_address(ADDR, "L3", 14.5, 100.0) is None
    # A give that is not a holder's (lapsed, or given twice) moves nothing.
    frontier.give_address(ADDR, "L1", 50.0)
    assert frontier.take_address(ADDR, "L4", 14.5, 100.0) is None


def test_a_token_lapses_with_its_lease(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits(address=AddressPolicy(max_in_flight=1)))
    assert frontier.take_address(ADDR, "dead-worker", 10.0, 20.0) is None
    assert frontier.take_address(ADDR, "L2", 19.0, 60.0) is not None
    assert frontier.take_address(ADDR, "L2", 20.0, 60.0) is None  # the dead holder's lapsed


def test_a_lease_given_back_for_a_busy_address_waits(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand("http://a.example", "/1"), cand("http://a.example", "/2")], 0.0)
    (robots,) = frontier.lease(0.0, 10, LEASE_SECONDS)
    assert robots.kind is LeaseKind.ROBOTS
    assert frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    (page,) = frontier.lease(1.0, 10, LEASE_SECONDS)
    assert frontier.release(page, 1.0, not_before=3.0)
    assert frontier.lease(2.9, 10, LEASE_SECONDS) == []
    (again,) = frontier.lease(3.0, 10, LEASE_SECONDS)
    assert again.url == page.url
    assert again.attempt == page.attempt  # not a failed attempt: nothing was sent
    # A robots.txt lease given back the same way waits too.
    frontier.add([cand("http://b.example", "/1")], 3.0)
    (b_robots,) = frontier.lease(3.0, 10, LEASE_SECONDS)
    assert b_robots.kind is LeaseKind.ROBOTS
    assert frontier.release(b_robots, 3.0, not_before=5.0)
    assert frontier.lease(4.9, 10, LEASE_SECONDS) == []
    (b_again,) = frontier.lease(5.0, 10, LEASE_SECONDS)
    assert (b_again.kind, b_again.host_key) == (LeaseKind.ROBOTS, "http://b.example")


def test_the_rate_cap_spaces_starts_crawl_wide(make_frontier: FrontierFactory) -> None:
    """limits.py RateCap: one start per interval for every request of the crawl, whatever its
    host or address; a start later than the request's lease allows is not taken."""
    frontier = make_frontier(FrontierLimits(rate=RateCap(per_second=4.0)))
    assert frontier.take_start(10.0, 40.0) == pytest.approx(10.0)
    assert frontier.take_start(10.0, 40.0) == pytest.approx(10.25)
    assert frontier.take_start(10.1, 40.0) == pytest.approx(10.5)
    # Too late for this request's lease: refused, and the next start stays where it was.
    assert frontier.take_start(10.1, 10.6) == pytest.approx(10.75)
    assert frontier.take_start(10.1, 10.8) == pytest.approx(10.75)
    assert frontier.take_start(10.2, 40.0) == pytest.approx(11.0)
    # Starts not asked for are not banked: after a quiet while, one start is free now.
    assert frontier.take_start(20.0, 40.0) == pytest.approx(20.0)
    assert frontier.take_start(20.0, 40.0) == pytest.approx(20.25)


def test_no_rate_cap_starts_every_request_now(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    assert [frontier.take_start(10.0, 40.0) for _ in range(3)] == [10.0, 10.0, 10.0]
