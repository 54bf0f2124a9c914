"""Group commit: completions that finish in the same event-loop turn share one transaction.

A completion's cost is dominated by its commit, and fetch tasks tend to finish in bursts, so
batching them multiplies what one SQLite file can take without delaying anyone: the batch is
flushed on the next loop turn. Each WARC record is flushed before its completion is submitted,
so a crash with a batch pending is the same as a crash before commit (the URL is re-leased).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Protocol

from crawlspace.plans import Outcome
from crawlspace.records import Completion, Lease


class CompletingStore(Protocol):
    def complete(self, lease: Lease, completion: Completion, now: float) -> Outcome | None: ...

    def complete_many(
        self, items: Sequence[tuple[Lease, Completion]], now: float
    ) -> list[Outcome | None]: ...


class GroupCommitter:
    def __init__(self, store: CompletingStore, now: Callable[[], float]) -> None:
        self._store = store
        self._now = now
        self._pending: list[tuple[Lease, Completion, asyncio.Future[Outcome | None]]] = []
        self.batches = 0

    async def submit(self, lease: Lease, completion: Completion) -> Outcome | None:
        """What the store did with ``completion``; None when it refused it as stale."""
        future: asyncio.Future[Outcome | None] = asyncio.get_running_loop().create_future()
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append((lease, completion, future))
        return await future

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        self.batches += 1
        now = self._now()
        try:
            results = self._store.complete_many([(lease, c) for lease, c, _ in batch], now)
        except Exception:  # isolate the one completion that fails
            for lease, completion, future in batch:
                try:
                    committed = self._store.complete(lease, completion, now)
                except Exception as exc:  # delivered to the task that owns it
                    if not future.done():
                        future.set_exception(exc)
                else:
                    if not future.done():
                        future.set_result(committed)
            return
        for (_, _, future), committed in zip(batch, results, strict=True):
            if not future.done():  # its task may have been cancelled meanwhile
                future.set_result(committed)
