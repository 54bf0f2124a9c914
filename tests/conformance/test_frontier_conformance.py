"""One suite, every Frontier: the memory MemoryFrontier, SQLite, one Redis and a 3-master cluster.

Each test drives the frontier on a virtual clock and checks the invariants the crawl relies on:
robots.txt first, one token per host, no lease before the host's next-allowed time, idempotent
completion, leases that expire back into the queue, budgets, and a defined end.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from itertools import pairwise

from crawlspace.clock import VirtualClock
from crawlspace.frontier.politeness import PolitenessPolicy
from crawlspace.records import Completion, Lease, LeaseKind, RevisitPlan, UrlCandidate
from crawlspace.store.base import Frontier, FrontierLimits
from tests.conformance.conftest import (
    LEASE_SECONDS,
    FrontierFactory,
    cand,
    fetched,
    robots_ok,
)


def test_robots_lease_comes_first_and_blocks_the_host(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand("http://a", "/1"), cand("http://a", "/2")], 0.0)
    (first,) = frontier.lease(0.0, 10, LEASE_SECONDS)
    assert first.kind is LeaseKind.ROBOTS
    assert first.url == "http://a/robots.txt"
    assert frontier.lease(0.0, 10, LEASE_SECONDS) == []
    assert frontier.complete_robots(first, robots_ok(first, 0.0), 1.0)
    assert frontier.lease(0.5, 10, LEASE_SECONDS) == []
    (page,) = frontier.lease(1.0, 10, LEASE_SECONDS)
    assert page.kind is LeaseKind.PAGE
    assert page.url == "http://a/1"
    assert frontier.robots("http://a") is not None


def test_stale_and_duplicate_completions_change_nothing(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand("http://a", "/1"), cand("http://a", "/2")], 0.0)
    (robots,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    assert not frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    (page,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    assert frontier.complete(page, fetched(5.0), 1.0)
    assert not frontier.complete(page, fetched(0.0), 1.0)
    assert not frontier.release(page, 1.0)
    assert frontier.in_flight() == 0
    assert frontier.next_ready_at() == 5.0


def test_expired_lease_returns_url_and_token(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand("http://a", "/1")], 0.0)
    (robots,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    (page,) = frontier.lease(0.0, 1, 10.0)
    assert frontier.expire_leases(5.0) == 0
    assert frontier.expire_leases(10.0) == 1
    assert frontier.in_flight() == 0
    (again,) = frontier.lease(10.0, 1, 10.0)
    assert again.url == page.url
    assert again.attempt == page.attempt + 1
    assert not frontier.complete(page, fetched(11.0), 11.0), "the expired lease is fenced off"
    assert frontier.complete(again, fetched(11.0), 11.0)


def test_release_gives_back_without_moving_the_clock(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand("http://a", "/1")], 0.0)
    (robots,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    frontier.complete_robots(robots, robots_ok(robots, 0.0), 2.0)
    (page,) = frontier.lease(2.0, 1, LEASE_SECONDS)
    assert frontier.release(page, 3.0)
    assert frontier.next_ready_at() == 2.0
    (again,) = frontier.lease(3.0, 1, LEASE_SECONDS)
    assert again.attempt == page.attempt


def test_seen_urls_are_not_enqueued_twice_and_budget_counts(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits(max_pages_per_host=3))
    first = frontier.add([cand("http://a", f"/{i}") for i in range(5)], 0.0)
    assert first.added == 3
    assert first.rejected == {"budget_host": 2}
    again = frontier.add([cand("http://a", "/0"), cand("http://a", "/1")], 0.0)
    assert again.added == 0
    assert again.already_seen == 2


def test_a_url_linked_in_another_parameter_order_is_seen(make_frontier: FrontierFactory) -> None:
    """The seen key ignores query parameter order (urls.py seen_key); the request keeps the
    order the URL was first linked in. Seeds, one batch, and a page's links alike."""
    frontier = make_frontier(FrontierLimits())
    first = frontier.add(
        [
            cand("http://a", "/p?z=1&a=2"),
            cand("http://a", "/p?a=2&z=1"),
            cand("http://a", "/q?b&a"),
        ],
        0.0,
    )
    assert (first.added, first.already_seen) == (2, 1)
    again = frontier.add([cand("http://a", "/q?a&b"), cand("http://a", "/p?z=1&a=2")], 0.0)
    assert (again.added, again.already_seen) == (0, 2)
    (robots,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    (page,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    assert page.url == "http://a/p?z=1&a=2"
    links = [cand("http://a", "/q?a&b", 1), cand("http://a", "/r?y=1&x=1&x=0", 1)]
    links += [cand("http://a", "/r?x=1&y=1&x=0", 1), cand("http://a", "/r?x=0&y=1&x=1", 1)]
    assert frontier.complete(page, dataclasses.replace(fetched(0.0), discovered=links), 0.0)
    urls = []
    for _ in range(3):
        lease = frontier.lease(10.0, 1, LEASE_SECONDS)
        urls += [one.url for one in lease]
        for one in lease:
            frontier.complete(one, fetched(0.0), 10.0)
    # A repeated name keeps its values' order: x=1 before x=0 is another key than x=0, x=1.
    assert urls == ["http://a/q?b&a", "http://a/r?y=1&x=1&x=0", "http://a/r?x=0&y=1&x=1"]


def test_parameter_order_kept_apart_when_asked(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits(ignore_query_order=False))
    added = frontier.add([cand("http://a", "/p?z=1&a=2"), cand("http://a", "/p?a=2&z=1")], 0.0)
    assert (added.added, added.already_seen) == (2, 0)


def test_a_lease_carries_when_its_url_was_last_linked(make_frontier: FrontierFactory) -> None:
    """FrontierLimits.link_times (frontier/retirement.py): admitted at 1.0, linked again by a
    page at 5.0; its lease says 5.0."""
    frontier = make_frontier(FrontierLimits(link_times=True))
    frontier.add([cand("http://a", "/1"), cand("http://a", "/2")], 1.0)
    (robots,) = frontier.lease(1.0, 1, LEASE_SECONDS)
    frontier.complete_robots(robots, robots_ok(robots, 1.0), 1.0)
    (first,) = frontier.lease(1.0, 1, LEASE_SECONDS)
    assert (first.url, first.linked_at) == ("http://a/1", 1.0)
    links = [cand("http://a", "/2", 1)]
    assert frontier.complete(first, dataclasses.replace(fetched(0.0), discovered=links), 5.0)
    (second,) = frontier.lease(6.0, 1, LEASE_SECONDS)
    assert (second.url, second.linked_at) == ("http://a/2", 5.0)


def test_a_lease_names_the_page_that_led_to_its_url(make_frontier: FrontierFactory) -> None:
    """records.py Lease.via_id: a seed has none; a link, on its host or another, names the
    page whose completion admitted it first, not a later page that links it too."""
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand("http://a", "/1")], 1.0)
    (robots,) = frontier.lease(1.0, 1, LEASE_SECONDS)
    frontier.complete_robots(robots, robots_ok(robots, 1.0), 1.0)
    (seed,) = frontier.lease(1.0, 1, LEASE_SECONDS)
    assert seed.via_id is None
    links = [cand("http://a", "/2", 1), cand("http://b", "/x", 1)]
    assert frontier.complete(seed, dataclasses.replace(fetched(0.0), discovered=links), 2.0)
    leases = {lease.url: lease for lease in frontier.lease(3.0, 5, LEASE_SECONDS)}
    second, robots_b = leases["http://a/2"], leases["http://b/robots.txt"]
    assert second.via_id == seed.url_id
    again = [cand("http://b", "/x", 2)]
    assert frontier.complete(second, dataclasses.replace(fetched(0.0), discovered=again), 4.0)
    frontier.complete_robots(robots_b, robots_ok(robots_b, 5.0), 5.0)
    (other,) = frontier.lease(6.0, 5, LEASE_SECONDS)
    assert (other.url, other.via_id) == ("http://b/x", seed.url_id)
    assert frontier.url_of(seed.url_id) == "http://a/1"  # what an error names
    assert frontier.url_of(other.url_id) == "http://b/x"
    assert frontier.url_of(other.url_id + 10_000 * 64) is None


def test_no_link_time_is_kept_unless_asked(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand("http://b", "/1")], 1.0)
    (robots,) = frontier.lease(1.0, 1, LEASE_SECONDS)
    frontier.complete_robots(robots, robots_ok(robots, 1.0), 1.0)
    (page,) = frontier.lease(1.0, 1, LEASE_SECONDS)
    assert page.linked_at is None


def test_priority_orders_urls_within_a_host(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand("http://a", "/deep", priority=5), cand("http://a", "/top", priority=0)], 0.0)
    (robots,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    (page,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    assert page.url == "http://a/top"


def test_a_lease_carries_its_urls_priority(make_frontier: FrontierFactory) -> None:
    """Lease.priority: what the URL was queued at (its value, frontier/revisit.py)."""
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand("http://a", "/1", depth=2, priority=23)], 0.0)
    (robots,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    assert robots.priority in (None, 0)
    frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    (page,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    assert page.priority == 23


def test_retry_requeues_and_the_crawl_ends(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand("http://a", "/1")], 0.0)
    (robots,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    (page,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    frontier.complete(page, Completion(state="queued", reason="timeout", next_allowed_at=1.0), 0.5)
    (retry,) = frontier.lease(1.0, 1, LEASE_SECONDS)
    assert retry.attempt == 2
    frontier.complete(retry, Completion(state="failed", reason="timeout", next_allowed_at=2.0), 1.5)
    assert frontier.next_ready_at() is None
    assert frontier.in_flight() == 0


def test_a_retry_its_host_failed_gives_its_attempt_back(make_frontier: FrontierFactory) -> None:
    """frontier/outage.py: a request its host did not answer, during the host's outage, is not
    the URL's failure: the retry keeps the attempt count it had before the lease."""
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand("http://a", "/1")], 0.0)
    (robots,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    (page,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    assert page.attempt == 1
    host_failed = Completion(
        state="queued", reason="connect_error", charged=False, next_allowed_at=1.0
    )
    for at in (1.0, 2.0, 3.0, 4.0):
        assert frontier.complete(page, host_failed, at - 0.5)
        (page,) = frontier.lease(at, 1, LEASE_SECONDS)
        assert page.attempt == 1, "never charged for its host"
        host_failed = Completion(
            state="queued", reason="connect_error", charged=False, next_allowed_at=at + 1.0
        )
    own = Completion(state="queued", reason="connect_error", next_allowed_at=6.0)
    assert frontier.complete(page, own, 5.0)
    (page,) = frontier.lease(6.0, 1, LEASE_SECONDS)
    assert page.attempt == 2, "its own failure counts"


def test_a_sitemap_lastmod_after_the_last_visit_makes_its_revisit_due_now(
    make_frontier: FrontierFactory,
) -> None:
    """UrlCandidate.stale_before (frontier/revisit.py): a known URL listed again with a lastmod
    later than its last visit is due at once; one listed with an older lastmod keeps its plan."""
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand("http://a", "/1")], 0.0)
    (robots,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    frontier.complete_robots(robots, robots_ok(robots, 0.0), 1.0)
    (page,) = frontier.lease(1.0, 1, LEASE_SECONDS)
    plan = RevisitPlan(interval=1000.0, next_fetch_at=1010.0, changed=True, content_hash="h")
    visit = Completion(state="fetched", next_allowed_at=2.0, revisit=plan)
    assert frontier.complete(page, visit, 10.0)
    assert frontier.next_due_at() == 1010.0
    listed = UrlCandidate("http://a/1", "http://a", 0, source="sitemap_entry", stale_before=5.0)
    frontier.add([listed], 50.0)  # changed before the visit: nothing to fetch again
    assert frontier.promote_due(60.0) == 0
    assert frontier.next_due_at() == 1010.0
    frontier.add([listed._replace(stale_before=40.0)], 60.0)
    assert frontier.next_due_at() == 60.0
    assert frontier.promote_due(60.0) == 1
    (again,) = frontier.lease(60.0, 1, LEASE_SECONDS)
    assert (again.url, again.version) == ("http://a/1", 2)


def drive(
    frontier: Frontier,
    durations: dict[str, float],
    policy: PolitenessPolicy,
    until: float,
    limit: int = 10,
) -> dict[str, list[tuple[float, float]]]:
    """Lease, 'fetch' for the host's duration on a virtual clock, complete; log (start, end)."""
    clock = VirtualClock()
    running: list[tuple[float, Lease]] = []
    log: dict[str, list[tuple[float, float]]] = defaultdict(list)
    while clock.now() < until:
        now = clock.now()
        for lease in frontier.lease(now, limit - len(running), LEASE_SECONDS):
            running.append((now + durations[lease.host_key], lease))
        events = [end for end, _ in running]
        ready = frontier.next_ready_at()
        if ready is not None and ready > now and len(running) < limit:
            events.append(ready)
        if not events:
            break
        clock.set(max(min(events), now))
        for end, lease in sorted(
            (item for item in running if item[0] <= clock.now()), key=lambda item: item[0]
        ):
            running.remove((end, lease))
            start = end - durations[lease.host_key]
            log[lease.host_key].append((start, end))
            next_allowed = policy.next_allowed_at(end, end - start)
            if lease.kind is LeaseKind.ROBOTS:
                frontier.complete_robots(lease, robots_ok(lease, end), next_allowed)
            else:
                frontier.complete(lease, fetched(next_allowed), end)
    return log


def assert_allowance_held(
    log: dict[str, list[tuple[float, float]]], durations: dict[str, float], policy: PolitenessPolicy
) -> None:
    for host, fetches in log.items():
        for (_, e1), (s2, _) in pairwise(fetches):
            assert s2 >= e1 + policy.gap(durations[host]) - 1e-9, host


def test_three_hosts_get_their_rates(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    durations = {"http://fast": 0.01, "http://mid": 0.1, "http://slow": 0.5}
    for host in durations:
        frontier.add([cand(host, f"/{i}") for i in range(10_000)], 0.0)
    policy = PolitenessPolicy(min_delay=0.05, delay_factor=10.0)
    log = drive(frontier, durations, policy, until=60.0)
    assert_allowance_held(log, durations, policy)
    for host, duration in durations.items():
        period = duration + policy.gap(duration)
        assert abs(len(log[host]) - 60.0 / period) <= 2, host


def test_hot_host_does_not_starve_small_hosts(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    hot = "http://hot"
    frontier.add([cand(hot, f"/{i}") for i in range(100_000)], 0.0)
    small = [f"http://small{i}" for i in range(1000)]
    for host in small:
        frontier.add([cand(host, f"/{i}") for i in range(5)], 0.0)
    durations = {hot: 0.001, **dict.fromkeys(small, 0.001)}
    policy = PolitenessPolicy(min_delay=0.05, delay_factor=10.0)
    log = drive(frontier, durations, policy, until=3.0, limit=50)
    assert_allowance_held(log, durations, policy)
    # 6 requests per small host (robots + 5 pages) need ~6 x 0.051 s; all are done long before
    # the hot host (one request per 0.051 s) gets anywhere near its 100,000 URLs.
    assert all(len(log[h]) == 6 for h in small)
    assert len(log[hot]) <= 3.0 / 0.051 + 1


def test_an_expired_lease_holds_its_host_for_the_lost_lease_gap(
    make_frontier: FrontierFactory,
) -> None:
    frontier = make_frontier(FrontierLimits(lost_lease_gap=3.0))
    frontier.add([cand("http://a", "/1"), cand("http://a", "/2")], 0.0)
    (robots,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    frontier.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    frontier.lease(0.0, 1, 10.0)
    assert frontier.expire_leases(10.0) == 1
    assert frontier.lease(12.9, 1, 10.0) == []
    assert len(frontier.lease(13.0, 1, 10.0)) == 1
