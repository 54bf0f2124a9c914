"""Cross-host priority on every engine: among hosts whose politeness gap has passed, the lease
goes to the best rank (bands.py: the front band of the host's best queued URL,
plus aging), on the memory MemoryFrontier, SQLite, one Redis and a 3-master Redis Cluster.

Each host first has a page fetched whose completion sets its next-allowed time, so the scenarios
choose every host's ready time and best queued priority exactly. Before the front bands, every
engine leased the longest-waiting host first: each scenario below orders hosts differently.
"""

from __future__ import annotations

from crawlspace.bands import FrontQueues
from crawlspace.records import LeaseKind
from crawlspace.store.base import Frontier, FrontierLimits
from tests.conformance.conftest import LEASE_SECONDS, FrontierFactory, cand, fetched, robots_ok

AGING = 1.0  # seconds of waiting per band: small, so the scenarios can show aging


def prepare(make_frontier: FrontierFactory, hosts: dict[str, tuple[int, float]]) -> Frontier:
    """A frontier where each host (name -> (priority of its queued URL, ready time)) is ready at
    its time with one URL of that priority queued."""
    frontier = make_frontier(FrontierLimits(front=FrontQueues(aging=AGING)))
    frontier.add([cand(f"http://{h}", "/first") for h in hosts], 0.0)
    for lease in frontier.lease(0.0, 100, LEASE_SECONDS):
        assert lease.kind is LeaseKind.ROBOTS
        assert frontier.complete_robots(lease, robots_ok(lease, 0.0), 0.0)
    frontier.add([cand(f"http://{h}", "/next", 1, prio) for h, (prio, _) in hosts.items()], 0.0)
    firsts = frontier.lease(0.0, 100, LEASE_SECONDS)
    assert sorted(lease.url for lease in firsts) == sorted(f"http://{h}/first" for h in hosts)
    for lease in firsts:
        ready_at = hosts[lease.host_key.removeprefix("http://")][1]
        assert frontier.complete(lease, fetched(ready_at), 0.0)
    return frontier


def one_by_one(frontier: Frontier, now: float) -> list[str]:
    """The hosts leased at ``now``, one lease per call, in order."""
    order = []
    while leases := frontier.lease(now, 1, LEASE_SECONDS):
        order.append(leases[0].host_key.removeprefix("http://"))
    return order


def test_the_host_with_the_best_page_goes_first(make_frontier: FrontierFactory) -> None:
    # Ranks (ready time + band * aging): a 10 + 9 = 19, b 12 + 0 = 12, c 11 + 4 = 15.
    frontier = prepare(make_frontier, {"a": (95, 10.0), "b": (5, 12.0), "c": (45, 11.0)})
    assert one_by_one(frontier, 20.0) == ["b", "c", "a"]


def test_a_host_that_waited_long_enough_goes_first(make_frontier: FrontierFactory) -> None:
    # Aging: deep ranks 0 + 9 = 9, shallow 10 + 0 = 10; the deep host is not starved.
    frontier = prepare(make_frontier, {"deep": (95, 0.0), "shallow": (5, 10.0)})
    assert one_by_one(frontier, 20.0) == ["deep", "shallow"]


def test_a_host_not_yet_ready_waits_whatever_its_band(make_frontier: FrontierFactory) -> None:
    frontier = prepare(make_frontier, {"best": (0, 30.0), "worst": (95, 10.0)})
    assert one_by_one(frontier, 20.0) == ["worst"]
    assert frontier.next_ready_at() == 30.0
    assert one_by_one(frontier, 30.0) == ["best"]


def test_a_better_url_moves_its_host_forward(make_frontier: FrontierFactory) -> None:
    # Ranks: h 10 + 9 = 19, i 10.5 + 4 = 14.5; then h's new URL makes it 10 + 0.
    frontier = prepare(make_frontier, {"h": (95, 10.0), "i": (45, 10.5)})
    frontier.add([cand("http://h", "/better", 1, 5)], 1.0)
    assert one_by_one(frontier, 20.0) == ["h", "i"]


def test_the_next_url_sets_the_band_once_the_best_is_leased(
    make_frontier: FrontierFactory,
) -> None:
    # j's best URL (band 0) is leased; its next one is band 9, so k (band 4) now ranks first.
    frontier = prepare(make_frontier, {"j": (5, 10.0), "k": (45, 10.0)})
    frontier.add([cand("http://j", "/deep", 2, 95)], 1.0)
    (best,) = frontier.lease(20.0, 1, LEASE_SECONDS)
    assert best.url == "http://j/next"
    assert frontier.complete(best, fetched(10.0), 20.0)  # j is ready again at once
    assert one_by_one(frontier, 20.0) == ["k", "j"]


def test_a_lease_of_many_takes_the_best_ranked_hosts(make_frontier: FrontierFactory) -> None:
    # Spread over buckets on Redis: the engine must still find the best three of all hosts.
    hosts = {f"m{i}": (10 * (9 - i), 10.0 + 0.1 * i) for i in range(8)}
    frontier = prepare(make_frontier, hosts)
    leases = frontier.lease(20.0, 3, LEASE_SECONDS)
    assert sorted(lease.host_key for lease in leases) == ["http://m5", "http://m6", "http://m7"]
