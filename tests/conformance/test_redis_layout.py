"""The Redis frontier's compact URL layout (store/redis/__init__.py) on a real Redis and a real
cluster: the seen set of keyed fingerprints stays exact and compact while linear hashing splits
it, and a packed URL record keeps every field, whatever its neighbours hold.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from crawlspace.errors import StoreError
from crawlspace.records import Completion, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.redis.frontier import RedisFrontier
from crawlspace.store.redis.scripts import compose_script
from crawlspace.store.redis.views import (
    frontier_stats,
    iter_frontier_records,
    url_record,
    url_records,
)
from tests.conformance.conftest import fresh_namespace

HOST = "http://one.test"


@pytest.fixture(params=["redis", "redis-cluster"])
def client(request: pytest.FixtureRequest) -> Any:
    name = "redis_single_client" if request.param == "redis" else "redis_cluster_client"
    return request.getfixturevalue(name)


def _keys(frontier: RedisFrontier, client: Any, pattern: str) -> list[str]:
    """Keys of the frontier's bucket 0 matching ``pattern``, from the node that holds it."""
    prefix = frontier.key_prefix(0)
    if hasattr(client, "get_node_from_key"):
        node = client.get_node_from_key(prefix + "st")
        return sorted(client.scan_iter(match=prefix + pattern, count=1000, target_nodes=node))
    return sorted(client.scan_iter(match=prefix + pattern, count=1000))


def test_the_seen_set_stays_exact_and_compact_through_its_splits(client: Any) -> None:
    """5,000 URLs in one bucket, added in uneven batches: each is new once and seen after, and
    the seen set has grown into ~5,000 / 48 small hashes, every one still a listpack."""
    frontier = RedisFrontier(client, namespace=fresh_namespace(), buckets=1, epoch=0)
    rng = random.Random(7)
    urls = [f"{HOST}/{i}/{rng.random()}" for i in range(5000)]
    added, i = 0, 0
    while i < len(urls):
        n = rng.randint(1, 700)
        batch = [UrlCandidate(u, HOST, 1) for u in urls[i : i + n]]
        again = batch[: rng.randint(0, len(batch))]  # some twice in the same call
        result = frontier.add(batch + again, 1.0)
        assert (result.added, result.already_seen) == (len(batch), len(again))
        added += result.added
        i += n
    result = frontier.add([UrlCandidate(u, HOST, 1) for u in urls], 1.0)
    assert (result.added, result.already_seen) == (0, len(urls))
    assert frontier.seen_urls() == added == len(urls)
    seen = _keys(frontier, client, "s:*")
    assert len(seen) == math.ceil(len(urls) / 48)  # split just as far as the load asks
    assert sum(client.hlen(k) for k in seen) == len(urls)
    assert {client.object("encoding", k) for k in seen} == {"listpack"}
    # Every URL's record is found by its fingerprint, and names the URL.
    for url in rng.sample(urls, 200):
        record = url_record(frontier, url, HOST)
        assert record is not None
        assert (record["url"], record["state"]) == (url, "queued")


def test_one_large_call_does_not_overfill_a_small_hash(client: Any) -> None:
    """The seen set splits while a call admits, not after it: 500 URLs in one call into a
    bucket of 40 leave every small hash a listpack (one overfilled hash would stay a hash table
    for good)."""
    frontier = RedisFrontier(client, namespace=fresh_namespace(), buckets=1, epoch=0)
    frontier.add([UrlCandidate(f"{HOST}/a{i}", HOST, 1) for i in range(40)], 1.0)
    assert frontier.add([UrlCandidate(f"{HOST}/b{i}", HOST, 1) for i in range(500)], 1.0).added
    seen = _keys(frontier, client, "s:*")
    assert len(seen) == math.ceil(540 / 48)
    assert {client.object("encoding", k) for k in seen} == {"listpack"}
    assert max(client.hlen(k) for k in seen) <= 2 * 48 + 30  # (a loose bound on chance)


def test_a_host_known_only_from_excluded_links_is_no_host(client: Any) -> None:
    """Excluded links remember their URLs (and so their hosts' numbers), but a host none of
    whose URLs was admitted gets no host hash: `stats --frontier` and `export --what hosts`
    count the crawl's hosts, not every domain it saw a link to."""
    frontier = RedisFrontier(client, namespace=fresh_namespace(), buckets=4, epoch=0)
    frontier.add([UrlCandidate(f"{HOST}/", HOST, 0)], 1.0)
    robots = frontier.lease(1.0, 1, 60.0)[0]
    assert frontier.complete_robots(
        robots, RobotsRecord(HOST, 404, "allow_all", b"", 1.0, 1e12), 1.0
    )
    page = frontier.lease(2.0, 1, 60.0)[0]
    away = [(f"http://away{i}.test/x", "scope") for i in range(20)]
    done = Completion(state="fetched", next_allowed_at=2.0, excluded=away)
    assert frontier.complete(page, done, 2.0)
    assert frontier_stats(frontier)["hosts"] == 1
    assert [h["host_key"] for h in iter_frontier_records(frontier, "hosts")] == [HOST]
    assert url_record(frontier, away[3][0], "http://away3.test")["state"] == "excluded"  # type: ignore[index]


def test_a_crawl_that_lost_its_fingerprint_key_is_refused(client: Any) -> None:
    namespace = fresh_namespace()
    frontier = RedisFrontier(client, namespace=namespace, buckets=1)  # takes an epoch
    frontier.add([UrlCandidate(f"{HOST}/", HOST, 0)], 1.0)
    client.delete(f"{namespace}:fpkey")
    with pytest.raises(StoreError, match="fpkey is gone"):
        RedisFrontier(client, namespace=namespace, buckets=1)


def test_records_are_packed_lists_of_128(client: Any) -> None:
    frontier = RedisFrontier(client, namespace=fresh_namespace(), buckets=1, epoch=0)
    frontier.add([UrlCandidate(f"{HOST}/{i}", HOST, 0) for i in range(300)], 1.0)
    lists = _keys(frontier, client, "u:*")
    assert [client.llen(k) for k in lists] == [128, 128, 44]
    assert {client.type(k) for k in lists} == {"list"}


# Every field of a record, each with a value its neighbours' separators must not swallow.
FULL = {
    "state": "not_modified",
    "version": "12",
    "prio": "-2147483648",
    "depth": "3",
    "hops": "2",
    "src": "sitemap_entry",
    "hn": "41",
    "path": "/a path?q=1&r=|x|#",
    "attempts": "4",
    "lease": "~e7.b3.99",
    "epoch": "7",
    "reason": "http_status",
    "at": "1733500000.125",
    "etag": 'W/"a b|c"',
    "lm": "Sun, 06 Dec 2026 15:00:00 GMT",
    "ri": "3600.5",
    "nf": "1733503600.5",
    "lc": "1733400000.0",
    "ch": "ab" * 32,
    "cf": "weekly",
    "due": "1733503600.25",
    "cash": "0.125",
    "lp": "1.5",
}


def _round_trip(client: Any, frontier: RedisFrontier, record: dict[str, str]) -> dict[str, Any]:
    """``record`` through rec_encode and rec_decode (lua/_common.lua), as cjson sees it."""
    fields = [x for pair in record.items() for x in pair]
    body = (
        "local r = {}\nfor i = 2, #ARGV, 2 do r[ARGV[i]] = ARGV[i + 1] end\n"
        "return cjson.encode(rec_decode(rec_encode(r)))\n"
    )
    script = compose_script(body, frontier.front, frontier.buckets)
    prefix = frontier.key_prefix(0)
    return dict(json.loads(client.eval(script, 1, prefix + "st", prefix, *fields)))


def test_a_packed_record_keeps_every_field(client: Any) -> None:
    frontier = RedisFrontier(client, namespace=fresh_namespace(), buckets=1, epoch=0)
    assert _round_trip(client, frontier, FULL) == FULL
    # Fields left empty between set ones, and a record with only its last field.
    sparse = {k: v for i, (k, v) in enumerate(FULL.items()) if i % 3 == 0}
    assert _round_trip(client, frontier, sparse) == sparse
    assert _round_trip(client, frontier, {"lp": "2"}) == {"lp": "2"}
    # A state or source this codec has no letter for is kept as it is.
    odd = {"state": "gone", "src": "feed", "version": "1"}
    assert _round_trip(client, frontier, odd) == odd


def test_a_url_outside_its_host_key_and_a_hostile_validator(client: Any) -> None:
    """The record keeps a URL whole when it does not start with its host key, and drops a
    validator holding the record's separator instead of shifting the fields after it."""
    frontier = RedisFrontier(client, namespace=fresh_namespace(), buckets=1, epoch=0)
    odd = UrlCandidate("http://other.test:8080/x", HOST, 0)
    plain = UrlCandidate(f"{HOST}/page", HOST, 0)
    assert frontier.add([odd, plain], 1.0).added == 2
    assert url_record(frontier, odd.url, HOST)["url"] == odd.url  # type: ignore[index]
    lease = frontier.lease(1.0, 1, 60.0)[0]
    assert lease.kind is LeaseKind.ROBOTS
    record = RobotsRecord(HOST, 404, "allow_all", b"", 1.0, 1e12)
    assert frontier.complete_robots(lease, record, 1.0)
    lease = frontier.lease(2.0, 1, 60.0)[0]
    done = Completion(
        state="fetched", next_allowed_at=2.0, etag='"a\x1fb"', last_modified="Sun, 06 Dec 2026"
    )
    assert frontier.complete(lease, done, 2.0)
    (after,) = url_records(frontier, [lease.url_id])
    assert after is not None
    assert "etag" not in after
    got = {k: after[k] for k in ("url", "state", "lm", "lease", "at")}
    assert got == {
        "url": lease.url,
        "state": "fetched",
        "lm": "Sun, 06 Dec 2026",
        "lease": f"~{lease.lease_id}",
        "at": "2.0",
    }


def test_a_queued_priority_moves_without_decoding_the_rest(client: Any) -> None:
    """rec_requeued (in-links, a page's sink) rewrites the third field in place: the record
    decodes to the same fields with the moved priority, and nothing happens unless queued."""
    frontier = RedisFrontier(client, namespace=fresh_namespace(), buckets=1, epoch=0)
    body = (
        "local r = {}\nfor i = 3, #ARGV, 2 do r[ARGV[i]] = ARGV[i + 1] end\n"
        "local packed, moved = rec_requeued(rec_encode(r), function(p) return p + ARGV[2] end)\n"
        "if not packed then return false end\n"
        "return {cjson.encode(rec_decode(packed)), moved}\n"
    )
    script = compose_script(body, frontier.front, frontier.buckets)
    prefix = frontier.key_prefix(0)

    def move(record: dict[str, str], by: int) -> tuple[dict[str, str], str] | None:
        fields = [x for pair in record.items() for x in pair]
        reply = client.eval(script, 1, prefix + "st", prefix, by, *fields)
        return None if reply is None else (json.loads(reply[0]), reply[1])

    queued = {**FULL, "state": "queued", "prio": "7"}
    assert move(queued, -3) == ({**queued, "prio": "4"}, "4")
    short = {"state": "queued", "version": "1", "prio": "-12"}  # the priority is the last field
    assert move(short, -1) == ({**short, "prio": "-13"}, "-13")
    assert move({**queued, "state": "leased"}, -3) is None
    assert move({**queued, "state": "excluded"}, -3) is None
