"""A searchable index of what was crawled, kept from the index feed: SQLite FTS5 in one file.

``SearchIndex.consume`` reads feed records (ops/feed.py) and applies them in batches, each one
transaction that also stores how far each feed was read. That transaction is the consumer's
acknowledgement: a consumer killed at any point resumes at the first record it had not
committed, so nothing is lost, and a record applied twice changes nothing the second time.

Records are applied by version, never by arrival: each document id keeps the version it was last
set to, an upsert or delete older than that is skipped, and a delete leaves a tombstone with its
version, so a replayed old upsert never brings a deleted page back.

FTS5 over tantivy, by measurement (benchmarks/search_index_bench.py; benchmarks/README.md,
"Search index"): on the 1,699 pages of the two documentation corpora FTS5 indexed at ~40% less
CPU per document and answered top-10 queries with snippets faster (p50 2.9 vs 4.8 ms); it needs
no dependency; and the feed position commits in the same SQLite transaction as the documents,
which tantivy's commit cannot carry. Past ~30,000 documents tantivy answers common words faster
(FTS5 ranks every match before it takes ten): a larger index is a job for a search server fed
by the same feed (README, "Search").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawlspace.errors import ConfigError

__all__ = ["Hit", "SearchIndex", "match_query"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (
    id      INTEGER PRIMARY KEY,    -- the rowid of the document's text in ``pages``
    doc_id  TEXT NOT NULL UNIQUE,   -- the feed's id
    version INTEGER NOT NULL,       -- the newest version applied (feed record ``version``)
    live    INTEGER NOT NULL,       -- 0: a tombstone (deleted at ``version``)
    url     TEXT,
    title   TEXT,
    lang    TEXT,
    fetched_at REAL
);
CREATE VIRTUAL TABLE IF NOT EXISTS pages USING fts5(
    title, text, url, tokenize = 'porter unicode61 remove_diacritics 2'
);
-- How far each feed has been applied: the position of the next record to read.
CREATE TABLE IF NOT EXISTS consumed (
    source   TEXT PRIMARY KEY,
    position INTEGER NOT NULL
);
"""
# BM25 weights of title, text and url: a word in the title says more about a page.
_WEIGHTS = (5.0, 1.0, 2.0)


@dataclass(frozen=True, slots=True)
class Hit:
    url: str
    title: str | None
    snippet: str
    score: float


class SearchIndex:
    """The index file (``DIR/index.db`` for a crawl directory). One writer at a time (SQLite
    locks the file); readers search while it is written."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA busy_timeout=10000")
            self.db.executescript(f"BEGIN IMMEDIATE;\n{_SCHEMA}\nCOMMIT;")
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"{self.path}: cannot open the search index ({exc})") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- consuming a feed -------------------------------------------------------------------

    def position(self, source: str) -> int:
        """The position of the next record of ``source`` to apply (1: none applied yet)."""
        row = self.db.execute(
            "SELECT position FROM consumed WHERE source = ?", (source,)
        ).fetchone()
        return 1 if row is None else int(row[0])

    def apply(self, source: str | None, records: Iterable[dict[str, Any]]) -> int:
        """Apply ``records`` (in feed order) and advance ``source``'s position past the last,
        in one transaction; returns how many records were read. ``source`` None: the records
        have no position here (a stream whose consumer group keeps it)."""
        count = 0
        last = None
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            for record in records:
                self._apply_one(record)
                last = record.get("position")
                count += 1
            if source is not None and last is not None:
                db.execute(
                    "INSERT INTO consumed (source, position) VALUES (?, ?) ON CONFLICT (source)"
                    " DO UPDATE SET position = excluded.position",
                    (source, last + 1),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return count

    def _apply_one(self, record: dict[str, Any]) -> None:
        db = self.db
        doc_id, version = record["id"], int(record["version"])
        row = db.execute(
            "SELECT id, version, live FROM docs WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        if row is not None and row[1] >= version:
            return  # this document is already at this version or a newer one
        if row is not None and row[2]:
            db.execute("DELETE FROM pages WHERE rowid = ?", (row[0],))
        if record["kind"] != "upsert":
            if row is None:
                db.execute(
                    "INSERT INTO docs (doc_id, version, live) VALUES (?, ?, 0)", (doc_id, version)
                )
            else:
                db.execute(
                    "UPDATE docs SET version = ?, live = 0, url = NULL, title = NULL, lang = NULL,"
                    " fetched_at = NULL WHERE id = ?",
                    (version, row[0]),
                )
            return
        url = record.get("canonical") or record["url"]
        values = (version, url, record.get("title"), record.get("lang"), record.get("fetched_at"))
        if row is None:
            rowid = db.execute(
                "INSERT INTO docs (doc_id, version, live, url, title, lang, fetched_at)"
                " VALUES (?, ?, 1, ?, ?, ?, ?)",
                (doc_id, *values),
            ).lastrowid
        else:
            rowid = row[0]
            db.execute(
                "UPDATE docs SET version = ?, live = 1, url = ?, title = ?, lang = ?,"
                " fetched_at = ? WHERE id = ?",
                (*values, rowid),
            )
        db.execute(
            "INSERT INTO pages (rowid, title, text, url) VALUES (?, ?, ?, ?)",
            (rowid, record.get("title") or "", record.get("text") or "", url),
        )

    # -- searching --------------------------------------------------------------------------

    def search(self, query: str, limit: int = 10, *, raw: bool = False) -> list[Hit]:
        """The best ``limit`` documents for ``query`` (every word must match; ``raw``: the
        query is FTS5 syntax, as is), best first."""
        match = query if raw else match_query(query)
        if not match:
            return []
        try:
            rows = self.db.execute(
                "SELECT d.url, d.title, snippet(pages, 1, '[', ']', '…', 16), bm25(pages, ?, ?, ?)"
                " AS score FROM pages JOIN docs d ON d.id = pages.rowid WHERE pages MATCH ?"
                " ORDER BY score LIMIT ?",
                (*_WEIGHTS, match, limit),
            ).fetchall()
        except sqlite3.OperationalError as exc:
            raise ConfigError(f"cannot search for {query!r}: {exc}") from None
        return [Hit(url, title, snippet, -score) for url, title, snippet, score in rows]

    def documents(self) -> int:
        """Documents that can be found (tombstones not counted)."""
        return int(self.db.execute("SELECT COUNT(*) FROM docs WHERE live = 1").fetchone()[0])


def match_query(text: str) -> str:
    """A user's words as an FTS5 query that every page matching all of them answers: each word
    quoted, so no character of the input is taken as query syntax (a '-', a quote, AND)."""
    return " ".join('"' + word.replace('"', '""') + '"' for word in _words(text))


def _words(text: str) -> Iterator[str]:
    for word in text.split():
        if any(c.isalnum() for c in word):
            yield word
