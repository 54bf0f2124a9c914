"""Host notes a worker puts on the shared frontier are written once per lease round
(store/redis/notes.py), on a 3-master Redis Cluster: the worker reads its own notes back at once,
other workers see them after its next lease round (or its close), and a completion's notes, being
newer, win over the host's pending ones."""

from __future__ import annotations

import dataclasses
from typing import Any

from crawlspace.records import LeaseKind
from crawlspace.store.base import FrontierLimits
from crawlspace.store.redis.frontier import RedisFrontier, connect
from crawlspace.store.redis.notes import FLUSH_AT
from tests.conformance.conftest import (
    LEASE_SECONDS,
    REDIS_BUCKETS,
    cand,
    fetched,
    fresh_namespace,
    robots_ok,
)
from tests.redis_servers import RedisDeployment

HOST = "http://a.example"


def _pair(client: Any) -> tuple[RedisFrontier, RedisFrontier]:
    """Two workers' frontiers on one namespace."""
    ns = fresh_namespace()
    return tuple(  # type: ignore[return-value]
        RedisFrontier(client, FrontierLimits(), namespace=ns, buckets=REDIS_BUCKETS)
        for _ in range(2)
    )


def test_a_note_is_read_back_at_once_and_shared_after_the_lease_round(
    redis_cluster_client: Any,
) -> None:
    mine, other = _pair(redis_cluster_client)
    mine.put_host_note(HOST, "yield:/cal/", "window 1")
    assert mine.host_notes(HOST, ["yield:/cal/", "learned"]) == {"yield:/cal/": "window 1"}
    assert other.host_notes(HOST, ["yield:/cal/"]) == {}
    mine.lease(0.0, 10, LEASE_SECONDS)  # the next lease round writes it
    assert other.host_notes(HOST, ["yield:/cal/"]) == {"yield:/cal/": "window 1"}


def test_many_pending_notes_are_written_without_waiting(redis_cluster_client: Any) -> None:
    mine, other = _pair(redis_cluster_client)
    hosts = [f"http://h{i}.example" for i in range(FLUSH_AT)]
    for host in hosts:
        mine.put_host_note(host, "learned", host)
    assert all(other.host_notes(host, ["learned"]) == {"learned": host} for host in hosts)


def test_a_completions_notes_win_over_the_hosts_pending_ones(redis_cluster_client: Any) -> None:
    mine, other = _pair(redis_cluster_client)
    mine.add([cand(HOST, "/a")], 0.0)
    (robots,) = mine.lease(0.0, 10, LEASE_SECONDS)
    assert robots.kind is LeaseKind.ROBOTS
    assert mine.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    (lease,) = mine.lease(1.0, 1, LEASE_SECONDS)
    mine.put_host_note(HOST, "learned", "older")
    mine.put_host_note(HOST, "yield:/a", "window")
    done = fetched(1.0)
    done = dataclasses.replace(done, notes={"learned": "newer"})
    assert mine.complete(lease, done, 1.0)
    # Written with the completion, before the host's token went back; nothing left pending.
    assert other.host_notes(HOST, ["learned", "yield:/a"]) == {
        "learned": "newer",
        "yield:/a": "window",
    }
    mine.lease(2.0, 10, LEASE_SECONDS)
    assert other.host_notes(HOST, ["learned"]) == {"learned": "newer"}


def test_close_writes_what_is_pending(redis_cluster: RedisDeployment) -> None:
    ns = fresh_namespace()
    mine = RedisFrontier(connect(redis_cluster.url), namespace=ns, buckets=REDIS_BUCKETS)
    mine.put_host_note(HOST, "learned", "last words")
    mine.close()
    other = RedisFrontier(connect(redis_cluster.url), namespace=ns, buckets=REDIS_BUCKETS)
    try:
        assert other.host_notes(HOST, ["learned"]) == {"learned": "last words"}
    finally:
        other.close()
