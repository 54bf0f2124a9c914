"""Live terminal progress for long crawls (rich), refreshed at most a few times a second."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.text import Text

if TYPE_CHECKING:
    from crawlspace.crawl.crawler import Crawler


class CrawlProgress:
    """One status line: pages, pages/s, frontier size, ready hosts, in flight, errors."""

    REFRESH_SECONDS = 0.25

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._live = Live(
            Text("starting..."), console=self.console, transient=False, auto_refresh=False
        )
        self._started = time.monotonic()
        self._last = 0.0

    @property
    def on_terminal(self) -> bool:
        """Whether the line is drawn in place on a terminal (crawl.log lines would scroll it)."""
        return bool(self.console.is_terminal)

    def __enter__(self) -> CrawlProgress:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(None, None, None)
        if not self.console.is_terminal:
            # Off a terminal the last status line has no line end of its own.
            self.console.line()

    def update(self, crawler: Crawler, in_flight: int, *, final: bool = False) -> None:
        """Redraw the line, at most every REFRESH_SECONDS; ``final``: now, with the crawl's
        last figures (so the line left behind agrees with the summary)."""
        now = time.monotonic()
        if now - self._last < self.REFRESH_SECONDS and not final:
            return
        self._last = now
        elapsed = max(now - self._started, 1e-9)
        store = crawler.store
        line = Text.assemble(
            ("pages ", "bold"),
            f"{crawler.pages_done:,}  ",
            (f"{crawler.pages_done / elapsed:,.1f}/s  ", "cyan"),
            ("frontier ", "bold"),
            f"{store.queued():,}  ",
            ("hosts ready ", "bold"),
            f"{store.ready_hosts(crawler.clock.now()):,}  ",
            ("in flight ", "bold"),
            f"{in_flight}  ",
            ("errors ", "bold"),
            (f"{crawler.errors}", "red" if crawler.errors else ""),
        )
        self._live.update(line, refresh=True)
