"""WAL checkpoints from a thread of their own, off the writer's path.

In WAL mode every commit appends its pages to ``crawl.db-wal``; a checkpoint copies them into
the database file and, with ``synchronous=NORMAL``, syncs both files. SQLite's automatic
checkpoint runs inside the COMMIT that crosses ``wal_autocheckpoint`` frames, so the writer (the
crawl loop's group commit) waits for the copy and for the disk to take ~80 MB of random pages.
Measured on a 10-million-URL frontier: that was a third of the time of enqueueing new URLs.

This thread runs ``PRAGMA wal_checkpoint(PASSIVE)`` over its own connection instead: PASSIVE
never blocks the writer or readers, and SQLite releases the GIL while it copies and syncs. The
writer keeps its own automatic checkpoint as the backstop: if this thread falls behind or stops,
the WAL still restarts once every frame is copied. Durability is SQLite's own protocol either way:
a crash in the middle of a checkpoint leaves the WAL intact, and the next opener finishes it.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import Final

__all__ = ["WalCheckpointer"]

log = logging.getLogger("crawlspace.store")

# A pass every quarter of a second. Each copies what the commits since the last one wrote, so a
# page the commits keep rewriting (a host's row, an index's last page, the counters) is copied
# and synced once a pass rather than about once a commit: passes every 10 ms (as before) copied
# nearly every commit's pages and synced both files ~100 times a second, and a crawl took 3-7%
# more CPU for it (benchmarks/README.md, "Twelfth session"). The WAL grows by what a quarter
# second of commits writes (a few MB at a crawl's rate) before the writer starts it over.
_PASS_SECONDS: Final = 0.25


class WalCheckpointer:
    """Checkpoints ``path``'s WAL in a daemon thread until :meth:`stop`."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="crawlspace-checkpoint", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop after the pass in progress, if any (a pass is bounded by the WAL's size)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self.path, isolation_level=None)
        except sqlite3.Error as exc:
            log.warning("background checkpoints off: cannot open %s: %s", self.path, exc)
            return
        try:
            db.execute("PRAGMA synchronous=NORMAL")
            while not self._stop.wait(_PASS_SECONDS):
                db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:
            # The writer's automatic checkpoint still runs; only the overlap is lost. One line:
            # a full disk stops the crawl itself with its own clear error, and this one is
            # not a bug to debug with a traceback.
            log.warning("background checkpoints stopped on %s: %s", self.path, exc)
        finally:
            db.close()
