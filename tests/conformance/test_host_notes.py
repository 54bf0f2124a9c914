"""Host notes and what a completion queued, the two primitives trap detection by yield
(frontier/trap_yield.py, crawl/host_rules.py) stands on, the same on memory, SQLite, one Redis and a
3-master Redis Cluster: notes are kept per host by name and replaced; a completion reports the
URLs of its own host it queued as new, not those already seen nor those of other hosts."""

from __future__ import annotations

import dataclasses

from crawlspace.records import Completion, LeaseKind
from crawlspace.store.base import FrontierLimits
from tests.conformance.conftest import LEASE_SECONDS, FrontierFactory, cand, fetched, robots_ok

HOST = "http://a.example"
OTHER = "http://b.example"


def test_notes_are_kept_per_host_and_replaced(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    names = ["yield:/cal/", "yield:/shop?", "learned"]
    assert frontier.host_notes(HOST, names) == {}
    frontier.put_host_note(HOST, "yield:/cal/", "1 2 3")
    frontier.put_host_note(HOST, "yield:/shop?", "x")
    frontier.put_host_note(OTHER, "yield:/cal/", "other")
    frontier.put_host_note(HOST, "yield:/cal/", "4 5\n6")
    assert frontier.host_notes(HOST, names) == {"yield:/cal/": "4 5\n6", "yield:/shop?": "x"}
    assert frontier.host_notes(HOST, ["yield:/shop?"]) == {"yield:/shop?": "x"}
    assert frontier.host_notes(HOST, []) == {}
    assert frontier.host_notes(OTHER, names) == {"yield:/cal/": "other"}


def test_a_completion_reports_what_it_queued_on_its_host(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand(HOST, "/"), cand(HOST, "/known")], 0.0)
    (robots,) = frontier.lease(0.0, 10, LEASE_SECONDS)
    assert robots.kind is LeaseKind.ROBOTS
    assert frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    (lease,) = frontier.lease(1.0, 1, LEASE_SECONDS)
    done: Completion = fetched(1.0)
    links = [cand(HOST, "/known"), cand(HOST, "/new"), cand(OTHER, "/new")]
    done = dataclasses.replace(done, discovered=links)
    outcome = frontier.complete(lease, done, 1.0)
    assert outcome is not None
    assert list(outcome.admitted) == [HOST + "/new"]


def test_notes_are_written_with_the_completion(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand(HOST, "/a"), cand(HOST, "/b")], 0.0)
    (robots,) = frontier.lease(0.0, 10, LEASE_SECONDS)
    assert frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    (lease,) = frontier.lease(1.0, 1, LEASE_SECONDS)
    done = fetched(1.0)
    done = dataclasses.replace(done, notes={"learned": "sort", "dust:order": "1 0"})
    assert frontier.complete(lease, done, 1.0)
    # The host's next lease finds them.
    assert frontier.host_notes(HOST, ["learned", "dust:order"]) == done.notes


def test_a_stale_completion_writes_no_notes(make_frontier: FrontierFactory) -> None:
    """A lease that expired and went to another visit no longer speaks for its host: its
    completion is refused, and what it learned with it."""
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand(HOST, "/a")], 0.0)
    (robots,) = frontier.lease(0.0, 10, LEASE_SECONDS)
    assert frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    (lost,) = frontier.lease(1.0, 1, LEASE_SECONDS)
    assert frontier.expire_leases(1.0 + LEASE_SECONDS) == 1
    (current,) = frontier.lease(2.0 + LEASE_SECONDS, 1, LEASE_SECONDS)
    assert current.url == lost.url
    late = fetched(3.0 + LEASE_SECONDS)
    late = dataclasses.replace(late, notes={"learned": "from the lost lease"})
    assert not frontier.complete(lost, late, 3.0 + LEASE_SECONDS)
    assert frontier.host_notes(HOST, ["learned"]) == {}
    done = fetched(4.0 + LEASE_SECONDS)
    done = dataclasses.replace(done, notes={"learned": "from the current one"})
    assert frontier.complete(current, done, 4.0 + LEASE_SECONDS)
    assert frontier.host_notes(HOST, ["learned"]) == {"learned": "from the current one"}
