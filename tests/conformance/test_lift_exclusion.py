"""A crawl reconfigured to allow a network lifts what the address guard refused (Frontier
lift_exclusion, crawl/settings.py lifted_exclusions): every URL excluded for the reason is queued
again as a new visit, and every robots.txt answer that failed with it expires, so its host asks
robots.txt again before any page. Other exclusions stay. Memory, SQLite, one Redis and a
3-master Redis Cluster."""

from __future__ import annotations

from crawlspace.errors import BlockedAddressError
from crawlspace.lifecycle import BLOCKED_ADDRESS, ROBOTS_EXCLUSIONS
from crawlspace.records import Completion, Lease, LeaseKind, RobotsRecord
from crawlspace.robots.policy import DISALLOW_ALL
from crawlspace.store.base import Frontier, FrontierLimits
from tests.conformance.conftest import LEASE_SECONDS, FrontierFactory, cand, fetched, robots_ok

GUARDED = "http://guarded.example"  # its robots.txt fetch was refused by the guard
OPEN = "http://open.example"  # robots.txt fine; one page's fetch refused by the guard
DOWN = "http://down.example"  # robots.txt unreachable: not the guard's, stays as it is
DAY = 86400.0


def refused(lease: Lease, error: str, now: float) -> RobotsRecord:
    """The answer a robots.txt fetch that failed for good leaves (crawl/robots_visit.py)."""
    return RobotsRecord(lease.host_key, None, DISALLOW_ALL, b"", now, now + DAY, 1, error)


def crawled(make_frontier: FrontierFactory) -> tuple[Frontier, dict[str, int]]:
    frontier = make_frontier(FrontierLimits())
    pages = {GUARDED: ["/1", "/2"], OPEN: ["/x", "/y", "/z"], DOWN: ["/d"]}
    frontier.add([cand(host, path) for host, paths in pages.items() for path in paths], 0.0)
    answers = {GUARDED: BLOCKED_ADDRESS, OPEN: None, DOWN: "robots_unavailable"}
    for lease in frontier.lease(0.0, 10, LEASE_SECONDS):
        assert lease.kind is LeaseKind.ROBOTS
        error = answers[lease.host_key]
        record = robots_ok(lease, 0.0) if error is None else refused(lease, error, 0.0)
        assert frontier.complete_robots(lease, record, 0.0)
    endings = {
        f"{GUARDED}/1": Completion(state="excluded", reason=BLOCKED_ADDRESS),
        f"{GUARDED}/2": Completion(state="excluded", reason=BLOCKED_ADDRESS),
        f"{OPEN}/x": Completion(state="excluded", reason=BLOCKED_ADDRESS),
        f"{OPEN}/y": Completion(state="excluded", reason="robots"),
        f"{OPEN}/z": fetched(1.0),
        f"{DOWN}/d": Completion(state="excluded", reason="robots_unavailable"),
    }
    ids: dict[str, int] = {}
    while leases := frontier.lease(1.0, 10, LEASE_SECONDS):
        for lease in leases:
            ids[lease.url] = lease.url_id
            assert frontier.complete(lease, endings[lease.url], 1.0)
    assert set(ids) == set(endings)
    return frontier, ids


def test_the_guard_reason_is_one_the_next_robots_txt_reevaluates() -> None:
    assert BlockedAddressError.reason == BLOCKED_ADDRESS
    assert BLOCKED_ADDRESS in ROBOTS_EXCLUSIONS


def test_lifting_requeues_the_guards_refusals_and_expires_its_robots_answers(
    make_frontier: FrontierFactory,
) -> None:
    frontier, ids = crawled(make_frontier)
    assert frontier.lift_exclusion(BLOCKED_ADDRESS, 10.0) == 3
    guarded = frontier.robots(GUARDED)
    assert guarded is not None
    assert guarded.expires_at == 10.0
    down = frontier.robots(DOWN)
    assert down is not None
    assert down.expires_at == DAY  # another failure: as it was
    first = {lease.host_key: lease for lease in frontier.lease(10.0, 10, LEASE_SECONDS)}
    assert set(first) == {GUARDED, OPEN}
    # The guarded host asks robots.txt again before any page; the open one goes on.
    assert first[GUARDED].kind is LeaseKind.ROBOTS
    page = first[OPEN]
    assert (page.url, page.version, page.attempt) == (f"{OPEN}/x", 2, 1)
    assert frontier.complete_robots(first[GUARDED], robots_ok(first[GUARDED], 10.0), 10.0)
    assert frontier.complete(page, fetched(10.0), 10.0)
    pages = set()
    while leases := frontier.lease(10.0, 10, LEASE_SECONDS):
        for lease in leases:
            assert lease.kind is LeaseKind.PAGE
            assert lease.version == 2
            pages.add(lease.url)
            assert frontier.complete(lease, fetched(10.0), 10.0)
    assert pages == {f"{GUARDED}/1", f"{GUARDED}/2"}
    # What robots.txt excluded stays for its next answer; the unreachable host stays as it is.
    assert frontier.robots_excluded(OPEN, 10) == [(ids[f"{OPEN}/y"], f"{OPEN}/y")]
    assert frontier.robots_excluded(DOWN, 10) == [(ids[f"{DOWN}/d"], f"{DOWN}/d")]
    assert frontier.lift_exclusion(BLOCKED_ADDRESS, 11.0) == 0
