"""A refetched robots.txt re-evaluates what the last one excluded (RFC 9309 §2.4: rules change):
every engine lists a host's URLs excluded for a robots reason, and queues again those the new
rules allow, each as a new visit. Memory, SQLite, one Redis and a 3-master Redis Cluster."""

from __future__ import annotations

from crawlspace.records import Completion, LeaseKind
from crawlspace.store.base import Frontier, FrontierLimits
from tests.conformance.conftest import LEASE_SECONDS, FrontierFactory, cand, fetched, robots_ok

HOST = "http://a.example"


def crawled(make_frontier: FrontierFactory) -> tuple[Frontier, dict[str, int]]:
    """A host whose /a and /d were excluded by robots.txt, /b by unreachable robots.txt,
    /c by scope, and /e fetched; returns the frontier and each path's url id."""
    frontier = make_frontier(FrontierLimits())
    paths = ["/a", "/b", "/c", "/d", "/e"]
    frontier.add([cand(HOST, p) for p in paths], 0.0)
    (robots,) = frontier.lease(0.0, 10, LEASE_SECONDS)
    assert robots.kind is LeaseKind.ROBOTS
    assert frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    endings = {
        "/a": Completion(state="excluded", reason="robots"),
        "/b": Completion(state="excluded", reason="robots_unavailable"),
        "/c": Completion(state="excluded", reason="scope"),
        "/d": Completion(state="excluded", reason="robots"),
        "/e": fetched(0.0),
    }
    ids = {}
    for _ in paths:
        (lease,) = frontier.lease(1.0, 1, LEASE_SECONDS)
        path = lease.url.removeprefix(HOST)
        ids[path] = lease.url_id
        assert frontier.complete(lease, endings[path], 1.0)
    return frontier, ids


def test_the_robots_exclusions_of_a_host_are_listed(make_frontier: FrontierFactory) -> None:
    frontier, ids = crawled(make_frontier)
    listed = frontier.robots_excluded(HOST, 100)
    assert sorted(listed) == sorted((ids[p], HOST + p) for p in ("/a", "/b", "/d"))
    assert len(frontier.robots_excluded(HOST, 2)) == 2
    assert frontier.robots_excluded("http://unknown.example", 100) == []


def test_allowed_urls_are_queued_again_as_new_visits(make_frontier: FrontierFactory) -> None:
    frontier, ids = crawled(make_frontier)
    # /c (scope) and /e (fetched) are not robots exclusions: asking for them changes nothing.
    assert frontier.requeue_excluded(HOST, [ids["/a"], ids["/b"], ids["/c"], ids["/e"]], 5.0) == 2
    leased = {lease.url: lease for lease in frontier.lease(5.0, 10, LEASE_SECONDS)}
    assert set(leased) == {HOST + "/a"}  # one at a time per host: the next follows
    lease = leased[HOST + "/a"]
    assert (lease.version, lease.attempt) == (2, 1)
    assert frontier.complete(lease, fetched(5.0), 5.0)
    (second,) = frontier.lease(5.0, 10, LEASE_SECONDS)
    assert (second.url, second.version) == (HOST + "/b", 2)
    assert frontier.complete(second, fetched(5.0), 5.0)
    assert frontier.lease(5.0, 10, LEASE_SECONDS) == []  # /d stays excluded
    assert frontier.robots_excluded(HOST, 100) == [(ids["/d"], HOST + "/d")]
    assert frontier.requeue_excluded(HOST, [ids["/a"]], 6.0) == 0  # no longer excluded
