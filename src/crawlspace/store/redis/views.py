"""Read-side views of a shared Redis frontier: `stats --frontier` and `export --frontier`.

Nothing here writes (no worker epoch is taken). Frontier-wide totals come from the per-bucket
counters, one pipelined round trip per shard (``RedisFrontier.per_bucket``). URL counts by state
are summed server-side, a few of each bucket's URL record lists per script call
(lua/count_urls.lua). Records of URLs and hosts come from SCAN over the keyspace of every
master, never KEYS (which blocks a shard for the whole keyspace) and never a replica (which would
count each key twice); each batch of keys is read with one pipeline. The layout is documented in
store/redis/frontier.py.

SCAN visits every key that exists for the whole scan, in no particular order, and may return a
key twice if a shard resizes its table meanwhile: figures of a crawl that is still running are a
snapshot in motion, those of a finished crawl are exact.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import islice
from typing import Any

import redis
from redis.cluster import RedisCluster

from crawlspace.errors import ConfigError, StoreError, StoreIOError
from crawlspace.store.redis.codec import url_key
from crawlspace.store.redis.frontier import RedisFrontier, connect, stored_buckets

_BATCH = 500  # keys per SCAN call and per read pipeline
WHAT = ("urls", "events", "hosts")


@contextmanager
def frontier_view(
    url: str, *, namespace: str = "cs", buckets: int | None = None
) -> Iterator[RedisFrontier]:
    """The frontier of a crawl, opened for reading; Redis errors become a ``StoreError``.

    ``buckets`` defaults to the crawl's own count (``{ns}:buckets``); a different one is an error.
    """
    try:
        try:
            client = connect(url)
        except ValueError as exc:
            raise ConfigError(f"--frontier: {exc}") from None
        try:
            try:
                stored = stored_buckets(client.get(f"{namespace}:buckets"), f"{namespace}:buckets")
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
            if stored is None:
                raise ConfigError(
                    f"{url} holds no crawl in namespace {namespace!r} ({namespace}:buckets is not"
                    " set): check --namespace, or add seeds with `crawlspace seed` first"
                )
            if buckets is not None and buckets != stored:
                raise ConfigError(
                    f"--buckets {buckets}: the crawl in namespace {namespace!r} uses {stored};"
                    " leave --buckets out to use it"
                )
            frontier = RedisFrontier(
                client, namespace=namespace, buckets=stored, epoch=0, retry_seconds=5.0
            )
        except BaseException:
            client.close()
            raise
        try:
            yield frontier
        finally:
            frontier.close()
    except (
        redis.exceptions.RedisError,
        redis.exceptions.RedisClusterException,
        StoreIOError,
    ) as exc:
        raise StoreError(f"cannot read the frontier at {url}: {exc}") from exc


# -- iteration ----------------------------------------------------------------------------------


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


class _Keys:
    """Match and parse the per-bucket keys ``{ns:bN}:<kind>:<rest>`` of one namespace."""

    def __init__(self, namespace: str, kinds: str) -> None:
        self.pattern = f"{{{_glob_escape(namespace)}:b*}}:[{kinds}]:*"
        self._re = re.compile(rf"\{{{re.escape(namespace)}:b(\d+)\}}:([{kinds}]):(.*)", re.DOTALL)

    def parse(self, key: str) -> tuple[int, str, str] | None:
        """(bucket, kind, rest) of one of our keys; None for another namespace's look-alike."""
        m = self._re.fullmatch(key)
        return None if m is None else (int(m[1]), m[2], m[3])


def scan_batches(client: Any, pattern: str, batch: int = _BATCH) -> Iterator[list[str]]:
    """Keys matching ``pattern`` on every master, ``batch`` at a time (SCAN, never KEYS).

    A Redis Cluster splits its keyspace over its masters: redis-py's cluster ``scan_iter`` keeps
    one cursor per master and runs each to the end.
    """
    if isinstance(client, RedisCluster):
        keys = client.scan_iter(match=pattern, count=batch, target_nodes=RedisCluster.PRIMARIES)
    else:
        keys = client.scan_iter(match=pattern, count=batch)
    while chunk := list(islice(keys, batch)):
        yield chunk


def _read(
    frontier: RedisFrontier,
    kinds: str,
    reads: Callable[[Any, str, int, str, str], None],
    size: int = 1,
) -> Iterator[tuple[tuple[int, str, str], list[Any]]]:
    """For each of our keys of ``kinds``: its (bucket, kind, rest) and the replies of the ``size``
    commands ``reads(pipe, key, bucket, kind, rest)`` queued for it (a pipeline per SCAN batch)."""
    keys = _Keys(frontier.namespace, kinds)
    for batch in scan_batches(frontier.client, keys.pattern):
        parsed = [(key, p) for key in batch if (p := keys.parse(key)) is not None]
        if not parsed:
            continue
        pipe = frontier.client.pipeline(transaction=False)
        for key, (bucket, kind, rest) in parsed:
            reads(pipe, key, bucket, kind, rest)
        replies = pipe.execute()
        for i, (_, p) in enumerate(parsed):
            yield p, replies[i * size : (i + 1) * size]


def _int(value: str | None) -> int | None:
    return None if value in (None, "") else int(value)


def _float(value: str | None) -> float | None:
    return None if value in (None, "") else float(value)


# -- stats --------------------------------------------------------------------------------------


_PAGE = 500  # URL records per count_urls / read_urls call: well under a millisecond each
_WIDTH = 64  # buckets paged together: at most _WIDTH x _PAGE records in memory


def _pages(
    frontier: RedisFrontier, script: str, width: int, *lead: str
) -> Iterator[tuple[int, list[Any]]]:
    """(bucket, items) of every page of ``script`` (count_urls, or read_urls with ``lead``
    "scan") over every bucket: ``width`` buckets at a time, all pipelined in rounds until each
    one's cursor is 0."""
    for first in range(0, frontier.buckets, width):
        cursors = dict.fromkeys(range(first, min(first + width, frontier.buckets)), "0")
        while cursors:
            calls = [(bucket, (*lead, cursor, _PAGE)) for bucket, cursor in cursors.items()]
            replies = frontier.run_many(script, calls)
            for (bucket, _), (cursor, *items) in zip(calls, replies, strict=True):
                if str(cursor) == "0":
                    del cursors[bucket]
                else:
                    cursors[bucket] = str(cursor)
                yield bucket, items


def count_urls(frontier: RedisFrontier) -> Counter[str]:
    """URLs by state, and by ``state:reason`` for excluded and failed ones: summed server-side
    (lua/count_urls.lua), so the replies are a few counts, not a record per URL."""
    counts: Counter[str] = Counter()
    for _, pairs in _pages(frontier, "count_urls", frontier.buckets):
        for name, n in zip(pairs[::2], pairs[1::2], strict=True):
            counts[name] += int(n)
    return counts


def _host_reads(pipe: Any, key: str, bucket: int, kind: str, rest: str) -> None:
    pipe.hget(key, "fetched" if kind == "h" else "outcome")


def frontier_stats(frontier: RedisFrontier) -> dict[str, Any]:
    """The frontier-wide figures of a shared crawl (``crawlspace stats --frontier``)."""
    ns, client = frontier.namespace, frontier.client

    def total(key: str, command: Callable[[Any, str], object]) -> int:
        return sum(int(n or 0) for n in frontier.per_bucket(key, command))

    urls = count_urls(frontier)
    robots: Counter[str] = Counter()
    hosts = crawled = 0
    for (_, kind, _), (reply,) in _read(frontier, "hr", _host_reads):
        if kind == "h":
            hosts += 1
            crawled += int(reply or 0) > 0
        elif reply is not None:
            robots[reply] += 1
    counters = client.hgetall(f"{ns}:counters")
    return {
        "namespace": ns,
        "buckets": frontier.buckets,
        "urls": frontier.seen_urls(),
        "queued": frontier.queued(),
        "in_flight": frontier.in_flight(),
        "fetched": frontier.fetched_pages(),
        "hosts": hosts,
        "hosts_crawled": crawled,
        "hosts_ready": sum(
            total(f"ready:{band}", lambda p, k: p.zcard(k))
            for band in range(frontier.limits.front.count)
        ),
        "states": {k: n for k, n in sorted(urls.items()) if ":" not in k},
        "reasons": {k: n for k, n in sorted(urls.items()) if ":" in k},
        "rejections": {
            name.removeprefix("rejected."): int(n)
            for name, n in sorted(counters.items())
            if name.startswith("rejected.")
        },
        "robots": dict(sorted(robots.items())),
        "events": total("events", lambda p, k: p.xlen(k)),
        # Planned revisits not yet due (--continuous, lua/promote.lua).
        "revisits_scheduled": total("due", lambda p, k: p.zcard(k)),
        "dedup": {
            name.removeprefix("dedup."): int(n)
            for name, n in sorted(counters.items())
            if name.startswith("dedup.")
        },
        # The crawl-wide page and byte budgets' counts (crawl/budget.py, lua/budget.lua).
        "budget": {
            name: int(n)
            for name, n in sorted(client.hgetall(f"{{{ns}:budget}}:st").items())
            if name in ("pages", "bytes")
        },
        "seed_hosts": int(client.scard(f"{ns}:seeds")),
        # Worker epochs taken so far: one per worker (or seed) process ever started.
        "epochs": int(client.get(f"{ns}:epoch") or 0),
        # Completions whose links' replication was not confirmed in time (store/redis/wait.py).
        "wait_short": int(counters.get("wait.short", 0)),
        # Lease grants given back because no replica confirmed them in time (frontier.py).
        "wait_lease_short": int(counters.get("wait.lease_short", 0)),
    }


# -- export records -----------------------------------------------------------------------------


def iter_frontier_records(frontier: RedisFrontier, what: str) -> Iterator[dict[str, Any]]:
    """Records of ``what`` (urls, events or hosts); every record of a kind has the same keys."""
    readers = {"urls": _urls, "events": _events, "hosts": _hosts}
    if what not in readers:
        raise ConfigError(
            f"--what {what!r} with --frontier: choose one of {', '.join(WHAT)}; fetches, links"
            " and duplicates are in each worker's own DIR/crawl.db (`crawlspace export DIR`)"
        )
    return readers[what](frontier)


def _urls(frontier: RedisFrontier) -> Iterator[dict[str, Any]]:
    """Bucket by bucket, from each bucket's URL records (store/redis/lua/read_urls.lua)."""
    for bucket, page in _pages(frontier, "read_urls", _WIDTH, "scan"):
        for text in page:
            f: dict[str, str] = json.loads(text)
            yield {
                "url": f["url"],
                "host_key": f["host"],
                "url_id": int(f["id"]),
                "bucket": bucket,
                "depth": _int(f.get("depth")),
                "state": f.get("state"),
                "reason": f.get("reason") or None,
                "version": _int(f.get("version")),
                "attempts": _int(f.get("attempts")) or 0,
                "source": f.get("src"),
                "priority": _float(f.get("prio")),
                "redirect_hops": _int(f.get("hops")),
                "etag": f.get("etag") or None,
                "last_modified": f.get("lm") or None,
                "updated_at": _float(f.get("at")),
                # A finished URL keeps "~" and the lease that ended it (lua/complete.lua).
                "lease": f.get("lease") if f.get("state") == "leased" else None,
                "epoch": _int(f.get("epoch")),
            }


def _events(frontier: RedisFrontier) -> Iterator[dict[str, Any]]:
    """Bucket by bucket, each bucket's stream in order, read ``_BATCH`` entries at a time."""
    client = frontier.client
    lengths = frontier.per_bucket("events", lambda p, k: p.xlen(k))
    for bucket in (b for b, n in enumerate(lengths) if n):
        prefix = frontier.key_prefix(bucket)
        start = "-"
        while entries := client.xrange(prefix + "events", start, "+", count=_BATCH):
            found = frontier.run("read_urls", bucket, "ids", *(f["id"] for _, f in entries))
            urls = [json.loads(text)["url"] if text else None for text in found]
            for (entry_id, f), url in zip(entries, urls, strict=True):
                yield {
                    "event_id": f"{bucket}-{entry_id}",  # stream ids are unique per bucket only
                    "url": url,
                    "url_id": int(f["id"]),
                    "version": int(f["version"]),
                    "state": f["state"],
                    "reason": f.get("reason") or None,
                    "lease": f["lease"],
                    "epoch": int(f["epoch"]),
                    # The stream id starts with the shard's clock in ms when the event was added.
                    "created_at": int(entry_id.split("-")[0]) / 1000,
                }
            start = "(" + entries[-1][0]  # exclusive: after the last entry read


def _hosts(frontier: RedisFrontier) -> Iterator[dict[str, Any]]:
    def reads(pipe: Any, key: str, bucket: int, kind: str, host: str) -> None:
        prefix = frontier.key_prefix(bucket)
        pipe.hgetall(key)
        pipe.hgetall(f"{prefix}r:{host}")
        pipe.zcard(f"{prefix}q:{host}")
        pipe.hgetall(f"{prefix}n:{host}")

    for (bucket, _, host), (h, r, queued, notes) in _read(frontier, "h", reads, size=4):
        body = base64.b64decode(r["body"]) if r.get("body") is not None else None
        yield {
            "host_key": host,
            "bucket": bucket,
            "queued": int(queued),
            "in_flight": _int(h.get("inflight")) or 0,
            "admitted": _int(h.get("admitted")) or 0,
            "fetched": _int(h.get("fetched")) or 0,
            "next_allowed_at": _float(h.get("next")),
            "backoff_level": _int(h.get("backoff")) or 0,
            "failures": _int(h.get("failures")) or 0,
            "robots_status": _int(r.get("status")),
            "robots_outcome": r.get("outcome"),
            "robots_fetched_at": _float(r.get("fetched_at")),
            "robots_expires_at": _float(r.get("expires_at")),
            "robots_sha256": None if body is None else hashlib.sha256(body).hexdigest(),
            "robots_attempts": _int(r.get("attempts")),
            "robots_error": r.get("error") or None,
            # What policy learned about the host (its notes, e.g. frontier/learned.py), raw:
            # the read side (ops/export.py) says what they mean.
            "notes": notes,
        }


def url_record(
    frontier: RedisFrontier, url: str, host_key: str, *, client: Any = None
) -> dict[str, str] | None:
    """A URL's record as its bucket keeps it (lua/read_urls.lua: the fields named in the
    layout, store/redis/__init__.py, with id, url and host), or None if the frontier never saw
    it (for audits and tests). ``client``: read it there (a replica, say), not on the
    frontier's own connection."""
    args = ("fps", frontier.fingerprint(url))
    bucket = frontier.bucket(host_key)
    if client is None:
        (text,) = frontier.run("read_urls", bucket, *args)
    else:
        (text,) = frontier.read_on(client, "read_urls", bucket, *args)
    return dict(json.loads(text)) if text else None


def url_records(frontier: RedisFrontier, url_ids: list[int]) -> list[dict[str, str] | None]:
    """The records of these URL ids (``url_record``), in their order; None for an unknown id."""
    by_bucket: dict[int, list[int]] = {}
    for url_id in url_ids:
        by_bucket.setdefault(url_id % frontier.buckets, []).append(url_id)
    found: dict[int, dict[str, str] | None] = {}
    for bucket, ids in by_bucket.items():  # one call per bucket, not per id
        texts = frontier.run("read_urls", bucket, "ids", *(url_key(i) for i in ids))
        found.update(zip(ids, (dict(json.loads(t)) if t else None for t in texts), strict=True))
    return [found[url_id] for url_id in url_ids]


def host_queue(frontier: RedisFrontier, host_key: str, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` URLs queued on ``host_key``, in the order its leases take them
    (priority, then admission), as ``url_record`` gives them."""
    texts = frontier.run("read_urls", frontier.bucket(host_key), "queue", host_key, limit)
    return [dict(json.loads(text)) for text in texts]


def url_state(frontier: RedisFrontier, url: str, host_key: str) -> tuple[str, str | None] | None:
    """A URL's state and reason, or None if the frontier never saw it (for audits and tests)."""
    record = url_record(frontier, url, host_key)
    if record is None:
        return None
    return record["state"], record.get("reason") or None


def completion_events(frontier: RedisFrontier) -> list[dict[str, str]]:
    """Every completion event of every bucket (for audits and tests; O(events))."""
    events: list[dict[str, str]] = []
    for bucket in range(frontier.buckets):
        events.extend(f for _, f in frontier.client.xrange(frontier.key_prefix(bucket) + "events"))
    return events
