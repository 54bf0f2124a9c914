"""The memory engine's planned revisits: a heap of (next_fetch_at, seq, url_id), deleted lazily.

A URL's entry is live while its ``next_fetch_at`` still equals the entry's time; a URL revisited
or rescheduled since leaves a stale entry that is dropped when it surfaces.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from crawlspace.bands import REVISIT_BAND
from crawlspace.lifecycle import REVISITABLE, UrlState, check_revisit
from crawlspace.records import RevisitPlan
from crawlspace.store.memory.records import MemUrl


class DueRevisits:
    def __init__(self, urls: list[MemUrl | None], next_seq: Callable[[], int]) -> None:
        self._urls = urls  # url_id -> record, the frontier's own list
        self._next_seq = next_seq
        self._heap: list[tuple[float, int, int]] = []

    def schedule(self, url: MemUrl, plan: RevisitPlan) -> None:
        url.revisit_interval = plan.interval
        url.next_fetch_at = plan.next_fetch_at
        if plan.content_hash is not None:
            url.content_hash = plan.content_hash
        heapq.heappush(self._heap, (plan.next_fetch_at, self._next_seq(), url.url_id))

    def due_now(self, url: MemUrl, now: float) -> None:
        """A planned revisit moved to ``now`` (a sitemap's lastmod says the URL changed)."""
        url.next_fetch_at = now
        heapq.heappush(self._heap, (now, self._next_seq(), url.url_id))

    def take(self, now: float, limit: int) -> list[MemUrl]:
        """Up to ``limit`` URLs due by ``now``, earliest first, each made a new visit: queued
        again (version bumped, attempts from zero) in its host's revisit band. The caller
        puts them in their host queues."""
        taken: list[MemUrl] = []
        heap = self._heap
        while heap and heap[0][0] <= now and len(taken) < limit:
            at, _, url_id = heapq.heappop(heap)
            url = self._urls[url_id]
            if url is None or url.next_fetch_at != at:
                continue  # rescheduled since: a stale entry
            url.next_fetch_at = None
            if url.state.value not in REVISITABLE:
                continue
            check_revisit(url.state.value)
            url.state = UrlState.QUEUED
            url.reason = None
            url.version += 1
            url.attempts = 0
            base = url.priority + REVISIT_BAND if url.priority < 0 else url.priority
            url.priority = base - REVISIT_BAND
            taken.append(url)
        return taken

    def next_at(self) -> float | None:
        heap = self._heap
        while heap:
            at, _, url_id = heap[0]
            url = self._urls[url_id]
            if url is not None and url.next_fetch_at == at:
                return at
            heapq.heappop(heap)
        return None
