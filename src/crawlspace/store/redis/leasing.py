"""Leasing on the shared frontier: the best-ranked ready hosts of all buckets (the front bands,
bands.py), found through the bucket index (index.py) and granted by one lease
script per bucket, pipelined; with replicas, only grants the replicas confirmed.

The index ranks buckets by their best ready host; a peek of those buckets returns the ready
times of their first hosts in each band, which the client ranks, so each bucket grants exactly
its share of the ``limit`` best hosts of the crawl. The peek reads the first buckets of that
order first and the rest only when they could hold one of those hosts (``_decided``).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from crawlspace.errors import StoreIOError
from crawlspace.records import Lease, LeaseKind
from crawlspace.store.base import FrontierLimits
from crawlspace.store.redis.codec import num
from crawlspace.store.redis.index import BucketIndex
from crawlspace.store.redis.scripts import TRANSIENT
from crawlspace.store.redis.wait import ReplicationBarrier
from crawlspace.urls import robots_url

__all__ = ["grant", "ready_hosts"]

LEASE_FIELDS = 22  # lua/lease.lua: the fields of one granted lease


# The first peek covers twice the index positions the last lease drew from, at least this many;
# a second peek reads the rest only when the first cannot decide (``_decided``).
MIN_PEEK = 8


class Spread:
    """How far down the index's order of buckets this worker's last lease drew hosts from."""

    def __init__(self) -> None:
        self.used: int | None = None  # None: no lease yet, so the first peeks every bucket

    def width(self, found: int) -> int:
        if self.used is None:
            return found
        return min(found, max(MIN_PEEK, 2 * self.used))


Ranked = list[tuple[float, int, int]]  # (host rank, bucket's position in the index, bucket)

_T = TypeVar("_T")


class Granting(Protocol):
    """What leasing uses of its frontier (store/redis/frontier.py): the limits, the scripts,
    the bucket index, this worker's epoch, spread and replication barrier, and giving a lease
    back."""

    limits: FrontierLimits
    index: BucketIndex
    spread: Spread
    barrier: ReplicationBarrier
    epoch: int
    namespace: str
    buckets: int
    client: Any

    def bucket(self, host_key: str) -> int: ...

    def key_prefix(self, bucket: int) -> str: ...

    def retrying(self, call: Callable[[], _T], *, retried: list[bool] | None = None) -> _T: ...

    def run_many(self, name: str, calls: Sequence[tuple[int, Sequence[object]]]) -> list[Any]: ...

    def release(self, lease: Lease, now: float, not_before: float | None = None) -> bool: ...


def _ready_counts(frontier: Granting, now: float, limit: int) -> dict[int, int]:
    """How many leases each bucket grants, for the ``limit`` best-ranked hosts ready at ``now``
    (bands.py). The index gives the buckets whose best hosts rank first; the
    ``limit`` best hosts of the crawl all rank no worse than the last of those buckets' best
    (``limit`` distinct hosts do), so a peek of those buckets up to that rank finds them all.

    Most leases draw from the first few of those buckets (hosts that became ready together
    cluster in the buckets ranked first), so the first peek reads only as many as the last
    lease needed, with margin; the rest are read only when they could hold a winner."""
    at = num(now)
    ranked = frontier.index.ready_buckets(at, limit)
    if not ranked:
        return {}
    cutoff = ranked[-1][1] if len(ranked) == limit else None
    buckets = [b for b, _ in ranked]
    width = frontier.spread.width(len(ranked))
    hosts = _peek(frontier, buckets[:width], 0, at=at, limit=limit, cutoff=cutoff)
    if width < len(ranked) and not _decided(hosts, limit, ranked[width][1]):
        hosts += _peek(frontier, buckets[width:], width, at=at, limit=limit, cutoff=cutoff)
    # Ties keep the index's order of buckets (FrontQueues.merge).
    best = sorted(hosts, key=lambda t: (t[0], t[1]))[:limit]
    counts = Counter(b for _, _, b in best)
    frontier.spread.used = 1 + max((i for _, i, _ in best), default=0)
    return {b: counts[b] for b in buckets if counts[b]}


def _peek(
    frontier: Granting,
    buckets: list[int],
    start: int,
    *,
    at: str,
    limit: int,
    cutoff: float | None,
) -> Ranked:
    """The ranks of the ready hosts of ``buckets``, the index's from position ``start`` on; a
    bucket the index sent us to in vain gets its marks corrected."""
    peeks = frontier.index.peek(buckets, at, limit, cutoff=cutoff)
    frontier.index.apply({b: p.marks for b, p in zip(buckets, peeks, strict=True) if p.marks})
    return [
        (rank, start + i, b)
        for i, (b, p) in enumerate(zip(buckets, peeks, strict=True))
        for rank in p.ranks
    ]


def _decided(hosts: Ranked, limit: int, next_best: float) -> bool:
    """Whether the buckets peeked so far hold the ``limit`` best hosts: every host of a later
    bucket ranks no better than that bucket's best (``next_best``, from the index) and loses a
    tie to every peeked bucket, so ``limit`` peeked hosts ranked no worse than it come first."""
    return sum(1 for rank, _, _ in hosts if rank <= next_best) >= limit


def ready_hosts(frontier: Granting, now: float) -> int:
    at = num(now)
    buckets = [b for b, _ in frontier.index.ready_buckets(at, frontier.buckets)]
    return sum(p.ready for p in frontier.index.peek(buckets, at, 0))


def grant(frontier: Granting, now: float, limit: int, lease_seconds: float) -> list[Lease]:
    frontier.index.sweep(now, num(now))
    if limit <= 0:
        return []
    calls: list[tuple[int, Sequence[object]]] = []
    expires_at = now + lease_seconds
    head = (num(expires_at), frontier.epoch, frontier.limits.max_in_flight_per_host)
    share, aging = frontier.limits.revisit_share, frontier.limits.front.aging
    for bucket, take in _ready_counts(frontier, now, limit).items():
        # One lease per ready host in a pass; a host with spare tokens waits its turn.
        calls.append((bucket, (num(now), take, *head, bucket, share, aging)))
    if not calls:
        return []
    replies = frontier.run_many("lease", calls)
    leases: list[Lease] = []
    for fields in frontier.index.apply_replies((b for b, _ in calls), replies):
        for i in range(0, len(fields), LEASE_FIELDS):
            leases.append(_parse(frontier, fields[i : i + LEASE_FIELDS], expires_at))
    if frontier.barrier.replicas > 0 and leases:
        return _confirmed(frontier, leases, now)
    return leases


def _confirmed(frontier: Granting, leases: list[Lease], now: float) -> list[Lease]:
    """The leases whose grant has reached the replicas; the others are given back unused.

    Replication is asynchronous: a master that dies right after granting a host's token may
    be replaced by a replica that never saw the grant and hands the token to another worker
    while this one's request is still running, two requests at once on one host. A lease
    is fetched only once its bucket's master confirmed that the replicas have it (``WAIT``,
    store/redis/wait.py). An unconfirmed grant is released if its master still answers, and
    otherwise left to expire; its URL stays queued either way."""
    keys = {
        lease.lease_id: f"{frontier.key_prefix(frontier.bucket(lease.host_key))}st"
        for lease in leases
    }
    short = frontier.barrier.unconfirmed(set(keys.values()))
    if not short:
        return leases
    kept: list[Lease] = []
    for lease in leases:
        if keys[lease.lease_id] not in short:
            kept.append(lease)
            continue
        # If the master is gone, the grant expires (or was lost with it).
        with contextlib.suppress(*TRANSIENT, StoreIOError):
            frontier.release(lease, now)
    key = f"{frontier.namespace}:counters"
    frontier.retrying(
        lambda: frontier.client.hincrby(key, "wait.lease_short", len(leases) - len(kept))
    )
    return kept


def _parse(frontier: Granting, f: Sequence[str], expires_at: float) -> Lease:
    kind, lease_id, host_key, url, url_id, version, attempt, depth, hops, etag, lm, src = f[:12]
    robots = kind == LeaseKind.ROBOTS.value
    return Lease(
        kind=LeaseKind.ROBOTS if robots else LeaseKind.PAGE,
        lease_id=lease_id,
        host_key=host_key,
        url=robots_url(host_key) if robots else url,
        url_id=int(url_id),
        version=int(version),
        attempt=int(attempt),
        depth=int(depth),
        redirect_hops=int(hops),
        expires_at=expires_at,
        etag=etag or None,
        last_modified=lm or None,
        epoch=frontier.epoch,
        host_backoff=int(f[12]),
        host_failures=int(f[13]),
        source=src,
        revisit_interval=float(f[14]) if f[14] else None,
        content_hash=f[15] or None,
        changefreq=f[16] or None,
        cash=float(f[17] or 0.0),
        lambda_paid=float(f[18] or 0.0),
        priority=int(float(f[19] or 0)),
        linked_at=float(f[20]) if f[20] else None,
        via_id=int(f[21]) if f[21] else None,
    )
