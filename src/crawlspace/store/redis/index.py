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

A worker's marks are not written at once: they wait for its next round trip that runs a script
(a read of the index among them) and go out in it (scripts.py ``Rider``; ``flush_riders`` at
close), with the crawl-wide counters' increments that wait here too. A completion thus costs no
extra round trip for its marks, and the worker that wrote them reads them back at once. Other
workers see them a moment later (this worker's next call, milliseconds apart); a kill -9 loses
them like a lost reply, which the repairs below bound.

A worker that dies between the two calls, a lost reply or a failover can leave a mark that hides
a ready host or a lease. Two repairs bound that: every ``lease()``/``expire_leases()`` call sweeps a
slice of buckets so each worker re-reads every bucket at least once per ``sweep_seconds`` of its
crawl clock (``sweep``), and ``next_ready_at`` confirms an empty index with a full read before it
tells a worker the crawl is over (``resync``). So a ready host waits at most ``sweep_seconds`` for
a mark it lost, and no worker stops while work is left.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
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


def merged(old: Mark, new: Mark) -> Mark:
    """Two updates of one bucket as one, as lua/index.lua would leave them applied in turn: the
    newer version's marks over the older's, band by band (an update sends the bands it
    changed; '*' leaves a mark as it was)."""
    if new[0] < old[0]:
        old, new = new, old
    bands = dict(zip(old[1][0::2], old[1][1::2], strict=True))
    for band, mark in zip(new[1][0::2], new[1][1::2], strict=True):
        if mark != "*":
            bands[band] = mark
    lease = old[2] if new[2] == "*" else new[2]
    due = old[3] if new[3] == "*" else new[3]
    return new[0], tuple(x for pair in bands.items() for x in pair), lease, due


class BucketIndex:
    """The ``{ns:idx}`` keys of one frontier, and this worker's sweep over its buckets."""

    def __init__(self, scripts: ScriptRunner, sweep_seconds: float) -> None:
        self._f = scripts
        self.prefix = f"{{{scripts.namespace}:idx}}:"
        self.sweep_seconds = sweep_seconds
        self._swept_at: float | None = None
        # Workers start their sweeps at different buckets, so together they cover more of them.
        self._cursor = random.randrange(scripts.buckets)
        self._marks: Marks = {}  # waiting for the next round trip, merged per bucket
        self._counts: dict[str, dict[str, int]] = {}  # counters hash -> increments waiting
        scripts.riders.append(self)

    # -- writes: they wait for the next round trip ---------------------------------------------

    def apply(self, marks: Marks, *, forced: bool = False) -> None:
        """Copy bucket marks here; unforced marks older than those in place are dropped. They
        wait for the next round trip (``forced`` ones, a repair's, are written now, after
        them)."""
        if forced:
            if marks:
                self._read(lambda pipe: self._f.queue(pipe, "index", *self._index_call(marks, 1)))
            return
        waiting = self._marks
        for bucket, mark in marks.items():
            before = waiting.get(bucket)
            waiting[bucket] = mark if before is None else merged(before, mark)

    def count(self, key: str, counts: dict[str, int]) -> None:
        """Add ``counts`` to the counters hash ``key`` with the next round trip (a crawl's
        figures: a kill -9 loses at most this worker's last moment of them)."""
        waiting = self._counts.setdefault(key, {})
        for name, n in counts.items():
            waiting[name] = waiting.get(name, 0) + n

    # -- as a Rider (scripts.py): the waiting writes go out with the next round trip ------------

    def waiting(self) -> bool:
        return bool(self._marks or self._counts)

    def queue_waiting(self, pipe: Any) -> int:
        queued = 0
        if self._marks:
            self._f.queue(pipe, "index", *self._index_call(self._marks, 0))
            queued += 1
        for key, named in self._counts.items():
            for name, n in named.items():
                pipe.hincrby(key, name, n)
                queued += 1
        return queued

    def sent(self) -> None:
        self._marks, self._counts = {}, {}

    def _index_call(self, marks: Marks, forced: int) -> tuple[str, list[object]]:
        args: list[object] = [self.prefix, forced]
        for bucket, (version, ready, lease, due) in marks.items():
            args += [bucket, version, len(ready) // 2, *ready, lease, due]
        return self.prefix + "ver", args

    def _read(self, command: Callable[[Any], object]) -> list[Any]:
        """The replies of the commands ``command(pipe)`` adds, in one round trip with the
        waiting writes (a marks' repeat is harmless: they carry versions; a counter's, after a
        failover lost its reply, is a figure off by one page, never a URL)."""
        return self._f.round_trip(command)

    def apply_replies(self, buckets: Iterable[int], replies: Iterable[Sequence[Any]]) -> list[Any]:
        """Apply the index updates of ``[update, result]`` script replies; return the results."""
        results: list[Any] = []
        for bucket, (update, result) in zip(buckets, replies, strict=True):
            parsed = parse_update(update)
            if parsed is not None:  # merged with what waits (replies sharing a bucket too)
                self.apply({bucket: parsed})
            results.append(result)
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
        key = self.prefix + "ver"
        return list(self._read(lambda pipe: self._f.queue(pipe, "front", key, args))[0])

    def due_lease_buckets(self, at: str) -> list[int]:
        return self.buckets_before("leases", at)

    def buckets_before(self, which: str, at: str) -> list[int]:
        """The buckets whose mark of ``which`` ("leases", "due") is <= ``at``."""
        key = self.prefix + which
        (found,) = self._read(lambda pipe: pipe.zrangebyscore(key, "-inf", at))
        return [int(b) for b in found]

    def first(self, *which: str) -> list[float | None]:
        """The earliest mark of each of ``which`` ("ready", "leases", "due") over all buckets
        (None: no mark), in one round trip."""

        def read(pipe: Any) -> None:
            for name in which:
                if name == "ready":
                    args = (self.prefix, "+inf", 0, self._f.front.aging)
                    self._f.queue(pipe, "front", self.prefix + "ver", args)
                else:
                    pipe.zrange(self.prefix + name, 0, 0, withscores=True)

        out: list[float | None] = []
        for name, reply in zip(which, self._read(read), strict=True):
            if name == "ready":
                out.append(float(reply[0]) if reply[0] else None)
            else:
                out.append(float(reply[0][1]) if reply else None)
        return out

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
