"""Workers of a shared frontier tell each other which payloads they archived, about once a
second, so a payload another worker archived is written as a revisit record here too
(archive/captures.py remembers them; store/redis/captures.py carries them).

One round trip a second each way, off every page's path: a page's lookup stays in this
process's memory. A crawl of one process has no one to tell (its store has no capture log).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Final

from crawlspace.archive.captures import Captures
from crawlspace.errors import StoreIOError
from crawlspace.store.base import CaptureLog

__all__ = ["EVERY_SECONDS", "share_captures"]

EVERY_SECONDS: Final = 1.0
log = logging.getLogger("crawlspace.crawl.capture_sharing")


async def share_captures(
    captures: Captures, capture_log: CaptureLog, every: float = EVERY_SECONDS
) -> None:
    """Until cancelled: publish what this process archived in full, learn what the others did.
    Cancelled, it publishes what is left (the crawl's last second) before it ends."""
    captures.share()
    after: str | None = None
    try:
        while True:
            try:
                capture_log.publish(captures.fresh())
                theirs, after = capture_log.read(after, captures.size)
            except StoreIOError as exc:  # revisits are a saving, never a reason to stop
                log.warning("sharing captures with the other workers: %s", exc)
            else:
                captures.learn(theirs)
            await asyncio.sleep(every)
    finally:
        with contextlib.suppress(StoreIOError):
            capture_log.publish(captures.fresh())
