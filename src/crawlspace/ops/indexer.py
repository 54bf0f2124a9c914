"""`crawlspace index`: keep a search index (ops/search_index.py) current with one or more crawls'
index feeds (ops/feed.py): the feed of `crawlspace crawl`'s directory, or of each worker's, or
a shared frontier's feed streams (store/redis/feed_stream.py) through a consumer group.

Each pass reads every feed from where the index last committed, in batches of ``batch`` records,
one transaction each. With ``follow`` it keeps polling until ``stop`` is set, then makes one last
pass, so what a crawl wrote before it ended is in the index when this returns.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from crawlspace.errors import ConfigError
from crawlspace.ops.feed import feed_records, open_feed
from crawlspace.ops.search_index import SearchIndex

__all__ = [
    "IndexRun",
    "default_index_path",
    "following_index",
    "index_feeds",
    "index_stream",
    "stop_with_parent",
]

BATCH = 500
POLL_SECONDS = 1.0
# How long a crawl waits at its end for the indexer's last pass before it stops waiting.
LAST_PASS_SECONDS = 120.0


@dataclass(slots=True)
class IndexRun:
    records: int = 0
    documents: int = 0


def default_index_path(directories: Sequence[Path], into: Path | None) -> Path:
    """Where the index goes: ``into``, else the one crawl directory's ``index.db``."""
    if into is not None:
        return into
    if len(directories) != 1:
        raise ConfigError("several crawl directories feed one index: say where with --into FILE")
    return directories[0] / "index.db"


def index_feeds(
    directories: Sequence[Path],
    index_path: Path,
    *,
    follow: bool = False,
    stop: threading.Event | None = None,
    batch: int = BATCH,
    poll: float = POLL_SECONDS,
) -> IndexRun:
    """Apply every feed's records not yet in the index; with ``follow``, until ``stop``."""
    run = IndexRun()
    stop = stop or threading.Event()
    feeds: dict[str, sqlite3.Connection] = {}
    with SearchIndex(index_path) as index:
        try:
            while True:
                last_pass = stop.is_set() or not follow
                applied = 0
                for directory in directories:
                    source = str(directory.resolve())
                    if source not in feeds:
                        if not (directory / "crawl.db").exists() and follow and not last_pass:
                            continue  # a crawl about to start: its feed appears soon
                        feeds[source] = open_feed(directory)
                    applied += _catch_up(index, source, feeds[source], batch)
                run.records += applied
                if last_pass:
                    break
                if not applied:
                    stop.wait(poll)
        finally:
            for db in feeds.values():
                db.close()
        run.documents = index.documents()
    return run


def index_stream(
    url: str,
    index_path: Path,
    *,
    namespace: str = "cs",
    buckets: int | None = None,
    follow: bool = False,
    stop: threading.Event | None = None,
    batch: int = BATCH,
    poll: float = POLL_SECONDS,
) -> IndexRun:
    """Apply a shared frontier's feed streams: each batch committed to the index, then
    acknowledged to the consumer group (a batch given again after a crash changes nothing)."""
    from crawlspace.store.redis.feed_stream import FeedStream
    from crawlspace.store.redis.views import frontier_view

    run = IndexRun()
    stop = stop or threading.Event()
    with frontier_view(url, namespace=namespace, buckets=buckets) as frontier:
        stream = FeedStream(frontier)
        per_bucket = max(10, batch // frontier.buckets)
        with SearchIndex(index_path) as index:
            while True:
                last_pass = stop.is_set() or not follow
                entries = stream.read(per_bucket)
                if entries:
                    run.records += index.apply(None, [e.record for e in entries])
                    stream.ack(entries)
                elif last_pass:
                    break
                else:
                    stop.wait(poll)
            run.documents = index.documents()
    return run


def _catch_up(index: SearchIndex, source: str, feed: sqlite3.Connection, batch: int) -> int:
    total = 0
    while True:
        applied = index.apply(source, feed_records(feed, index.position(source), batch))
        total += applied
        if applied < batch:
            return total


@contextmanager
def following_index(directory: Path) -> Iterator[None]:
    """`crawlspace index DIR --follow` in a child process while the body runs (a crawl): it
    indexes on a core of its own, and the crawl loop does none of it. At the end it is asked to
    make its last pass and waited for. Killed with the crawl (SIGKILL), it notices its parent is
    gone and stops by itself; the next run's indexer resumes where it committed."""
    command = [sys.executable, "-m", "crawlspace.cli", "index", str(directory), "--follow", "-q"]
    child = subprocess.Popen([*command, "--with-parent", str(os.getpid())])
    try:
        yield
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=LAST_PASS_SECONDS)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def stop_with_parent(parent: int, stop: threading.Event, poll: float = POLL_SECONDS) -> None:
    """Set ``stop`` once process ``parent`` is no longer this one's parent (it exited or was
    killed), from a daemon thread."""

    def watch() -> None:
        while not stop.wait(poll):
            if os.getppid() != parent:
                stop.set()

    threading.Thread(target=watch, name="crawlspace-parent-watch", daemon=True).start()
