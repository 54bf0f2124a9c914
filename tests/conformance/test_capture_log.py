"""The shared frontier's capture log (store/redis/captures.py) on one Redis and on a 3-master
cluster: what is published is read back in order, in pages, from where a reader stopped, and
the stream stays near its cap."""

from __future__ import annotations

from typing import Any

import pytest

from crawlspace.records import StoredCapture
from crawlspace.store.redis import captures as capture_module
from crawlspace.store.redis.captures import RedisCaptureLog
from crawlspace.store.redis.frontier import RedisFrontier
from tests.conformance.conftest import fresh_namespace


def stored(n: int) -> StoredCapture:
    return StoredCapture(f"k{n}", f"http://h/{n}", 1000.0 + n, "w.warc.gz", n, 9, f"sha1:{n}")


@pytest.mark.parametrize("engine", ["redis_single_client", "redis_cluster_client"])
def test_published_captures_read_back_in_order_from_where_a_reader_stopped(
    engine: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(capture_module, "READ_BATCH", 3)  # several round trips a reading
    client: Any = request.getfixturevalue(engine)
    frontier = RedisFrontier(client, namespace=fresh_namespace(), buckets=4, epoch=0)
    log = RedisCaptureLog(frontier, entries=1000)
    log.publish([stored(n) for n in range(7)])
    first, after = log.read(None, limit=5)
    assert [c.key for c in first] == ["k0", "k1", "k2", "k3", "k4"]
    # Another worker's records: their place in that worker's files means nothing here.
    assert first[1] == StoredCapture("k1", "http://h/1", 1001.0, "", 0, 0, "sha1:1")
    rest, after = log.read(after, limit=100)
    assert [c.key for c in rest] == ["k5", "k6"]
    assert log.read(after, limit=100) == ([], after)
    log.publish([stored(7)])
    assert [c.key for c in log.read(after, limit=100)[0]] == ["k7"]


def test_the_stream_is_capped_near_its_window(redis_single_client: Any) -> None:
    frontier = RedisFrontier(redis_single_client, namespace=fresh_namespace(), buckets=4, epoch=0)
    log = RedisCaptureLog(frontier, entries=100)
    for start in range(0, 2000, 200):
        log.publish([stored(n) for n in range(start, start + 200)])
    kept = redis_single_client.xlen(log.key)
    assert 100 <= kept < 300  # trimmed by whole stream nodes (~100 entries each)
    newest, _ = log.read(None, limit=10_000)
    assert newest[-1].key == "k1999"
