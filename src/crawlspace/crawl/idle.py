"""When a crawl is over: the dispatcher found nothing queued, ready or held.

One process: that reading is the crawl's state, so it is over. A worker of a shared frontier:
only once it found so twice, ``IDLE_CONFIRM`` seconds apart, with the crawl's pages and URLs
unchanged between. Its two reads (nothing ready, no lease held) are not one snapshot: another
worker's completion landing between them, its lease ended and its new URLs queued, looked like
the end to a worker with nothing to do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

__all__ = ["IDLE_CONFIRM", "IdleCheck"]

IDLE_CONFIRM: Final = 0.25


class IdleCheck:
    def __init__(self, progress: Callable[[], tuple[int, int] | None]) -> None:
        """``progress``: the crawl's (pages, URLs) on a shared frontier; None on one process."""
        self._progress = progress
        self._since: tuple[float, tuple[int, int]] | None = None

    def busy(self) -> None:
        """The dispatcher found work: an idle reading starts over."""
        self._since = None

    def confirmed(self) -> bool:
        """Whether the crawl is over, given that the dispatcher found it idle now."""
        progress = self._progress()
        if progress is None:
            return True
        now = time.monotonic()
        if self._since is None or self._since[1] != progress:
            self._since = (now, progress)
            return False
        return now - self._since[0] >= IDLE_CONFIRM
