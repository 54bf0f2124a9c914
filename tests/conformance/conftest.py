"""Session-wide Redis deployments for the conformance suite: started once, stopped by PID."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from crawlspace.store.redis_frontier import connect
from tests.redis_servers import RedisDeployment, start_cluster, start_single

_namespaces = itertools.count()


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
