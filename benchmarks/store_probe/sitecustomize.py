"""The store's side of a page, for ``store_cost.py``: imported at start by every Python process of
a crawl it runs (this folder is put first on their PYTHONPATH), inert unless
``CRAWLSPACE_STORE_PROBE`` names a file, and active only in the crawl process.

It times the CPU the loop's thread spends in the store's two transactions of a page, the group
commit (``complete_many``) and the lease round (``lease``), by ``time.thread_time``: a thread the
kernel took off its core for the parse workers is not charged for the wait, as wall time would
be. With ``CRAWLSPACE_STORE_PROBE_SQL`` set it counts instead the SQL statements the loop's
connection runs, by kind (literals and ``IN`` lists folded; a trigger's run counts its statement
again, as SQLite's trace reports it): counting costs the loop CPU, so a run counts or times,
never both. Written as JSON at exit.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import sys
import threading
import time
from collections import Counter
from typing import Any

_OUT = os.environ.get("CRAWLSPACE_STORE_PROBE")
_LITERALS = re.compile(r"'[^']*'|\b\d+(?:\.\d+)?\b")
_IN_LIST = re.compile(r"IN \((?:\?,)*\?\)")
_SPACES = re.compile(r"\s+")


def kind(sql: str) -> str:
    """A statement's kind: its text with literals as ``?`` and an ``IN`` list as ``IN (…)``."""
    folded = _IN_LIST.sub("IN (…)", _LITERALS.sub("?", sql))
    return _SPACES.sub(" ", folded).strip()[:90]


def _crawl_process() -> None:
    import sqlite3

    from crawlspace.store.sqlite.store import SqliteStore

    statements: Counter[str] = Counter()
    cpu: dict[str, float] = {}
    calls: Counter[str] = Counter()
    loop_thread = threading.get_ident()
    connect = sqlite3.connect

    def count(sql: str) -> None:
        statements[kind(sql)] += 1

    def traced_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db: sqlite3.Connection = connect(*args, **kwargs)
        if threading.get_ident() == loop_thread:  # not the WAL checkpointer's own connection
            db.set_trace_callback(count)
        return db

    if os.environ.get("CRAWLSPACE_STORE_PROBE_SQL"):
        sqlite3.connect = traced_connect  # type: ignore[assignment]

    def timed(name: str) -> None:
        wrapped = getattr(SqliteStore, name)

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            began = time.thread_time()
            try:
                return wrapped(self, *args, **kwargs)
            finally:
                cpu[name] = cpu.get(name, 0.0) + time.thread_time() - began
                calls[name] += 1

        setattr(SqliteStore, name, call)

    for name in ("complete_many", "lease"):
        timed(name)

    def write() -> None:
        with open(str(_OUT), "w", encoding="utf-8") as out:
            json.dump({"statements": statements, "cpu": cpu, "calls": calls}, out)

    atexit.register(write)


if _OUT and sys.orig_argv[1:4] == ["-m", "crawlspace.cli", "crawl"]:
    _crawl_process()
