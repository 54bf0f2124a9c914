"""URLs the embedded store need not look up again, remembered in memory and bounded.

A navigation link is on every page of its site, and a page's completion used to look each of
its links up in ``urls`` up to three times (the keyed budgets' new-URL test, the seen test, the
in-link UPDATE) and insert each excluded link again: on python3.11-doc ~70 index lookups a page,
most of them for the same few hundred URLs. Two facts about a URL never change once true,
because rows of ``urls`` are never deleted and their URL never rewritten:

- its row exists and is not excluded for depth (only such a row can change on a shallower
  link: store/sqlite/enqueue.py), so the seen test settles it;
- its in-link count is past the cap (counts only grow: store/sqlite/priority.py).

``RecentUrls`` remembers the URLs a fact was last found true for. It is a cache, not the seen
set: a URL it forgot is looked up as before (and learned again), so it only needs to hold the
links that repeat. What a transaction learns is taken back if it rolls back: a row inserted in
a transaction that rolls back never existed.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import Final

__all__ = ["RECENT_URLS", "RecentUrls"]

# URLs remembered: ~2 MB at most, mostly strings the completions' links share. A site's
# navigation is tens to hundreds of URLs.
RECENT_URLS: Final = 16_384


class RecentUrls(dict[str, None]):
    """The URLs learned last, oldest first; ``url in recent`` is a plain dict lookup (a link's
    test on the crawl's loop). When a commit leaves more than ``size``, the oldest go."""

    def __init__(self, size: int = RECENT_URLS) -> None:
        super().__init__()
        self._size = size
        self._uncommitted: list[str] = []

    def learn(self, urls: Iterable[str]) -> None:
        """True inside the current transaction: known at once, kept if it commits."""
        for url in urls:
            if url not in self:
                self[url] = None
                self._uncommitted.append(url)

    def commit(self) -> None:
        self._uncommitted.clear()
        excess = len(self) - self._size
        if excess > 0:
            for url in list(islice(self, excess)):
                del self[url]

    def rollback(self) -> None:
        for url in self._uncommitted:
            self.pop(url, None)
        self._uncommitted.clear()
