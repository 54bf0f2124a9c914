"""The Redis frontier's bucket index (store/redis/index.py) on a real Redis and a real cluster.

The index is a hint kept by replies of the bucket scripts: these tests check that it matches the
buckets through ordinary operations, that a lost or wrong mark cannot hide a ready host or a
lease for longer than the sweep period nor end the crawl early, and that an idle worker's
questions cost the same number of Redis commands whatever the number of buckets.
"""

from __future__ import annotations

from typing import Any

import pytest

from crawlspace.bands import FrontQueues
from crawlspace.records import Completion, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.base import FrontierLimits
from crawlspace.store.redis.frontier import RedisFrontier
from tests.conformance.conftest import fresh_namespace

LEASE_SECONDS = 100.0
SWEEP = 10.0
HOSTS = [f"http://h{i}" for i in range(12)]
BANDS = [f"ready:{band}" for band in range(FrontQueues().count)]


@pytest.fixture(params=["redis", "redis-cluster"])
def client(request: pytest.FixtureRequest) -> Any:
    name = "redis_single_client" if request.param == "redis" else "redis_cluster_client"
    return request.getfixturevalue(name)


def make(client: Any, buckets: int = 16, limits: FrontierLimits | None = None) -> RedisFrontier:
    return RedisFrontier(
        client, limits, namespace=fresh_namespace(), buckets=buckets, sweep_seconds=SWEEP
    )


def cand(host: str, path: str) -> UrlCandidate:
    return UrlCandidate(f"{host}{path}", host, 0, 0)


def robots_ok(host: str, now: float) -> RobotsRecord:
    return RobotsRecord(host, 404, "allow_all", b"", now, now + 86400.0)


def firsts(frontier: RedisFrontier, key: str) -> dict[int, float]:
    """Each bucket's first score of ``key`` ("ready:<band>", "leases"), bucket by bucket."""
    found = frontier.per_bucket(key, lambda p, k: p.zrange(k, 0, 0, withscores=True))
    return {b: float(first[0][1]) for b, first in enumerate(found) if first}


def marks(frontier: RedisFrontier, key: str) -> dict[int, float]:
    """The index as other workers see it: after this one's waiting marks went out."""
    frontier.flush_riders()
    found = frontier.client.zrange(frontier.index.prefix + key, 0, -1, withscores=True)
    return {int(b): float(score) for b, score in found}


def earliest(per_key: Any, frontier: RedisFrontier, key: str) -> dict[int, float]:
    """``per_key`` over ``key``; for "ready", the earliest over the front bands' keys."""
    if key != "ready":
        return dict(per_key(frontier, key))
    out: dict[int, float] = {}
    for band in BANDS:
        for bucket, at in per_key(frontier, band).items():
            out[bucket] = min(at, out.get(bucket, at))
    return out


def truth(frontier: RedisFrontier, key: str) -> dict[int, float]:
    return earliest(firsts, frontier, key)


def index(frontier: RedisFrontier, key: str) -> dict[int, float]:
    return earliest(marks, frontier, key)


def assert_exact(frontier: RedisFrontier) -> None:
    for key in (*BANDS, "leases"):
        assert marks(frontier, key) == firsts(frontier, key), key


def lose_marks(frontier: RedisFrontier, bucket: int) -> None:
    """What a worker killed between a bucket script and its index write leaves, made worse: the
    bucket's marks gone and a version no reply will reach (as after a failover rollback)."""
    p = frontier.index.prefix
    frontier.flush_riders()
    for key in (*BANDS, "leases"):
        frontier.client.zrem(p + key, bucket)
    frontier.client.hset(p + "ver", bucket, 10**9)


def test_the_index_follows_every_operation(client: Any) -> None:
    frontier = make(client, limits=FrontierLimits(lost_lease_gap=1.0))
    frontier.add([cand(h, f"/{i}") for h in HOSTS for i in range(3)], 0.0)
    assert_exact(frontier)
    robots = frontier.lease(0.0, 100, LEASE_SECONDS)
    assert {lease.kind for lease in robots} == {LeaseKind.ROBOTS}
    assert_exact(frontier)
    for i, lease in enumerate(robots):
        frontier.complete_robots(lease, robots_ok(lease.host_key, 0.0), float(i))
    assert_exact(frontier)
    pages = frontier.lease(20.0, 100, 5.0 + LEASE_SECONDS)
    assert len(pages) == len(HOSTS)
    assert_exact(frontier)
    frontier.complete(pages[0], Completion(state="fetched", next_allowed_at=30.0), 21.0)
    frontier.release(pages[1], 21.0)
    assert_exact(frontier)
    assert frontier.expire_leases(200.0) == len(HOSTS) - 2
    assert_exact(frontier)
    assert frontier.next_ready_at() == min(truth(frontier, "ready").values())


def test_a_lost_mark_hides_a_ready_host_for_at_most_the_sweep_period(client: Any) -> None:
    frontier = make(client)
    host = HOSTS[0]
    frontier.add([cand(host, "/1")], 0.0)
    bucket = frontier.bucket(host)
    lose_marks(frontier, bucket)
    assert frontier.lease(0.0, 10, LEASE_SECONDS) == []  # hidden: the test can fail
    assert frontier.lease(SWEEP - 0.01, 10, LEASE_SECONDS) == []
    (lease,) = frontier.lease(SWEEP, 10, LEASE_SECONDS)  # the sweep re-read every bucket
    assert (lease.host_key, lease.kind) == (host, LeaseKind.ROBOTS)
    assert_exact(frontier)


def test_a_sweep_step_costs_the_same_whatever_the_bucket_count(client: Any) -> None:
    frontier = make(client, buckets=1024)
    frontier.add([cand(h, "/1") for h in HOSTS], 0.0)
    target = frontier.bucket(HOSTS[0])
    lose_marks(frontier, target)
    frontier.lease(0.0, 0, LEASE_SECONDS)  # starts the sweep clock
    seen: set[int] = set()
    now = 0.0
    # Each step re-reads 32 buckets; every bucket is re-read within one sweep period.
    while target not in seen:
        before = frontier.index._cursor
        now += SWEEP * 32 / 1024
        frontier.lease(now, 0, LEASE_SECONDS)
        after = frontier.index._cursor
        assert (after - before) % 1024 == 32
        seen.update((before + i) % 1024 for i in range(32))
        assert now <= SWEEP + 1e-9
    assert index(frontier, "ready")[target] == truth(frontier, "ready")[target]


def test_a_lost_lease_mark_still_expires_after_the_sweep_period(client: Any) -> None:
    frontier = make(client, limits=FrontierLimits(lost_lease_gap=0.0))
    frontier.add([cand(HOSTS[0], "/1")], 0.0)
    (robots,) = frontier.lease(0.0, 1, 5.0)
    lose_marks(frontier, frontier.bucket(HOSTS[0]))
    assert frontier.earliest_lease_expiry() is None  # hidden
    assert frontier.expire_leases(5.0) == 0
    assert frontier.expire_leases(SWEEP) == 1
    assert_exact(frontier)
    (again,) = frontier.lease(SWEEP, 1, 5.0)
    assert (again.kind, again.host_key) == (LeaseKind.ROBOTS, robots.host_key)


def test_an_empty_index_does_not_end_the_crawl(client: Any) -> None:
    frontier = make(client)
    frontier.add([cand(HOSTS[0], "/1")], 0.0)
    lose_marks(frontier, frontier.bucket(HOSTS[0]))
    # next_ready_at None tells a worker to stop: it is confirmed bucket by bucket first.
    assert frontier.next_ready_at() == float("-inf")
    assert_exact(frontier)
    assert len(frontier.lease(0.0, 1, LEASE_SECONDS)) == 1


def test_a_wrong_mark_is_corrected_by_the_call_it_misleads(client: Any) -> None:
    frontier = make(client)
    frontier.add([cand(HOSTS[0], "/1")], 0.0)
    empty = next(b for b in range(16) if b != frontier.bucket(HOSTS[0]))
    p = frontier.index.prefix
    # One lease call and one expiry pass put the marks right, so an idle worker does not spin
    # on a ready time in the past or a lease already due.
    frontier.client.zadd(p + "ready", {str(empty): 0.0})
    assert len(frontier.lease(1.0, 10, LEASE_SECONDS)) == 1
    assert_exact(frontier)
    frontier.client.zadd(p + "leases", {str(empty): 0.0})
    assert frontier.expire_leases(1.0) == 0
    assert_exact(frontier)
    assert frontier.next_ready_at() is None
    assert frontier.earliest_lease_expiry() == 1.0 + LEASE_SECONDS


def test_older_marks_never_replace_newer_ones(client: Any) -> None:
    frontier = make(client)
    frontier.index.apply({3: (5, ("0", "7.5"), "", "")})
    frontier.index.apply({3: (4, ("0", "1.0"), "2.0", "3.0")})  # a slower worker's older reply
    assert index(frontier, "ready") == {3: 7.5}
    assert index(frontier, "leases") == {}
    assert index(frontier, "due") == {}
    frontier.index.apply({3: (6, ("0", ""), "9.0", "12.0")})
    assert (index(frontier, "ready"), index(frontier, "leases")) == ({}, {3: 9.0})
    assert index(frontier, "due") == {3: 12.0}
    frontier.index.apply({3: (1, ("0", "2.0"), "", "")}, forced=True)  # a sweep's fresh read
    assert (index(frontier, "ready"), index(frontier, "leases")) == ({3: 2.0}, {})
    assert index(frontier, "due") == {}


def commands(client: Any) -> int:
    if hasattr(client, "get_nodes"):  # a cluster: every master's count
        nodes = client.get_primaries()
        return sum(
            int(client.info("stats", target_nodes=n)["total_commands_processed"]) for n in nodes
        )
    return int(client.info("stats")["total_commands_processed"])


@pytest.mark.parametrize("buckets", [16, 1024])
def test_an_idle_worker_costs_the_same_whatever_the_bucket_count(client: Any, buckets: int) -> None:
    frontier = make(client, buckets=buckets)
    frontier.add([cand(HOSTS[0], "/1")], 0.0)
    (robots,) = frontier.lease(0.0, 10, LEASE_SECONDS)  # the only host is busy: all wait
    before = commands(client)
    for _ in range(5):
        assert frontier.lease(0.0, 10, LEASE_SECONDS) == []
        assert frontier.next_ready_at() is None
        assert frontier.earliest_lease_expiry() == LEASE_SECONDS
        frontier.expire_leases(0.0)
    # 5 x (1 index read + 2 for next_ready_at + 1 + 1), and the two index reads read each front
    # band inside their script (Redis counts those commands too), plus the INFO calls
    # themselves and a cluster client's topology refreshes; the full scans this replaced sent
    # 3 x buckets commands per pass.
    assert commands(client) - before <= 5 * (5 + 2 * len(BANDS)) + 10
    assert robots.kind is LeaseKind.ROBOTS
