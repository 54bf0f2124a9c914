"""The Redis lease's shortcut is exact: peeking only the first buckets of the index's order
(store/redis/leasing.py, ``Spread``) grants the same hosts, in the same order, as peeking every
bucket the index returned, on one Redis and on a 3-master cluster.

Two frontiers hold the same crawl in two namespaces; one peeks every bucket on every lease (the
full path), the other takes the shortcut whenever it can. They are driven through the same
leases and completions, with ready times that tie across buckets and spread over bands and
aging, and must agree on every lease. The run must take both the shortcut and the second peek.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from crawlspace.bands import FrontQueues
from crawlspace.records import Lease, LeaseKind
from crawlspace.store.base import FrontierLimits
from crawlspace.store.redis import leasing
from crawlspace.store.redis.frontier import RedisFrontier
from tests.conformance.conftest import LEASE_SECONDS, cand, fetched, fresh_namespace, robots_ok

HOSTS = 120
BUCKETS = 16
LIMITS = (1, 2, 5, 13, 40, 100)


@pytest.fixture(params=["redis", "redis-cluster"])
def client(request: pytest.FixtureRequest) -> Any:
    name = "redis_single_client" if request.param == "redis" else "redis_cluster_client"
    return request.getfixturevalue(name)


def make(client: Any, *, full: bool) -> RedisFrontier:
    limits = FrontierLimits(front=FrontQueues(aging=1.0))
    frontier = RedisFrontier(client, limits, namespace=fresh_namespace(), buckets=BUCKETS)
    if full:
        frontier.spread.width = lambda found: found  # type: ignore[method-assign]
    return frontier


def seed(frontier: RedisFrontier, rng: random.Random) -> None:
    """Every host's robots.txt fetched, then a few URLs each over all the front bands."""
    hosts = [f"http://h{i}" for i in range(HOSTS)]
    frontier.add([cand(h, "/") for h in hosts], 0.0)
    for lease in frontier.lease(0.0, 1000, LEASE_SECONDS):
        assert lease.kind is LeaseKind.ROBOTS
        assert frontier.complete_robots(lease, robots_ok(lease, 0.0), 0.0)
    frontier.add(
        [cand(h, f"/p{j}", 1, rng.choice((0, 5, 15, 95))) for h in hosts for j in range(8)],
        0.0,
    )


def step(frontier: RedisFrontier, now: float, limit: int, delays: dict[str, float]) -> list[str]:
    leases: list[Lease] = frontier.lease(now, limit, LEASE_SECONDS)
    for lease in leases:
        # Few distinct ready times: hosts tie across buckets as well as spread over ranks.
        assert frontier.complete(lease, fetched(now + delays[lease.host_key]), now)
    return [lease.url for lease in leases]


def test_the_shortcut_grants_what_the_full_peek_grants(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    decided: list[bool] = []
    real = leasing._decided

    def spy(*args: Any) -> bool:
        decided.append(real(*args))
        return decided[-1]

    monkeypatch.setattr(leasing, "_decided", spy)
    monkeypatch.setattr(leasing, "MIN_PEEK", 1)  # the shortcut as often as it can be taken
    rng = random.Random(7)
    full, short = make(client, full=True), make(client, full=False)
    for frontier in (full, short):
        seed(frontier, random.Random(11))
    delays = {f"http://h{i}": rng.choice((0.0, 0.0, 0.0, 1.0, 2.5)) for i in range(HOSTS)}
    now, steps = 0.0, 0
    while steps < 200:
        limit = rng.choice(LIMITS)
        granted = step(full, now, limit, delays)
        assert step(short, now, limit, delays) == granted, (steps, now, limit)
        if not granted and full.next_ready_at() is None:
            break
        now += rng.choice((0.0, 0.25, 0.5, 1.0))
        steps += 1
    assert steps > 30
    assert True in decided, "the shortcut was never taken"
    assert False in decided, "the second peek was never needed"
