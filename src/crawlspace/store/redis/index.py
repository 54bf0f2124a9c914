"""The crawl-wide bucket index: which buckets may have work, without reading every bucket.

Keys under their own hash tag ``{ns:idx}`` (one slot, never touched by a bucket script):

    {ns:idx}:ready:F zset   bucket -> the earliest ready time of its hosts in front band F (the
                            first score of {ns:bN}:ready:F, bands.py)
    {ns:idx}:leases  zset   bucket -> its earliest lease expiry (the first score of {ns:bN}:leases)
    {ns:idx}:due     zset   bucket -> its earliest due revisit (the first score of {ns:bN}:due)
    {ns:idx}:ver     hash   bucket -> version of the marks above

A bucket script cannot write here (another slot: CROSSSLOT on a cluster), so every write script
returns its bucket's new marks with a version (``index_update`` in lua/_common.lua) and the client
copies them here in a second call (lua/index.lua), dropping marks older than those in place. The
index is a hint, never the authority: the lease and expire scripts re-check their bucket, and
their replies correct a mark that sent the client to a bucket with nothing to do.

A worker that dies between the two calls, a lost reply or a failover can leave a mark that hides
a ready host or a lease. Two repairs bound that: every ``lease()``/``expire_leases()`` call sweeps a
slice of buckets so each worker re-reads every bucket at least once per ``sweep_seconds`` of its
crawl clock (``sweep``), and ``next_ready_at`` confirms an empty index with a full read before it
tells a worker the crawl is over (``resync``). So a ready host waits at most ``sweep_seconds`` for
a mark it lost, and no worker stops while work is left.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from crawlspace.store.redis.scripts import ScriptRunner

# Buckets re-read per sweep step: one pipelined call, whatever the bucket count.
SWEEP_CHUNK = 32
# bucket -> (version, ready marks, lease mark, due mark), marks as Redis formats scores, '' for
# none; the ready marks are (front band, mark) pairs, flat, for the bands that changed.
Mark = tuple[int, tuple[str, ...], str, str]
Marks = dict[int, Mark]


class Peek(NamedTuple):
    """A bucket read atomically: its marks (None when not wanted: hosts are ready and the read
    was not full), its hosts ready now and the ranks of the first of them in each band."""

    marks: Mark | None
    ready: int
    ranks: tuple[float, ...]

    def ready_times(self) -> list[float]:
        return [float(at) for at in self.marks[1][1::2] if at] if self.marks else []


def parse_update(reply: Sequence[Any]) -> Mark | None:
    """A script's ``index_update`` reply: {} (marks unchanged) or {version, ready, lease, due}."""
    if not reply:
        return None
    return int(reply[0]), ready_pairs(reply[1]), str(reply[2]), str(reply[3])


def ready_pairs(pairs: Sequence[Any]) -> tuple[str, ...]:
    """A script's (front band, ready mark) pairs, flat, as strings."""
    return tuple(str(x) for x in pairs)


class BucketIndex:
    """The ``{ns:idx}`` keys of one frontier, and this worker's sweep over its buckets."""

    def __init__(self, scripts: ScriptRunner, sweep_seconds: float) -> None:
        self._f = scripts
        self.prefix = f"{{{scripts.namespace}:idx}}:"
        self.sweep_seconds = sweep_seconds
        self._swept_at: float | None = None
        # Workers start their sweeps at different buckets, so together they cover more of them.
        self._cursor = random.randrange(scripts.buckets)

    # -- writes -----------------------------------------------------------------------------

    def apply(self, marks: Marks, *, forced: bool = False) -> None:
        """Copy bucket marks here; unforced marks older than those in place are dropped."""
        if not marks:
            return
        args: list[object] = [self.prefix, int(forced)]
        for bucket, (version, ready, lease, due) in marks.items():
            args += [bucket, version, len(ready) // 2, *ready, lease, due]
        self._f.run_key("index", self.prefix + "ver", args)

    def apply_replies(self, buckets: Iterable[int], replies: Iterable[Sequence[Any]]) -> list[Any]:
        """Apply the index updates of ``[update, result]`` script replies; return the results."""
        marks: Marks = {}
        results: list[Any] = []
        for bucket, (update, result) in zip(buckets, replies, strict=True):
            parsed = parse_update(update)
            # Replies of one batch that share a bucket: the newest version wins here too.
            if parsed is not None and (bucket not in marks or marks[bucket][0] < parsed[0]):
                marks[bucket] = parsed
            results.append(result)
        self.apply(marks)
        return results

    # -- reads ------------------------------------------------------------------------------

    def ready_buckets(self, at: str, limit: int) -> list[tuple[int, float]]:
        """Up to ``limit`` buckets with a host ready at ``at``, best-ranked host first, each
        with that host's rank (bands.py)."""
        found = self._front(at, limit)[1:]
        front = self._f.front
        return [
            (int(found[i]), front.rank(int(found[i + 1]), float(found[i + 2])))
            for i in range(0, len(found), 3)
        ]

    def _front(self, at: str, limit: int) -> list[Any]:
        args = (self.prefix, at, limit, self._f.front.aging)
        return list(self._f.run_key("front", self.prefix + "ver", args))

    def due_lease_buckets(self, at: str) -> list[int]:
        return self.buckets_before("leases", at)

    def buckets_before(self, which: str, at: str) -> list[int]:
        """The buckets whose mark of ``which`` ("leases", "due") is <= ``at``."""
        key = self.prefix + which
        found = self._f.retrying(lambda: self._f.client.zrangebyscore(key, "-inf", at))
        return [int(b) for b in found]

    def first(self, which: str) -> float | None:
        """The earliest mark of ``which`` ("ready", "leases", "due") over all buckets, or None."""
        if which == "ready":
            earliest = self._front("+inf", 0)[0]
            return float(earliest) if earliest else None
        key = self.prefix + which
        first = self._f.retrying(lambda: self._f.client.zrange(key, 0, 0, withscores=True))
        return float(first[0][1]) if first else None

    def peek(
        self,
        buckets: Sequence[int],
        at: str,
        limit: int,
        *,
        full: bool = False,
        cutoff: float | None = None,
    ) -> list[Peek]:
        """Each bucket read atomically (lua/peek.lua): with ``limit`` the ranks
        (bands.py) of its first ``limit`` hosts ready at ``at`` in each band,
        none ranked after ``cutoff``; without, its number of hosts ready at ``at``; and its
        marks when wanted. ``full`` reads every band instead of the bucket's cached marks."""
        front = self._f.front
        bound = "" if cutoff is None else repr(cutoff)
        args = (at, limit, int(full), bound, front.aging)
        replies = self._f.run_many("peek", [(b, args) for b in buckets])
        peeks = []
        for n, v, r, lm, d, *ready in replies:
            ranks = tuple(
                front.rank(int(band), float(score))
                for band, scores in zip(ready[::2], ready[1::2], strict=True)
                for score in str(scores).split()
            )
            marks = None if int(v) < 0 else (int(v), ready_pairs(r), str(lm), str(d))
            peeks.append(Peek(marks, int(n), ranks))
        return peeks

    # -- repairs ----------------------------------------------------------------------------

    def resync(self, buckets: Sequence[int], at: str) -> list[Peek]:
        """Re-read ``buckets`` and write their marks whatever the versions in place: this repairs
        a mark that a lost update left behind or a failover rolled back (a newer update racing
        with this write can be undone by it; the next sweep repairs that too)."""
        peeks = self.peek(buckets, at, 0, full=True)
        self.apply(
            {b: p.marks for b, p in zip(buckets, peeks, strict=True) if p.marks}, forced=True
        )
        return peeks

    def sweep(self, now: float, at: str) -> None:
        """Re-read the next slice of buckets, so that all of them are re-read at least once per
        ``sweep_seconds`` of ``now``: a constant cost per step, whatever the bucket count."""
        total = self._f.buckets
        if self._swept_at is None or now < self._swept_at:
            self._swept_at = now
            return
        chunk = min(SWEEP_CHUNK, total)
        interval = self.sweep_seconds * chunk / total
        steps = int((now - self._swept_at) / interval) if interval > 0 else total
        if steps <= 0:
            return
        self._swept_at += steps * interval if interval > 0 else 0.0
        count = min(total, steps * chunk)
        buckets = [(self._cursor + i) % total for i in range(count)]
        self._cursor = (self._cursor + count) % total
        self.resync(buckets, at)
