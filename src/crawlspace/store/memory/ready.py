"""The memory engine's ready hosts: Mercator's front queues over its back queues.

One heap of hosts per front band (bands.py: the band of the host's best queued
URL), keyed by (next_allowed_at, seq); a lease takes the best rank among the band heads. A host
has at most one live entry: it remembers the seq and band of that entry (``heap_seq``,
``heap_band``), and any entry with another seq is stale and dropped when it surfaces (lazy
deletion), so moving a host costs one push.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from crawlspace.bands import FrontQueues
from crawlspace.store.memory.records import MemHost

# Rebuild a lazily-deleted heap once it holds this many times more entries than live ones.
COMPACT_FACTOR = 4
COMPACT_MIN = 4096


class ReadyHosts:
    def __init__(self, front: FrontQueues, next_seq: Callable[[], int]) -> None:
        self._front = front
        self._next_seq = next_seq
        self._heaps: list[list[tuple[float, int, MemHost]]] = [[] for _ in range(front.count)]

    def pop_best(self, now: float) -> MemHost | None:
        """The best-ranked host ready at ``now``, taken out of the heaps; None if none is."""
        best = self._front.merge(self._heads(now), 1)
        if not best:
            return None
        host = heapq.heappop(self._heaps[best[0]])[2]
        host.heap_seq = -1
        return host

    def next_ready_at(self) -> float | None:
        return min((at for _, at, _ in self._heads(float("inf"))), default=None)

    def place(self, host: MemHost, band: int, hosts: int) -> None:
        """Give ``host`` its one live entry in ``band`` (kept if it is there already)."""
        if host.heap_seq >= 0 and host.heap_band == band:
            return  # already in place; callers drop() it after any next_allowed_at change
        seq = self._next_seq()
        host.heap_seq, host.heap_band = seq, band
        heapq.heappush(self._heaps[band], (host.next_allowed_at, seq, host))
        if sum(map(len, self._heaps)) > COMPACT_FACTOR * hosts + COMPACT_MIN:
            for heap in self._heaps:
                heap[:] = [e for e in heap if e[1] == e[2].heap_seq]
                heapq.heapify(heap)

    @staticmethod
    def drop(host: MemHost) -> None:
        """Forget the host's entry (it goes stale); ``place`` gives it a new one if due."""
        host.heap_seq = -1

    def _heads(self, now: float) -> list[tuple[int, float, int]]:
        """(band, ready_at, band) of each band's first live host ready at ``now``."""
        heads = []
        for band, heap in enumerate(self._heaps):
            while heap and heap[0][1] != heap[0][2].heap_seq:
                heapq.heappop(heap)
            if heap and heap[0][0] <= now:
                heads.append((band, heap[0][0], band))
        return heads
