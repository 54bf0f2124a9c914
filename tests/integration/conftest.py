"""Fixtures the integration modules share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.redis_servers import RedisDeployment, start_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisDeployment]:
    """A 3-master Redis Cluster (no replicas), one per test module."""
    deployment = start_cluster(tmp_path_factory.mktemp("redis-cluster"), masters=3)
    yield deployment
    deployment.stop()
