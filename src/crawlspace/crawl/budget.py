"""The crawl-wide page and byte budgets (``--max-pages``, ``--max-bytes``), the same on every
engine: a single crawl and any number of workers on a shared frontier stop at the same totals.

A page is a terminal fetch (a fetch row; a retried attempt is not one). Before leasing, the crawl
*reserves* a hold per lease it asks for, under the cap: pages done plus every hold, across every
process, never exceed ``max_pages``, so the crawl stops exactly there. Each lease gives its hold
back when its task ends, turned into a page or not (a robots.txt lease, a retry, a release).
Bytes count every response downloaded, retries included; at ``max_bytes`` nothing more is leased
and the fetches in flight finish, as in one process.

The store keeps the counters (``reserve_pages`` and ``settle_pages``: in memory for the one
owner of a crawl.db, in one Redis slot for a shared frontier); this module decides what counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from crawlspace.records import Lease, LeaseKind

__all__ = ["BudgetCounters", "CrawlBudget"]


class BudgetCounters(Protocol):
    def reserve_pages(self, n: int, cap: int) -> tuple[int, int]:
        """Hold up to ``n`` more pages while pages done + all holds <= ``cap``: (granted, done)."""
        ...

    def settle_pages(self, released: int, done: int, nbytes: int) -> tuple[int, int]:
        """Give back ``released`` holds, count ``done`` pages and ``nbytes`` bytes:
        (pages done, bytes downloaded), crawl-wide."""
        ...


class CrawlBudget:
    def __init__(self, store: BudgetCounters, max_pages: int | None, max_bytes: int | None):
        self._store = store
        self.max_pages = max_pages
        self.max_bytes = max_bytes
        self._held: set[str] = set()  # lease ids holding a page reservation
        self._spent: dict[str, tuple[int, int]] = {}  # lease id -> (pages, bytes) committed
        self.reached: str | None = None  # "max_pages" / "max_bytes" once a budget is spent
        if max_bytes is not None:
            self._check(*store.settle_pages(0, 0, 0))

    @property
    def active(self) -> bool:
        return self.max_pages is not None or self.max_bytes is not None

    def reserve(self, free: int) -> int:
        """How many of ``free`` fetch slots may be leased now."""
        if self.max_pages is None or free <= 0:
            return max(free, 0)
        granted, done = self._store.reserve_pages(free, self.max_pages)
        self._check(done, None)
        return granted

    def granted(self, leases: Sequence[Lease], reserved: int) -> None:
        """After a lease call: page leases keep their holds, the rest are given back."""
        if self.max_pages is None:
            return
        pages = [lease.lease_id for lease in leases if lease.kind is LeaseKind.PAGE]
        self._held.update(pages)
        unused = reserved - len(pages)
        if unused > 0:
            self._check(*self._store.settle_pages(unused, 0, 0))

    def spent(self, lease: Lease, page: bool, nbytes: int) -> None:
        """A committed fetch of ``lease``: a page (terminal) or a retried attempt's bytes."""
        if self.active:
            pages, total = self._spent.get(lease.lease_id, (0, 0))
            self._spent[lease.lease_id] = (pages + int(page), total + nbytes)

    def ended(self, lease: Lease) -> None:
        """The lease's task is over: its hold goes back, what it spent is counted."""
        if not self.active:
            return
        held = int(lease.lease_id in self._held)
        self._held.discard(lease.lease_id)
        pages, nbytes = self._spent.pop(lease.lease_id, (0, 0))
        if held or pages or nbytes:
            self._check(*self._store.settle_pages(held, pages, nbytes))

    def _check(self, pages: int, nbytes: int | None) -> None:
        if self.max_pages is not None and pages >= self.max_pages:
            self.reached = "max_pages"
        elif self.max_bytes is not None and nbytes is not None and nbytes >= self.max_bytes:
            self.reached = "max_bytes"
