"""The conformance suites' engines: every test takes ``make_frontier`` and runs on the memory
MemoryFrontier, SQLite, one Redis and a 3-master Redis Cluster (session-wide deployments, started
once, stopped by PID)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from crawlspace.records import Completion, Lease, RobotsRecord, UrlCandidate
from crawlspace.store.base import Frontier, FrontierLimits
from crawlspace.store.memory import MemoryFrontier
from crawlspace.store.redis.frontier import connect
from crawlspace.store.sqlite.store import SqliteStore
from tests.redis_servers import RedisDeployment, start_cluster, start_single

_namespaces = itertools.count()

LEASE_SECONDS = 100.0
REDIS_BUCKETS = 16  # every cross-bucket question scans all buckets: keep the suite quick
FrontierFactory = Callable[[FrontierLimits], Frontier]


@pytest.fixture(params=["memory", "sqlite", "redis", "redis-cluster"])
def make_frontier(request: pytest.FixtureRequest, tmp_path: Path) -> FrontierFactory:
    if request.param == "memory":
        return MemoryFrontier
    if request.param.startswith("redis"):
        from crawlspace.store.redis.frontier import RedisFrontier

        name = "redis_single_client" if request.param == "redis" else "redis_cluster_client"
        client = request.getfixturevalue(name)
        ns = fresh_namespace()
        return lambda limits: RedisFrontier(client, limits, namespace=ns, buckets=REDIS_BUCKETS)
    return lambda limits: SqliteStore(tmp_path / "crawl.db", limits)


def cand(host: str, path: str, depth: int = 0, priority: int | None = None) -> UrlCandidate:
    return UrlCandidate(f"{host}{path}", host, depth, depth if priority is None else priority)


def robots_ok(lease: Lease, now: float) -> RobotsRecord:
    return RobotsRecord(lease.host_key, 404, "allow_all", b"", now, now + 86400.0)


def fetched(next_allowed_at: float) -> Completion:
    return Completion(state="fetched", next_allowed_at=next_allowed_at)


@pytest.fixture(scope="session")
def redis_single(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisDeployment]:
    deployment = start_single(tmp_path_factory.mktemp("redis"))
    yield deployment
    deployment.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisDeployment]:
    deployment = start_cluster(tmp_path_factory.mktemp("redis-cluster"), masters=3)
    yield deployment
    deployment.stop()


@pytest.fixture(scope="session")
def redis_single_client(redis_single: RedisDeployment) -> Iterator[Any]:
    client = connect(redis_single.url)
    yield client
    client.close()


@pytest.fixture(scope="session")
def redis_cluster_client(redis_cluster: RedisDeployment) -> Iterator[Any]:
    client = connect(redis_cluster.url)
    yield client
    client.close()


def fresh_namespace() -> str:
    """Each test gets its own key namespace on the shared servers, so no flush is needed."""
    return f"t{next(_namespaces)}"
