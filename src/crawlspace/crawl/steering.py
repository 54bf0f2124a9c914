"""The operator's commands, applied by the dispatcher: pause (no new leases; what is in flight
ends), resume, stop (the crawl ends as on SIGINT, resumable), and seeds added while it runs.
They come from the dashboard through the store's control channel (store/control.py), read at
most every ``EVERY_SECONDS``; a stop counts when it was asked after this run began.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Final

from crawlspace.errors import ConfigError, StoreIOError
from crawlspace.store.control import CrawlControl

__all__ = ["EVERY_SECONDS", "Steering"]

EVERY_SECONDS: Final = 0.5
log = logging.getLogger("crawlspace.crawl.steering")


class Steering:
    def __init__(self, control: CrawlControl | None, *, clear_pause: bool) -> None:
        """``clear_pause``: a run of one process starts unpaused (its operator started it);
        a worker joining a paused shared crawl stays paused with the others."""
        self._control = control
        self._started = time.time()
        self._last = 0.0
        self.paused = False
        self._stopping = False
        if control is not None and clear_pause and control.state().paused:
            log.info("the crawl was paused from the dashboard; this run starts it again")
            control.resume()

    def poll(
        self,
        now: float,
        *,
        add_seeds: Callable[[Sequence[str]], int],
        request_stop: Callable[[str], None],
    ) -> None:
        """Read the commands, at most every EVERY_SECONDS of ``now`` (a monotonic clock)."""
        if self._control is None or now - self._last < EVERY_SECONDS:
            return
        self._last = now
        try:
            state = self._control.state()
            seeds = self._control.take_seeds()
        except (StoreIOError, OSError) as exc:  # a control that cannot be read steers nothing
            log.warning("reading the dashboard's commands: %s", exc)
            return
        if state.paused != self.paused:
            log.warning("%s from the dashboard", "paused" if state.paused else "resumed")
            self.paused = state.paused
        if state.stop_asked_at is not None and state.stop_asked_at >= self._started:
            if not self._stopping:
                log.warning("stopping, as asked from the dashboard (run again to resume)")
                self._stopping = True
            request_stop("operator")
        if seeds:
            try:
                added = add_seeds(seeds)
            except ConfigError as exc:
                log.warning("seeds from the dashboard refused: %s", exc)
            else:
                log.warning("%d of %d seeds from the dashboard were new", added, len(seeds))

    def close(self) -> None:
        if self._control is not None:
            self._control.close()
