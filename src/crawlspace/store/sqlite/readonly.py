"""Opening a crawl.db for reading only (stats, dashboard, export, telemetry, the Bloom rebuild)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

__all__ = ["connect_read_only", "read_meta", "read_only_uri"]


def read_only_uri(path: Path | str) -> str:
    """An SQLite URI for ``path`` opened read-only. The path is percent-encoded: a "?" or "#"
    in a directory name would otherwise end the file name, and SQLite would open (and create)
    another file."""
    return Path(path).resolve().as_uri() + "?mode=ro"


def connect_read_only(path: Path | str) -> sqlite3.Connection:
    """Open a crawl.db that may be in use, read-only. A WAL reader needs the -shm file next to
    it, so a directory we cannot write is opened immutable instead (nobody writes there then:
    a crawl needs that directory writable)."""
    db = sqlite3.connect(read_only_uri(path), uri=True)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()  # SQLite opens lazily
    except sqlite3.OperationalError:
        db.close()
        if os.access(Path(path).resolve().parent, os.W_OK):
            raise
        db = sqlite3.connect(read_only_uri(path) + "&immutable=1", uri=True)
    return db


def read_meta(path: Path | str, key: str) -> str | None:
    """One ``meta`` value of a crawl.db, read before the store opens it (None: not there)."""
    try:
        db = connect_read_only(path)
    except sqlite3.Error:
        return None
    try:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        db.close()
    return None if row is None else str(row[0])
