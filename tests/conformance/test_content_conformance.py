"""Content dedup's store primitives (plans.py ContentIndex) mean the same in
memory, on one Redis and on a 3-master Redis Cluster; SQLite's is exercised by real crawls
(tests/integration/test_dedup_crawl.py), whose workers' variant runs the Redis one."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from crawlspace.dedup.content import MemoryContentIndex
from crawlspace.frontier.duplicates import classify
from crawlspace.plans import ContentIndex, ContentVerdict
from crawlspace.records import FetchRecord

A = 0x0123_4567_89AB_CDEF
Factory = Callable[[int | None], ContentIndex]


@pytest.fixture(params=["memory", "redis", "redis-cluster"])
def make_index(request: pytest.FixtureRequest) -> Factory:
    if request.param == "memory":
        return lambda max_entries: MemoryContentIndex(3, max_entries)
    from crawlspace.store.redis.content import RedisContentIndex
    from crawlspace.store.redis.frontier import RedisFrontier
    from tests.conformance.conftest import REDIS_BUCKETS, fresh_namespace

    name = "redis_single_client" if request.param == "redis" else "redis_cluster_client"
    client = request.getfixturevalue(name)
    frontier = RedisFrontier(client, namespace=fresh_namespace(), buckets=REDIS_BUCKETS)
    return lambda max_entries: RedisContentIndex(frontier, 3, max_entries)


def page(text: str | None, simhash: int | None) -> FetchRecord:
    return FetchRecord(
        "u", "u", 200, 0.0, 1.0, "text/html", 10, False, None, None, None, None,
        text_sha256=text, simhash=simhash,
    )  # fmt: skip


def test_the_first_url_with_a_text_owns_it(make_index: Factory) -> None:
    index = make_index(None)
    assert index.claim_text("t1", 10) is None
    assert index.claim_text("t1", 11) == 10
    assert index.claim_text("t1", 12) == 10
    assert index.claim_text("t1", 10) is None  # its own text again (a refetch)
    assert index.claim_text("t2", 11) is None


def test_near_duplicates_join_the_cluster_of_the_nearest_page(make_index: Factory) -> None:
    index = make_index(None)
    assert index.near(A, 1) is None  # a cluster of its own
    assert index.near(A ^ 0b111, 2) == 1  # 3 bits from A
    assert index.near(A ^ 0b111 ^ (0b1 << 40), 3) == 1  # 1 bit from page 2: cluster 1
    assert index.near(~A & (2**64 - 1), 4) is None  # far from everything
    assert index.near(A, 1) is None  # page 1 again: not a duplicate of itself


def test_classify_judges_exact_first_and_near_on_first_visits(make_index: Factory) -> None:
    index = make_index(None)
    assert classify(index, page("t", A), 1, first_visit=True) == ContentVerdict()
    assert classify(index, page("t", A), 2, first_visit=True) == ContentVerdict(exact_of=1)
    assert classify(index, page("u", A ^ 1), 3, first_visit=True) == ContentVerdict(near_of=1)
    # A revisit is never compared with fingerprints (it would match its own earlier version).
    assert classify(index, page("v", A ^ 3), 4, first_visit=False) == ContentVerdict()


def test_a_full_index_stops_storing_fingerprints(make_index: Factory) -> None:
    index = make_index(1)
    assert index.near(A, 1) is None
    assert index.near(A ^ 1, 2) == 1  # compared with the stored one
    # 3 bits from page 2, 4 from A: page 2 was not stored (the index was full), so no match.
    assert index.near(A ^ 0b1111, 3) is None
