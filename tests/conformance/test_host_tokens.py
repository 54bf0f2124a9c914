"""A host's token taken outside its own leases (``take_host`` / ``give_host``, store/base.py),
for the request another host's lease makes to it (a robots.txt redirect hop), the same on
memory, SQLite, one Redis and a 3-master Redis Cluster: it is granted only as a lease would be,
blocks the host's leases while held, moves the host's clock when given back, and lapses with
its expiry like a lost lease."""

from __future__ import annotations

from crawlspace.records import LeaseKind
from crawlspace.store.base import Frontier, FrontierLimits
from tests.conformance.conftest import LEASE_SECONDS, FrontierFactory, cand, fetched, robots_ok

HOST = "http://a.example"
NEW = "http://never-seen.example"


def _ready_host(
    frontier_factory: FrontierFactory, limits: FrontierLimits | None = None
) -> Frontier:
    """A frontier whose HOST has robots.txt answered and two pages queued, free from t=1."""
    frontier = frontier_factory(limits or FrontierLimits())
    frontier.add([cand(HOST, "/a"), cand(HOST, "/b")], 0.0)
    (robots,) = frontier.lease(0.0, 10, LEASE_SECONDS)
    assert robots.kind is LeaseKind.ROBOTS
    assert frontier.complete_robots(robots, robots_ok(robots, 0.0), 1.0)
    return frontier


def test_a_held_host_token_blocks_the_hosts_leases(make_frontier: FrontierFactory) -> None:
    frontier = _ready_host(make_frontier)
    assert frontier.take_host(HOST, "hop-1", 2.0, 2.0 + LEASE_SECONDS) is None
    assert frontier.in_flight() == 1
    assert frontier.lease(3.0, 10, LEASE_SECONDS) == []  # its only token is held
    # A second holder waits for the token: a short retry, not the host's clock.
    retry = frontier.take_host(HOST, "hop-2", 3.0, 3.0 + LEASE_SECONDS)
    assert retry is not None
    assert 3.0 < retry <= 4.0
    frontier.give_host(HOST, "hop-1", 10.0)  # the hop ended; the host's gap runs to 10
    assert frontier.in_flight() == 0
    assert frontier.lease(9.0, 10, LEASE_SECONDS) == []
    assert frontier.next_ready_at() == 10.0
    (lease,) = frontier.lease(10.0, 10, LEASE_SECONDS)
    assert lease.kind is LeaseKind.PAGE


def test_a_host_token_waits_for_the_hosts_clock_and_its_leases(
    make_frontier: FrontierFactory,
) -> None:
    frontier = _ready_host(make_frontier)
    (lease,) = frontier.lease(1.0, 10, LEASE_SECONDS)
    # A page is in flight: no token, and no change to anything.
    retry = frontier.take_host(HOST, "hop", 1.5, 1.5 + LEASE_SECONDS)
    assert retry is not None
    assert retry > 1.5
    assert frontier.in_flight() == 1
    assert frontier.complete(lease, fetched(5.0), 2.0)
    # Free, but its next-allowed time (5) is the retry time.
    assert frontier.take_host(HOST, "hop", 2.5, 2.5 + LEASE_SECONDS) == 5.0
    assert frontier.take_host(HOST, "hop", 5.0, 5.0 + LEASE_SECONDS) is None
    frontier.give_host(HOST, "hop", 3.0)  # earlier than the clock: the clock stays
    assert frontier.next_ready_at() == 5.0


def test_giving_back_twice_or_a_token_never_held_changes_nothing(
    make_frontier: FrontierFactory,
) -> None:
    frontier = _ready_host(make_frontier)
    frontier.give_host(HOST, "nobody", 50.0)
    assert frontier.next_ready_at() == 1.0
    assert frontier.take_host(HOST, "hop", 2.0, 2.0 + LEASE_SECONDS) is None
    frontier.give_host(HOST, "hop", 6.0)
    frontier.give_host(HOST, "hop", 60.0)
    assert frontier.in_flight() == 0
    assert frontier.next_ready_at() == 6.0


def test_a_host_never_seen_gets_a_token_and_keeps_its_clock(
    make_frontier: FrontierFactory,
) -> None:
    frontier = make_frontier(FrontierLimits())
    assert frontier.take_host(NEW, "hop", 1.0, 1.0 + LEASE_SECONDS) is None
    retry = frontier.take_host(NEW, "hop-2", 1.5, 1.5 + LEASE_SECONDS)
    assert retry is not None
    frontier.give_host(NEW, "hop", 8.0)
    assert frontier.next_ready_at() is None  # nothing queued: not leasable
    assert frontier.take_host(NEW, "hop-2", 7.0, 7.0 + LEASE_SECONDS) == 8.0
    # Its first URL waits for that clock too, robots.txt first as for any host.
    frontier.add([cand(NEW, "/")], 7.0)
    assert frontier.lease(7.5, 10, LEASE_SECONDS) == []
    (robots,) = frontier.lease(8.0, 10, LEASE_SECONDS)
    assert robots.kind is LeaseKind.ROBOTS


def test_a_token_not_given_back_lapses_like_a_lost_lease(make_frontier: FrontierFactory) -> None:
    gap = 3.0
    frontier = _ready_host(make_frontier, FrontierLimits(lost_lease_gap=gap))
    assert frontier.take_host(HOST, "killed", 2.0, 12.0) is None
    assert frontier.expire_leases(11.0) == 0
    assert frontier.lease(11.0, 10, LEASE_SECONDS) == []
    assert frontier.expire_leases(12.0) == 1
    assert frontier.in_flight() == 0
    # Its request may have just ended: the host waits the lost-lease gap from the expiry.
    assert frontier.lease(12.0 + gap - 0.5, 10, LEASE_SECONDS) == []
    (lease,) = frontier.lease(12.0 + gap, 10, LEASE_SECONDS)
    assert lease.kind is LeaseKind.PAGE
    frontier.give_host(HOST, "killed", 100.0)  # lapsed: given back too late, nothing moves
    assert frontier.lease(12.0 + gap, 10, LEASE_SECONDS) == []  # its one token is the lease's
    assert frontier.in_flight() == 1
