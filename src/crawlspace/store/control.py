"""The operator's commands to a running crawl (pause, resume, stop, more seeds), carried from the
dashboard to the crawl's processes: a small SQLite file beside a crawl's own (``control.db``:
`crawlspace serve` runs in another process and reads crawl.db read-only), or two Redis keys of a
shared frontier, which every worker reads.

What it carries is state, not messages, so it needs no delivery guarantee: a pause holds until a
resume; a stop holds for every process that started before it was asked (a process started
later is a new run); each requested seed is handed to one process once. The crawl polls it
(crawl/steering.py); nothing here is on a page's path.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

__all__ = ["CONTROL_FILE", "ControlState", "CrawlControl", "FileControl", "RedisControl"]

# The file beside crawl.db that a crawl directory's commands go through.
CONTROL_FILE: Final = "control.db"

# Seeds one process takes per poll, at most.
SEEDS_PER_TAKE: Final = 1000


@dataclass(frozen=True, slots=True)
class ControlState:
    paused: bool = False
    stop_asked_at: float | None = None  # when a stop was last asked (Unix time)


class CrawlControl(Protocol):
    def state(self) -> ControlState: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def stop(self) -> None: ...

    def add_seeds(self, urls: Sequence[str]) -> None: ...

    def take_seeds(self) -> list[str]:
        """Seeds asked for and not yet taken by any process (each is handed out once)."""
        ...

    def close(self) -> None: ...


class FileControl:
    """``DIR/control.db``: written by the dashboard, read by the crawl. Opened at first use (a
    dashboard may start before its crawl has made the directory)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA busy_timeout = 5000")
            db.execute("CREATE TABLE IF NOT EXISTS state (name TEXT PRIMARY KEY, value REAL)")
            db.execute("CREATE TABLE IF NOT EXISTS seeds (id INTEGER PRIMARY KEY, url TEXT)")
            self._conn = db
        return self._conn

    def state(self) -> ControlState:
        values = dict(self._db.execute("SELECT name, value FROM state").fetchall())
        return ControlState(bool(values.get("paused")), values.get("stop"))

    def _set(self, name: str, value: float) -> None:
        self._db.execute("INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)", (name, value))

    def pause(self) -> None:
        self._set("paused", 1.0)

    def resume(self) -> None:
        self._set("paused", 0.0)

    def stop(self) -> None:
        self._set("stop", time.time())

    def add_seeds(self, urls: Sequence[str]) -> None:
        self._db.executemany("INSERT INTO seeds (url) VALUES (?)", [(url,) for url in urls])

    def take_seeds(self) -> list[str]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            rows = self._db.execute(
                "SELECT id, url FROM seeds ORDER BY id LIMIT ?", (SEEDS_PER_TAKE,)
            ).fetchall()
            if rows:
                self._db.execute("DELETE FROM seeds WHERE id <= ?", (rows[-1][0],))
        finally:
            self._db.execute("COMMIT")
        return [str(url) for _, url in rows]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class RedisControl:
    """A shared frontier's ``{ns}:control`` hash (paused, stop) and ``{ns}:control:seeds``
    list: every worker obeys the one, each seed goes to one worker."""

    def __init__(self, client: Any, namespace: str) -> None:
        self._client = client
        self._state = f"{namespace}:control"
        self._seeds = f"{namespace}:control:seeds"

    def state(self) -> ControlState:
        values = self._client.hgetall(self._state)
        stop = values.get("stop")
        return ControlState(values.get("paused") == "1", float(stop) if stop else None)

    def pause(self) -> None:
        self._client.hset(self._state, "paused", "1")

    def resume(self) -> None:
        self._client.hset(self._state, "paused", "0")

    def stop(self) -> None:
        self._client.hset(self._state, "stop", repr(time.time()))

    def add_seeds(self, urls: Sequence[str]) -> None:
        if urls:
            self._client.rpush(self._seeds, *urls)

    def take_seeds(self) -> list[str]:
        taken = self._client.lpop(self._seeds, SEEDS_PER_TAKE)
        return list(taken or [])

    def close(self) -> None:
        pass  # the frontier's client: its owner closes it
