"""``DIR/crawl.log``: one line per visit that ended, as Heritrix keeps its crawl.log, and the same
line on the ``crawlspace.fetch`` logger (INFO) for a crawl that is not drawing a progress line.

A line is space-separated columns, ``-`` for none:

    2026-12-06T19:20:01.123Z 200 13456 http://example.org/a L text/html 12 fetched - -

time the visit ended (UTC), HTTP status, body bytes, URL, how it was found (S seed, L link,
R redirect, M sitemap, E a sitemap's entry, I a page's requisite (what it embeds), A a
parent directory (path_ascending), P robots.txt), content type, fetch milliseconds,
how the visit ended (fetched, redirected, not_modified, excluded, failed, queued: tried again
later), why (the reason the crawl records, e.g. robots, blocked_address, timeout) and, for an
error (status 400 or more, or failed), the page that led to it (Heritrix's "via"). A visit
that sent nothing (excluded before its fetch) has no status. Lines are written through a buffer
flushed at least once a second and at the crawl's end: a crash loses at most that second of
log, never state (crawl.db is the record; this file is for reading and for ``tail -f``).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import IO

from crawlspace.plans import Outcome
from crawlspace.records import Completion, Lease, RobotsRecord

__all__ = ["CrawlLog", "echoes", "fetch_log"]

FLUSH_SECONDS = 1.0
_HOPS = {
    "seed": "S",
    "link": "L",
    "redirect": "R",
    "sitemap": "M",
    "sitemap_entry": "E",
    "requisite": "I",
    "ascend": "A",
}
fetch_log = logging.getLogger("crawlspace.fetch")


def _utc(ts: float) -> str:
    whole = int(ts)
    second = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
    return f"{second}.{int((ts - whole) * 1000):03d}Z"


def _mime(content_type: str | None) -> str:
    """The media type alone (no parameters, no spaces: one column)."""
    mime = (content_type or "").split(";", 1)[0].strip()
    return mime.replace(" ", "") or "-"


class CrawlLog:
    """Appends to ``path``; ``echo``: also each line on the ``crawlspace.fetch`` logger."""

    def __init__(self, path: Path | str, *, echo: bool) -> None:
        self._file: IO[str] = open(path, "a", encoding="utf-8", buffering=64 * 1024)  # noqa: SIM115 -- closed by close()
        self._echo = echo
        self._flushed = time.monotonic()

    def visit(
        self,
        lease: Lease,
        completion: Completion,
        outcome: Outcome | None,
        now: float,
        via: str | None = None,
    ) -> None:
        """A page visit's end at ``now``, once committed (``outcome`` None: refused as stale,
        not logged); ``via``: an error's linking page."""
        if outcome is None:
            return
        fetch = completion.fetch
        hop = _HOPS.get(lease.source, "-")
        if fetch is None:
            cells = (f"{_utc(now)} - -", lease.url, hop, "- -")
        else:
            cells = (
                f"{_utc(fetch.fetched_at)} {fetch.status} {fetch.bytes}",
                lease.url,
                hop,
                f"{_mime(fetch.content_type)} {round(fetch.duration_ms)}",
            )
        end = f"{completion.state} {completion.reason or '-'} {via or '-'}"
        self._write(f"{' '.join(cells)} {end}")

    def robots(self, lease: Lease, record: RobotsRecord) -> None:
        """A robots.txt visit's end."""
        status = "-" if record.status is None else str(record.status)
        state = "fetched" if record.error is None else "failed"
        cells = (_utc(record.fetched_at), status, str(len(record.body)), lease.url, "P", "- -")
        self._write(f"{' '.join(cells)} {state} {record.error or record.outcome} -")

    def _write(self, line: str) -> None:
        if line.find("\n") >= 0:  # a URL never holds one (normalized); a reason might not
            line = line.replace("\n", " ")
        self._file.write(line + "\n")
        if self._echo:
            fetch_log.info("%s", line)
        now = time.monotonic()
        if now - self._flushed >= FLUSH_SECONDS:
            self._file.flush()
            self._flushed = now

    def close(self) -> None:
        self._file.close()


def echoes(progress: object | None) -> bool:
    """Whether each crawl.log line also goes to the log (INFO): not while a progress line is
    drawn on a terminal, which it would scroll away, unless -v asked for everything."""
    if not fetch_log.isEnabledFor(logging.INFO):
        return False
    drawn = bool(getattr(progress, "on_terminal", False))
    return not drawn or fetch_log.isEnabledFor(logging.DEBUG)
