"""URLs the embedded store need not look up again, remembered in memory and bounded.

A navigation link is on every page of its site, and a page's completion used to look each of
its links up in ``urls`` up to three times (the keyed budgets' new-URL test, the seen test, the
in-link UPDATE) and insert each excluded link again: on python3.11-doc ~70 index lookups a page,
most of them for the same few hundred URLs. Two facts about a URL never change once true,
because rows of ``urls`` are never deleted and their URL never rewritten:

- its row exists and is not excluded for depth (only such a row can change on a shallower
  link: store/sqlite/enqueue.py), so the seen test settles it;
- its in-link count is past the cap (counts only grow: store/sqlite/priority.py).

``RecentUrls`` remembers the URLs a fact was last seen true for. It is a cache, not the seen
set: a URL it forgot is looked up as before, so it only needs to hold the links that repeat.
What a transaction learns is kept apart until it commits: a row inserted in a transaction that
rolls back never existed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

__all__ = ["RECENT_URLS", "RecentUrls"]

# URLs a generation holds: two generations are at most ~2 x 8,192 URLs, ~2 MB of strings the
# completions' links share. A site's navigation is tens to hundreds of URLs.
RECENT_URLS: Final = 8192


class RecentUrls:
    """A bounded set of URLs in two generations: when the newer fills it becomes the older and
    the oldest is dropped; a URL found in the older is carried into the newer (so the links that
    keep repeating stay)."""

    def __init__(self, size: int = RECENT_URLS) -> None:
        self._size = size
        self._newer: set[str] = set()
        self._older: set[str] = set()
        self._pending: set[str] = set()

    def __len__(self) -> int:
        return len(self._newer | self._older | self._pending)

    def __contains__(self, url: str) -> bool:
        if url in self._newer or url in self._pending:
            return True
        if url in self._older:
            self._newer.add(url)  # a committed fact: safe to carry at any time
            self._rotate_when_full()
            return True
        return False

    def learn(self, urls: Iterable[str]) -> None:
        """True inside the current transaction: known at once, remembered if it commits."""
        self._pending.update(urls)

    def commit(self) -> None:
        if self._pending:
            self._newer |= self._pending
            self._pending = set()
            self._rotate_when_full()

    def rollback(self) -> None:
        self._pending = set()

    def _rotate_when_full(self) -> None:
        if len(self._newer) >= self._size:
            self._older, self._newer = self._newer, set()
