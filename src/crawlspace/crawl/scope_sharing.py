"""Seeds another process added widen this process's scope (workers of a shared frontier).

The scope starts from the seeds' hosts (discovery/scope.py). On one process every seed comes
through it (``Crawler.add_seeds``: the command line, the dashboard). On a shared frontier a seed
may come through another worker's dashboard or `crawlspace seed` while the workers run; without
this, the links of that seed's pages would be out of scope on every worker but the one that
added it. The store keeps a revision of the seeds (``Store.scope_revision``), read about once a
second; when it moves, the seeds are read again and the new ones join the scope (the parse
workers get the wider scope with their next page, crawl/stages.py).
"""

from __future__ import annotations

import logging
from typing import Final, Protocol

from crawlspace.discovery.scope import Scope

__all__ = ["SharedScope"]

log = logging.getLogger("crawlspace.crawl")

EVERY_SECONDS: Final = 1.0


class SeedSource(Protocol):
    def scope_seeds(self) -> list[str]: ...

    def scope_revision(self) -> int: ...


class SharedScope:
    def __init__(
        self,
        scope: Scope,
        seeds: SeedSource,
        known: list[str],
        revision: int,
        *,
        shared: bool = True,
    ) -> None:
        """``scope`` was built from ``known``, read after ``revision`` (so a seed added in
        between moves the revision again and is read at the first refresh). ``shared``
        False: one process, whose seeds all come through it; nothing to read."""
        self._shared = shared
        self._scope = scope
        self._seeds = seeds
        self._known = set(known)
        self._revision = revision
        self._last = float("-inf")

    def leased(self, url: str, now: float) -> None:
        """A lease of ``url`` is about to be visited. If this process's scope does not cover
        it, another process's did: a seed was added elsewhere a moment ago (the URL, or the
        page that linked it), so the seeds are read again now, before the page's links are
        judged against the scope (the periodic look could come a second late)."""
        if self._shared and self._scope.reason(url) is not None:
            self.refresh(now, force=True)

    def refresh(self, now: float, *, force: bool = False) -> int:
        """At most every EVERY_SECONDS of ``now`` (a monotonic clock), or now when ``force``:
        the seeds added elsewhere since the last look, into the scope; returns how many."""
        if not self._shared or (not force and now - self._last < EVERY_SECONDS):
            return 0
        self._last = now
        revision = self._seeds.scope_revision()
        if revision == self._revision:
            return 0
        self._revision = revision
        new = [seed for seed in self._seeds.scope_seeds() if seed not in self._known]
        for seed in new:
            self._scope.add_seed(seed)
            self._known.add(seed)
        if new:
            log.info("%d seed hosts added by another process joined the scope", len(new))
        return len(new)
