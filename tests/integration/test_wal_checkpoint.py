"""WAL checkpoints from a thread (store/sqlite/checkpoint.py), on real SQLite files."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from crawlspace.records import UrlCandidate
from crawlspace.store.sqlite.store import SqliteStore


def _links(start: int, count: int) -> list[UrlCandidate]:
    return [
        UrlCandidate(f"http://h{i % 50}.test/p{i}", f"http://h{i % 50}.test", 1, 10)
        for i in range(start, start + count)
    ]


def _urls_in_main_file(db: Path, scratch: Path) -> int:
    """URLs readable from the database file alone, as if its WAL were lost: what checkpoints
    have copied into it."""
    scratch.mkdir(exist_ok=True)
    copy = scratch / "main-only.db"
    for path in scratch.iterdir():
        path.unlink()
    shutil.copyfile(db, copy)
    reader = sqlite3.connect(copy)
    try:
        return int(reader.execute("SELECT COUNT(*) FROM urls").fetchone()[0])
    except sqlite3.DatabaseError:  # no urls table copied yet
        return 0
    finally:
        reader.close()


def test_the_thread_copies_the_wal_into_the_file_without_the_writer(tmp_path: Path) -> None:
    # A few hundred WAL frames: far below wal_autocheckpoint, so the writer never checkpoints.
    (tmp_path / "inline").mkdir()
    (tmp_path / "threaded").mkdir()
    inline = SqliteStore(tmp_path / "inline" / "crawl.db")
    threaded = SqliteStore(tmp_path / "threaded" / "crawl.db", background_checkpoints=True)
    try:
        for store in (inline, threaded):
            assert store.add(_links(0, 2_000), 1.0).added == 2_000
        deadline = time.monotonic() + 20
        copied = 0
        while copied < 2_000 and time.monotonic() < deadline:
            time.sleep(0.05)
            copied = _urls_in_main_file(Path(threaded.path), tmp_path / "scratch")
        assert copied == 2_000
        assert _urls_in_main_file(Path(inline.path), tmp_path / "scratch") == 0
    finally:
        threaded.close()
        inline.close()


def test_close_stops_the_thread(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "crawl.db", background_checkpoints=True)
    store.add(_links(0, 10), 1.0)
    assert any(t.name == "crawlspace-checkpoint" for t in threading.enumerate())
    store.close()
    assert not any(t.name == "crawlspace-checkpoint" for t in threading.enumerate())


# A writer that reports every committed total, so the test knows what must survive the kill.
_WRITER = """
import sys
from crawlspace.records import UrlCandidate
from crawlspace.store.sqlite.store import SqliteStore
store = SqliteStore(sys.argv[1], background_checkpoints=True)
total = 0
for batch in range(400):  # bounded: the test kills it long before
    links = [UrlCandidate(f"http://h{i % 97}.test/p{i}", f"http://h{i % 97}.test", 1, 10)
             for i in range(total, total + 500)]
    total += store.add(links, 1.0).added
    print(total, flush=True)
store.close()
"""


def test_kill_during_background_checkpoints_loses_no_committed_url(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(db)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    committed = 0
    try:
        for line in child.stdout:
            committed = int(line)
            if committed >= 40_000:
                break
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
    assert committed >= 40_000, "the writer ended before the kill"
    reopened = SqliteStore(db)
    try:
        rows = reopened._db
        assert rows.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = int(rows.execute("SELECT COUNT(*) FROM urls").fetchone()[0])
        # Every total printed was committed; the kill may also have let one more batch commit.
        assert committed <= stored <= committed + 500
        queued = int(rows.execute("SELECT SUM(queued) FROM hosts").fetchone()[0])
        assert queued == stored
    finally:
        reopened.close()
