"""The pure frontier core on a virtual clock: politeness, fairness, leases, budgets, invariants."""

from __future__ import annotations

import heapq
import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from crawlspace.clock import VirtualClock
from crawlspace.frontier.politeness import PolitenessPolicy
from crawlspace.lifecycle import TERMINAL_STATES, IllegalTransition
from crawlspace.records import Completion, Lease, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.base import Frontier, FrontierLimits
from crawlspace.store.memory import MemoryFrontier

LEASE_S = 300.0


def cand(host: str, path: str, priority: int = 0, depth: int = 0) -> UrlCandidate:
    return UrlCandidate(url=f"{host}/{path}", host_key=host, depth=depth, priority=priority)


def robots_record(host: str, now: float, ttl: float = 86_400.0) -> RobotsRecord:
    return RobotsRecord(
        host_key=host,
        status=200,
        outcome="allow_all",
        body=b"",
        fetched_at=now,
        expires_at=now + ttl,
    )


def open_host(
    sched: MemoryFrontier, host: str, now: float, next_allowed_at: float | None = None
) -> None:
    """Lease and complete the host's robots.txt so its pages become leasable."""
    (lease,) = [x for x in sched.lease(now, 1, LEASE_S) if x.host_key == host]
    assert lease.kind is LeaseKind.ROBOTS
    at = now if next_allowed_at is None else next_allowed_at
    assert sched.complete_robots(lease, robots_record(host, now), at)


def fetched(
    at: float | None = None,
    *,
    reason: str | None = None,
    discovered: list[UrlCandidate] | None = None,
) -> Completion:
    return Completion(
        state="fetched", reason=reason, next_allowed_at=at, discovered=discovered or []
    )


@dataclass(frozen=True)
class Fetch:
    host: str
    url: str
    kind: LeaseKind
    start: float
    end: float


def drive(
    sched: MemoryFrontier,
    clock: VirtualClock,
    duration: Callable[[str], float],
    policy: PolitenessPolicy,
    *,
    concurrency: int,
    until: float = math.inf,
    stop: Callable[[], bool] = lambda: False,
) -> list[Fetch]:
    """A crawl driver on virtual time: lease, 'fetch' for the host's duration, complete."""
    log: list[Fetch] = []
    pending: list[tuple[float, int, Lease]] = []
    tie = itertools.count()
    while True:
        now = clock.now()
        while pending and pending[0][0] <= now:
            end, _, lease = heapq.heappop(pending)
            nxt = policy.next_allowed_at(end, duration(lease.host_key))
            if lease.kind is LeaseKind.ROBOTS:
                assert sched.complete_robots(lease, robots_record(lease.host_key, end), nxt)
            else:
                assert sched.complete(lease, fetched(nxt), now)
        if stop():
            return log
        for lease in sched.lease(now, concurrency - len(pending), LEASE_S):
            end = now + duration(lease.host_key)
            log.append(Fetch(lease.host_key, lease.url, lease.kind, now, end))
            heapq.heappush(pending, (end, next(tie), lease))
        events = [pending[0][0]] if pending else []
        ready = sched.next_ready_at()
        if len(pending) < concurrency and ready is not None:
            assert ready > now, "lease() left a ready host behind with capacity to spare"
            events.append(ready)
        if not events or min(events) > until:
            return log
        clock.set(min(events))


def assert_polite(
    log: Iterable[Fetch], duration: Callable[[str], float], policy: PolitenessPolicy
) -> None:
    by_host: dict[str, list[Fetch]] = defaultdict(list)
    for f in log:
        by_host[f.host].append(f)
    for host, fetches in by_host.items():
        fetches.sort(key=lambda f: f.start)
        assert fetches[0].kind is LeaseKind.ROBOTS, f"{host}: first request was not robots.txt"
        for prev, nxt in itertools.pairwise(fetches):
            assert nxt.start >= prev.end, f"{host}: overlapping requests {prev} {nxt}"
            gap = policy.gap(duration(host))
            assert nxt.start >= prev.end + gap, f"{host}: gap {nxt.start - prev.end} < {gap}"


def test_scheduler_satisfies_the_frontier_protocol() -> None:
    frontier: Frontier = MemoryFrontier()
    assert frontier.in_flight() == 0
    assert frontier.next_ready_at() is None


def test_robots_lease_comes_first_on_every_host() -> None:
    sched = MemoryFrontier(FrontierLimits(max_in_flight_per_host=2))
    hosts = [f"http://h{i}:80" for i in range(3)]
    sched.add([cand(h, f"p{j}") for h in hosts for j in range(3)], now=0.0)
    leases = sched.lease(0.0, 10, LEASE_S)
    assert [x.kind for x in leases] == [LeaseKind.ROBOTS] * 3
    assert sorted(x.url for x in leases) == [f"{h}/robots.txt" for h in hosts]
    assert {(x.url_id, x.version, x.attempt, x.depth) for x in leases} == {(0, 0, 1, 0)}
    assert sched.in_flight() == 3
    # No page lease while a host's robots.txt is outstanding, even with a spare token.
    assert sched.lease(0.0, 10, LEASE_S) == []
    assert sched.next_ready_at() is None
    assert sched.complete_robots(leases[0], robots_record(hosts[0], 1.0), 2.0)
    assert sched.robots(hosts[0]) == robots_record(hosts[0], 1.0)
    assert sched.robots(hosts[1]) is None
    assert sched.lease(1.5, 10, LEASE_S) == []  # the host clock moved to 2.0
    pages = sched.lease(2.0, 10, LEASE_S)
    assert [(x.kind, x.host_key) for x in pages] == [(LeaseKind.PAGE, hosts[0])] * 2
    assert not sched.complete_robots(leases[0], robots_record(hosts[0], 1.0), 2.0)


def test_custom_robots_url_and_stale_record_is_refetched() -> None:
    sched = MemoryFrontier(robots_url=lambda host: f"{host}/custom-robots")
    sched.add([cand("http://a", "1"), cand("http://a", "2")], now=0.0)
    (robots,) = sched.lease(0.0, 5, LEASE_S)
    assert robots.url == "http://a/custom-robots"
    assert sched.complete_robots(robots, robots_record("http://a", 0.0, ttl=10.0), 0.0)
    (page,) = sched.lease(1.0, 5, LEASE_S)
    assert page.kind is LeaseKind.PAGE
    assert sched.complete(page, fetched(2.0), 1.0)
    (again,) = sched.lease(10.0, 5, LEASE_S)  # record.expires_at <= now: refetch before pages
    assert again.kind is LeaseKind.ROBOTS


def test_one_in_flight_per_host_by_default() -> None:
    sched = MemoryFrontier()
    sched.add([cand("http://a", str(i)) for i in range(10)], now=0.0)
    open_host(sched, "http://a", 0.0)
    (first,) = sched.lease(0.0, 10, LEASE_S)
    assert sched.lease(0.0, 10, LEASE_S) == []
    assert sched.next_ready_at() is None  # busy host: nothing leasable until the token returns
    assert sched.complete(first, fetched(0.5), 0.1)
    assert sched.next_ready_at() == 0.5
    assert sched.lease(0.49, 10, LEASE_S) == []
    assert len(sched.lease(0.5, 10, LEASE_S)) == 1


def test_politeness_gap_is_honoured_in_a_driver_loop() -> None:
    policy = PolitenessPolicy(min_delay=0.05, delay_factor=10.0)
    durations = {"http://fast": 0.01, "http://mid": 0.1, "http://slow": 0.5}
    sched = MemoryFrontier()
    sched.add([cand(h, f"p{i}") for h in durations for i in range(2_000)], now=0.0)
    clock = VirtualClock()
    log = drive(sched, clock, durations.__getitem__, policy, concurrency=10, until=60.0)
    log = [f for f in log if f.start < 60.0]
    assert_polite(log, durations.__getitem__, policy)
    counts = {h: sum(f.host == h for f in log) for h in durations}
    for host, seconds in durations.items():
        expected = 60.0 / (seconds + policy.gap(seconds))
        assert abs(counts[host] - expected) <= 1, (host, counts[host], expected)


def test_hot_host_does_not_starve_small_hosts() -> None:
    policy = PolitenessPolicy(min_delay=0.05, delay_factor=10.0)
    hot = "http://hot"
    small = [f"http://s{i}" for i in range(1_000)]
    sched = MemoryFrontier()
    sched.add([cand(hot, f"p{i}") for i in range(100_000)], now=0.0)
    sched.add([cand(h, f"p{j}") for h in small for j in range(5)], now=0.0)
    small_urls = [f"{h}/p{j}" for h in small for j in range(5)]

    def duration(host: str) -> float:
        return 0.01 if host == hot else 0.02

    log = drive(sched, VirtualClock(), duration, policy, concurrency=10, until=120.0)
    assert all(sched.url_state(u) == ("fetched", None) for u in small_urls)
    small_end = max(f.end for f in log if f.host != hot)
    hot_by_then = sum(f.host == hot and f.start <= small_end for f in log)
    # 6,000 small-host requests at concurrency 10 need >= 12 s; the hot host gets ~9 per second.
    assert small_end < 30.0, "small hosts waited behind the hot host"
    assert hot_by_then <= small_end / (0.01 + policy.gap(0.01)) + 1
    assert sched.queued_count() > 98_000  # the hot host is nowhere near drained
    assert_polite(log, duration, policy)


def test_priority_order_within_a_host_is_lowest_first_then_fifo() -> None:
    sched = MemoryFrontier()
    prios = {"a": 5, "b": 1, "c": 3, "d": 1, "e": 0}
    sched.add([cand("http://h", p, priority=v) for p, v in prios.items()], now=0.0)
    open_host(sched, "http://h", 0.0)
    order = []
    for _ in prios:
        (lease,) = sched.lease(0.0, 1, LEASE_S)
        order.append(lease.url.rsplit("/", 1)[1])
        assert sched.complete(lease, fetched(None), 0.0)
    assert order == ["e", "b", "d", "c", "a"]


def test_stale_or_duplicate_completion_changes_nothing() -> None:
    sched = MemoryFrontier()
    sched.add([cand("http://h", "x"), cand("http://h", "y")], now=0.0)
    open_host(sched, "http://h", 0.0)
    (lease,) = sched.lease(0.0, 1, LEASE_S)
    forged = [
        replace(lease, lease_id="nope"),
        replace(lease, version=lease.version + 1),
        replace(lease, url_id=lease.url_id + 1),
        replace(lease, kind=LeaseKind.ROBOTS),
    ]
    for bad in forged:
        assert not sched.complete(bad, fetched(9.0), 0.0)
        assert not sched.release(bad, 0.0)
    assert sched.in_flight() == 1
    with pytest.raises(IllegalTransition):
        sched.complete(lease, Completion(state="leased"), 0.0)
    assert sched.url_state(lease.url) == ("leased", None)
    assert sched.complete(lease, fetched(5.0, reason="ok"), 1.0)
    snapshot = (sched.url_state(lease.url), sched.in_flight(), sched.next_ready_at())
    assert not sched.complete(lease, Completion(state="failed", next_allowed_at=99.0), 2.0)
    assert not sched.release(lease, 2.0)
    assert sched.expire_leases(10_000.0) == 0
    assert (sched.url_state(lease.url), sched.in_flight(), sched.next_ready_at()) == snapshot
    assert snapshot == (("fetched", "ok"), 0, 5.0)


def test_release_returns_url_and_token_without_counting_an_attempt() -> None:
    sched = MemoryFrontier()
    sched.add([cand("http://h", "x")], now=0.0)
    (robots,) = sched.lease(0.0, 1, LEASE_S)
    assert sched.release(robots, 0.0)
    assert sched.in_flight() == 0
    assert sched.robots("http://h") is None
    (robots,) = sched.lease(0.0, 1, LEASE_S)
    assert robots.kind is LeaseKind.ROBOTS
    assert sched.complete_robots(robots, robots_record("http://h", 0.0), 3.0)
    (page,) = sched.lease(3.0, 1, LEASE_S)
    assert page.attempt == 1
    assert sched.release(page, 3.5)
    assert not sched.release(page, 3.5)
    assert sched.url_state(page.url) == ("queued", None)
    assert (sched.in_flight(), sched.queued_count(), sched.next_ready_at()) == (0, 1, 3.0)
    (again,) = sched.lease(3.5, 1, LEASE_S)
    assert again.attempt == 1
    assert again.lease_id != page.lease_id
    assert not sched.complete(page, fetched(4.0), 4.0)
    assert sched.complete(again, fetched(4.0), 4.0)


def test_expired_leases_return_url_and_token_and_keep_the_attempt() -> None:
    sched = MemoryFrontier()
    sched.add([cand("http://a", "x"), cand("http://b", "y")], now=0.0)
    robots_a, robots_b = sched.lease(0.0, 2, 30.0)
    assert sched.complete_robots(robots_a, robots_record("http://a", 1.0), 1.0)
    (page,) = sched.lease(1.0, 5, 30.0)
    assert page.expires_at == 31.0
    assert sched.expire_leases(29.9) == 0
    assert sched.expire_leases(30.0) == 1  # robots_b
    assert sched.expire_leases(31.0) == 1  # page
    assert sched.in_flight() == 0
    assert not sched.complete(page, fetched(32.0), 32.0)
    assert not sched.complete_robots(robots_b, robots_record("http://b", 1.0), 1.0)
    assert sched.url_state("http://a/x") == ("queued", None)
    # The host waits lost_lease_gap (0 by default) from the moment the lease was taken back.
    assert sched.host_next_allowed_at("http://a") == 31.0
    leases = {x.host_key: x for x in sched.lease(31.0, 5, 30.0)}
    assert leases["http://b"].kind is LeaseKind.ROBOTS
    assert leases["http://a"].attempt == 2


def test_retry_completion_requeues_and_discovered_urls_are_added() -> None:
    sched = MemoryFrontier()
    sched.add([cand("http://h", "x")], now=0.0)
    open_host(sched, "http://h", 0.0)
    (lease,) = sched.lease(0.0, 1, LEASE_S)
    retry = Completion(state="queued", reason="http_503", next_allowed_at=10.0)
    assert sched.complete(lease, retry, 1.0)
    assert sched.url_state("http://h/x") == ("queued", "http_503")
    assert sched.next_ready_at() == 10.0
    (lease,) = sched.lease(10.0, 1, LEASE_S)
    assert lease.attempt == 2
    found = [cand("http://h", "x"), cand("http://h", "z", depth=1), cand("http://new", "a")]
    assert sched.complete(lease, fetched(11.0, discovered=found), 10.5)
    assert sched.url_state("http://h/z") == ("queued", None)
    assert (sched.queued_count(), sched.host_count()) == (2, 2)
    assert sched.next_ready_at() == -math.inf  # the new host has never been contacted


def test_host_clock_only_moves_forward_and_none_leaves_it() -> None:
    sched = MemoryFrontier()
    sched.add([cand("http://h", str(i)) for i in range(3)], now=0.0)
    open_host(sched, "http://h", 0.0, next_allowed_at=5.0)
    (lease,) = sched.lease(5.0, 1, LEASE_S)
    assert sched.complete(lease, Completion(state="excluded", reason="robots"), 5.0)
    assert sched.host_next_allowed_at("http://h") == 5.0
    (lease,) = sched.lease(5.0, 1, LEASE_S)
    assert sched.complete(lease, fetched(2.0), 5.0)  # earlier than the clock: ignored
    assert sched.next_ready_at() == 5.0


def test_max_pages_per_host_budget() -> None:
    sched = MemoryFrontier(FrontierLimits(max_pages_per_host=3))
    result = sched.add([cand("http://a", str(i)) for i in range(5)] + [cand("http://b", "0")], 0.0)
    assert (result.added, result.already_seen, result.rejected) == (4, 0, {"budget_host": 2})
    assert sched.url_state("http://a/4") == ("excluded", "budget_host")
    again = sched.add([cand("http://a", str(i)) for i in range(6)], 0.0)
    assert (again.added, again.already_seen, again.rejected) == (0, 5, {"budget_host": 1})
    robots = {x.host_key: x for x in sched.lease(0.0, 5, LEASE_S)}
    assert sched.complete_robots(robots["http://b"], robots_record("http://b", 0.0), 0.0)
    (lease,) = sched.lease(0.0, 5, LEASE_S)
    found = [cand("http://b", str(i)) for i in range(1, 6)]
    assert sched.complete(lease, fetched(0.0, discovered=found), 0.0)
    assert sched.queued_count() == 3 + 2  # a: 3 queued; b: 2 of 5 discovered fit the budget


def test_next_ready_at_is_none_when_the_crawl_is_done() -> None:
    policy = PolitenessPolicy(min_delay=0.5, delay_factor=1.0)
    sched = MemoryFrontier(FrontierLimits(max_in_flight_per_host=2))
    urls = [cand(f"http://h{i}", f"p{j}", priority=j % 3) for i in range(7) for j in range(9)]
    sched.add(urls, now=0.0)
    log = drive(sched, VirtualClock(), lambda h: 0.1, policy, concurrency=4)
    assert sum(f.kind is LeaseKind.PAGE for f in log) == len(urls)
    assert sched.next_ready_at() is None
    assert (sched.in_flight(), sched.queued_count()) == (0, 0)
    assert all(sched.url_state(c.url)[0] == "fetched" for c in urls)


# ------------------------------------------------------------------- random-operation model test

HOSTS = [f"http://h{i}" for i in range(4)]


class FrontierMachine(RuleBasedStateMachine):
    """Random adds, leases, completions, releases, expiries and replays against a simple model."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.sched = MemoryFrontier()
        self.max_in_flight = 1
        self.outstanding: dict[str, Lease] = {}
        self.ended: list[Lease] = []
        self.next_allowed: dict[str, float] = defaultdict(lambda: -math.inf)
        self.robots_until: dict[str, float] = defaultdict(lambda: -math.inf)
        self.seen: set[str] = set()
        self.terminal: dict[str, str] = {}

    @initialize(max_in_flight=st.integers(1, 3), budget=st.none() | st.integers(0, 6))
    def setup(self, max_in_flight: int, budget: int | None) -> None:
        self.max_in_flight = max_in_flight
        self.sched = MemoryFrontier(FrontierLimits(max_in_flight, budget))

    def _candidates(self, data: st.DataObject) -> list[UrlCandidate]:
        picks = data.draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 15)), max_size=6))
        return [cand(HOSTS[h], f"p{p}", priority=p % 3) for h, p in picks]

    @rule(data=st.data())
    def add(self, data: st.DataObject) -> None:
        batch = self._candidates(data)
        result = self.sched.add(batch, self.now)
        assert result.added + result.already_seen + sum(result.rejected.values()) == len(batch)
        for c in batch:
            self.seen.add(c.url)
            state, reason = self.sched.url_state(c.url)
            if state == "excluded" and reason == "budget_host":
                self.terminal[c.url] = state

    @rule(dt=st.sampled_from([0.0, 0.1, 0.5, 1.0, 7.0]))
    def advance(self, dt: float) -> None:
        self.now += dt

    @rule(limit=st.integers(1, 6))
    def lease(self, limit: int) -> None:
        leases = self.sched.lease(self.now, limit, 5.0)
        assert len(leases) <= limit
        for x in leases:
            assert self.now >= self.next_allowed[x.host_key], "leased before next_allowed_at"
            busy = [y for y in self.outstanding.values() if y.host_key == x.host_key]
            assert all(y.kind is LeaseKind.PAGE for y in busy), "lease beside a robots fetch"
            if x.kind is LeaseKind.PAGE:
                assert self.robots_until[x.host_key] > self.now, "page before robots.txt"
                assert x.url not in self.terminal
            self.outstanding[x.lease_id] = x

    @precondition(lambda self: bool(self.outstanding))
    @rule(data=st.data())
    def complete(self, data: st.DataObject) -> None:
        lease = self.outstanding.pop(data.draw(st.sampled_from(sorted(self.outstanding))))
        self.ended.append(lease)
        gap = data.draw(st.sampled_from([None, 0.0, 0.3, 2.0]))
        at = None if gap is None else self.now + gap
        if lease.kind is LeaseKind.ROBOTS:
            ttl = data.draw(st.sampled_from([0.5, 100.0]))
            record = robots_record(lease.host_key, self.now, ttl)
            assert self.sched.complete_robots(lease, record, self.now if at is None else at)
            self.robots_until[lease.host_key] = self.now + ttl
            at = self.now if at is None else at
        else:
            state = data.draw(
                st.sampled_from(["fetched", "redirected", "excluded", "failed", "queued"])
            )
            found = self._candidates(data)
            assert self.sched.complete(
                lease, Completion(state=state, next_allowed_at=at, discovered=found), self.now
            )
            self.seen.update(c.url for c in found)
            for c in found:
                if self.sched.url_state(c.url) == ("excluded", "budget_host"):
                    self.terminal[c.url] = "excluded"
            if state != "queued":
                assert lease.url not in self.terminal, "a URL reached two terminal states"
                self.terminal[lease.url] = state
        if at is not None:
            self.next_allowed[lease.host_key] = max(self.next_allowed[lease.host_key], at)

    @precondition(lambda self: bool(self.outstanding))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        lease = self.outstanding.pop(data.draw(st.sampled_from(sorted(self.outstanding))))
        self.ended.append(lease)
        assert self.sched.release(lease, self.now)

    @rule()
    def expire(self) -> None:
        due = [k for k, x in self.outstanding.items() if x.expires_at <= self.now]
        assert self.sched.expire_leases(self.now) == len(due)
        for k in due:
            self.ended.append(self.outstanding.pop(k))

    @precondition(lambda self: bool(self.ended))
    @rule(data=st.data())
    def replay_stale(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from(self.ended))
        before = (self.sched.in_flight(), self.sched.queued_count(), self.sched.next_ready_at())
        if lease.kind is LeaseKind.ROBOTS:
            assert not self.sched.complete_robots(lease, robots_record(lease.host_key, 0.0), 1e9)
        else:
            assert not self.sched.complete(lease, fetched(1e9), self.now)
        assert not self.sched.release(lease, self.now)
        assert (
            self.sched.in_flight(),
            self.sched.queued_count(),
            self.sched.next_ready_at(),
        ) == before

    @invariant()
    def tokens_are_bounded(self) -> None:
        assert self.sched.in_flight() == len(self.outstanding)
        for host in HOSTS:
            n = sum(x.host_key == host for x in self.outstanding.values())
            assert self.sched.host_in_flight(host) == n <= self.max_in_flight

    def teardown(self) -> None:
        for lease in list(self.outstanding.values()):
            assert self.sched.release(lease, self.now)
        self.outstanding.clear()
        while (ready := self.sched.next_ready_at()) is not None:
            self.now = max(self.now, ready)
            leases = self.sched.lease(self.now, 10, 5.0)
            assert leases
            assert all(self.now >= self.next_allowed[x.host_key] for x in leases)
            for lease in leases:
                if lease.kind is LeaseKind.ROBOTS:
                    record = robots_record(lease.host_key, self.now)
                    assert self.sched.complete_robots(lease, record, self.now)
                else:
                    assert self.sched.complete(lease, fetched(self.now + 0.1), self.now)
                    assert lease.url not in self.terminal
                    self.terminal[lease.url] = "fetched"
                    self.next_allowed[lease.host_key] = self.now + 0.1
        assert self.sched.in_flight() == 0
        assert set(self.terminal) == self.seen
        for url, state in self.terminal.items():
            assert self.sched.url_state(url)[0] == state
            assert state in TERMINAL_STATES


TestFrontierMachine = FrontierMachine.TestCase
TestFrontierMachine.settings = settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
