"""Read-side views of a crawl directory: the summary behind `crawlspace stats` and the demo."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from crawlspace.errors import OutputDirError
from crawlspace.ops.stats import dedup_stats, freshness_stats, trap_stats
from crawlspace.store.sqlite.readonly import connect_read_only


def open_crawl_db(out_dir: Path | str) -> sqlite3.Connection:
    """Open ``DIR/crawl.db`` for reading (safe while a crawl is writing it: WAL readers)."""
    path = Path(out_dir) / "crawl.db"
    if not path.is_file():
        raise OutputDirError(f"{out_dir} holds no crawl (no {path}); run `crawlspace crawl` first")
    try:
        db = connect_read_only(path)
    except sqlite3.OperationalError as exc:
        raise OutputDirError(f"cannot open {path} for reading: {exc}") from None
    db.row_factory = sqlite3.Row
    return db


def crawl_stats(out_dir: Path | str) -> dict[str, Any]:
    db = open_crawl_db(out_dir)
    try:

        def one(sql: str) -> int:
            return int(db.execute(sql).fetchone()[0])

        states = dict(db.execute("SELECT state, COUNT(*) FROM urls GROUP BY state").fetchall())
        reasons = dict(
            db.execute(
                "SELECT state || ':' || reason, COUNT(*) FROM urls WHERE reason IS NOT NULL"
                " AND state IN ('excluded', 'failed') GROUP BY state, reason"
            ).fetchall()
        )
        statuses = {
            str(k): v
            for k, v in db.execute(
                "SELECT status, COUNT(*) FROM fetches GROUP BY status ORDER BY status"
            ).fetchall()
        }
        rejections = {
            name.removeprefix("rejected."): value
            for name, value in db.execute(
                "SELECT name, value FROM counters WHERE name LIKE 'rejected.%' ORDER BY name"
            )
        }
        # What the crawl recovered from: WARC files repaired on start, their records without a
        # fetch row, leases given back unfetched because they started too late or because
        # their server's address had no free token (address.deferred), pages parsed again from
        # their WARC records after a failed parse (parse.retried).
        recovery = dict(
            db.execute(
                "SELECT name, value FROM counters WHERE name LIKE 'warc.%'"
                " OR name LIKE 'lease.%' OR name LIKE 'address.%' OR name LIKE 'parse.%'"
                " ORDER BY name"
            ).fetchall()
        )
        # What the extraction hook made (parse/extract.py): items, and pages whose hook failed.
        extract = {
            str(name).removeprefix("extract."): int(value)
            for name, value in db.execute(
                "SELECT name, value FROM counters WHERE name LIKE 'extract.%' ORDER BY name"
            )
        }
        # The rendering tier (crawl/render_visit.py): pages rendered, their requests and bytes,
        # the links only their DOM had, failed renders by reason.
        render = {
            str(name).removeprefix("render."): int(value)
            for name, value in db.execute(
                "SELECT name, value FROM counters WHERE name LIKE 'render.%' ORDER BY name"
            )
        }
        pages = one("SELECT COUNT(*) FROM fetches")
        html_pages = one("SELECT COUNT(*) FROM fetches WHERE text_sha256 IS NOT NULL")
        distinct_text = one("SELECT COUNT(DISTINCT text_sha256) FROM fetches")
        warc_files = sorted({p.name for p in (Path(out_dir) / "warc").glob("*.warc.gz")})
        return {
            "pages": pages,
            "bytes": one("SELECT COALESCE(SUM(bytes), 0) FROM fetches"),
            "hosts": one("SELECT COUNT(*) FROM hosts"),
            "hosts_crawled": one("SELECT COUNT(*) FROM hosts WHERE fetched > 0"),
            "urls": sum(states.values()),
            "queued": states.get("queued", 0),
            "states": states,
            "reasons": reasons,
            "statuses": statuses,
            "exact_duplicates": html_pages - distinct_text,
            "rejections": rejections,
            "recovery": recovery,
            "robots": dict(
                db.execute("SELECT outcome, COUNT(*) FROM robots GROUP BY outcome").fetchall()
            ),
            # By final status ("none": timeout or connection error) and by retry error.
            "robots_statuses": {
                str(k if k is not None else "none"): v
                for k, v in db.execute(
                    "SELECT status, COUNT(*) FROM robots GROUP BY status ORDER BY status"
                )
            },
            "robots_errors": dict(
                db.execute(
                    "SELECT error, COUNT(*) FROM robots WHERE error IS NOT NULL GROUP BY error"
                ).fetchall()
            ),
            "sitemaps": {
                "documents": one("SELECT COUNT(*) FROM urls WHERE source = 'sitemap'"),
                "listed": one("SELECT COUNT(*) FROM urls WHERE source = 'sitemap_entry'"),
                "with_lastmod": one("SELECT COUNT(*) FROM urls WHERE lastmod IS NOT NULL"),
            },
            # Exact/near duplicate pages, link duplicate rates, Bloom seen-set counters.
            "dedup": dedup_stats(db),
            # Likely traps (discovery ratio not falling), URL-template counts; recrawl freshness.
            "traps": trap_stats(db),
            "revisits": freshness_stats(db),
            "warc_dir": str(Path(out_dir) / "warc"),
            "warc_files": warc_files,
            "feed": feed_stats(db, Path(out_dir)),
            "extract": extract,
            "render": render,
        }
    finally:
        db.close()


def feed_stats(db: sqlite3.Connection, out_dir: Path) -> dict[str, Any]:
    """The index feed's records by kind and reason, and how far ``DIR/index.db`` applied it."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'feed'").fetchone() is None:
        return {}  # a crawl.db from before the feed
    kinds = {
        f"{kind}:{reason}" if reason else kind: n
        for kind, reason, n in db.execute(
            "SELECT kind, json_extract(meta, '$.reason'), COUNT(*) FROM feed GROUP BY 1, 2"
        )
    }
    end = int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM feed").fetchone()[0])
    stats: dict[str, Any] = {"records": end, "kinds": kinds}
    index = out_dir / "index.db"
    if index.is_file():
        try:
            found = connect_read_only(index)
            try:
                row = found.execute(
                    "SELECT position FROM consumed WHERE source = ?", (str(out_dir.resolve()),)
                ).fetchone()
                documents = found.execute("SELECT COUNT(*) FROM docs WHERE live = 1").fetchone()
            finally:
                found.close()
        except sqlite3.Error:
            return stats
        applied = int(row[0]) - 1 if row else 0
        stats["index"] = {"documents": int(documents[0]), "behind": end - applied}
    return stats
