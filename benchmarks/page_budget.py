"""What a page must cost, part by part, against #29's budget: 3x the floor on ordinary pages
(postgresql-doc-15), 2x on link-heavy ones (python3.11-doc).

    python benchmarks/page_budget.py [--corpus postgres|python] [--hosts N] [--no-crawl]

On the corpus's allowed files, in one run, it times the parts no crawler that keeps #29's
"nothing dropped" terms can leave out, each at its cheapest, in CPU ms a page:

1. **the floor** (``floor.py``): lexbor parse, ``a[href]``, ada join, visible text, SHA-256,
   gzip level 6;
2. **an HTTP exchange**: one keep-alive GET with aiohttp (the crawl's client; the fastest of
   the asyncio clients measured, ``http_clients_bench.py``), the body read in full, from the
   corpus's nginx on loopback, one request in flight per host;
3. **a durable lease and completion**: the rows a page must write, in two SQLite WAL write
   transactions (``synchronous=NORMAL``) on crawlspace's own schema and nothing else: the
   URL leased, its host's in-flight count up; then its fetch row, its links (one JSON row),
   the one URL each page discovers on average, the URL and its host finished, its index event
   and its feed record (the text, compressed). No in-links, traps, dedup verdicts, notes,
   counters or exclusions;
4. **the page's trip to a parse process and back**: the job (URL and body) and its answer (the
   page's links, hashes and compressed WARC member) pickled, framed and sent each way over a
   socket pair, both ends timed (the crawl pays both).

Their sum is what a page costs before any crawl logic; the budget less that sum is what is left
for all of it: the frontier's choice and politeness, robots, admission of the links, the
WARC records' headers and digests, simhash, the feed's document, the event loop. Unless
``--no-crawl``, one crawlspace crawl of the same corpus (``crawl_vs_scrapy.py``'s settings)
prints what that logic costs today. Each part is the best of ``--repeat`` passes (other
tenants of a VM only ever slow a pass down).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import socket
import sqlite3
import struct
import sys
import tempfile
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from corpus import SOURCES, Corpus, served_corpus  # noqa: E402
from crawl_vs_scrapy import run_once  # noqa: E402
from crawlspace.store.sqlite.schema import SCHEMA  # noqa: E402
from floor import measure_floor  # noqa: E402

FRAME = struct.Struct("!I")
Page = tuple[str, bytes, list[str], bytes]  # URL, raw bytes, hrefs, the text compressed


def load_pages(root: Path, files: Sequence[str], bases: Sequence[str], limit: int) -> list[Page]:
    """Each file with its URL on one of the hosts (in turn), its hrefs and its visible text,
    compressed as the feed keeps it (untimed: the parse process makes it, not the store)."""
    pages = []
    for i, rel in enumerate(files[:limit] if limit else files):
        raw = (root / rel).read_bytes()
        tree = LexborHTMLParser(raw)
        hrefs = [node.attrs.get("href") or "" for node in tree.css("a[href]")]
        body = tree.body
        text = body.text(separator=" ", strip=True) if body is not None else ""
        document = zlib.compress(text.encode(), 1)
        pages.append((f"{bases[i % len(bases)].rstrip('/')}/{rel}", raw, hrefs, document))
    return pages


def best_of(repeat: int, one_pass: Callable[[], float]) -> float:
    return min(one_pass() for _ in range(max(1, repeat)))


async def _fetch_all(urls: Sequence[str], in_flight: int) -> None:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=in_flight, limit_per_host=1)
    async with aiohttp.ClientSession(connector=connector) as session:
        queue = list(reversed(urls))

        async def worker() -> None:
            while queue:
                async with session.get(queue.pop()) as response:
                    await response.read()

        await asyncio.gather(*(worker() for _ in range(in_flight)))


def http_cost(pages: Sequence[Page], hosts: int) -> float:
    """CPU ms a GET with aiohttp (this process only: the server's CPU is nginx's)."""
    urls = [url for url, _, _, _ in pages]
    began = time.process_time()
    asyncio.run(_fetch_all(urls, hosts))
    return 1000 * (time.process_time() - began) / len(urls)


def _store(path: Path, pages: Sequence[Page]) -> tuple[sqlite3.Connection, list[int]]:
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    hosts = sorted({url.split("/", 3)[2] for url, _, _, _ in pages})
    db.executemany("INSERT INTO hosts (host_key, queued) VALUES (?, 1)", [(h,) for h in hosts])
    ids = dict(db.execute("SELECT host_key, id FROM hosts").fetchall())
    return db, [ids[url.split("/", 3)[2]] for url, _, _, _ in pages]


_NEW_URL = (
    "INSERT INTO urls (url, host_id, depth, priority, state, source, discovered_at, updated_at)"
    " VALUES (?, ?, 1, 0, 'queued', 'link', ?, ?)"
)


def _lease(db: sqlite3.Connection, url_id: int, host_id: int, now: float) -> None:
    db.execute("BEGIN IMMEDIATE")
    db.execute(
        "UPDATE urls SET state = 'leased', lease_id = ?, lease_expires_at = ?,"
        " attempts = attempts + 1 WHERE id = ?",
        (uuid.uuid4().hex, now + 60, url_id),
    )
    db.execute(
        "UPDATE hosts SET in_flight = in_flight + 1, queued = queued - 1 WHERE id = ?", (host_id,)
    )
    db.execute("COMMIT")


def _complete(
    db: sqlite3.Connection, url_id: int, host_id: int, page: Page, *, next_url: str, now: float
) -> None:
    url, raw, hrefs, document = page
    text_sha = uuid.uuid4().hex * 2  # stand-ins of a SHA-256's size
    db.execute("BEGIN IMMEDIATE")
    fetch_id = db.execute(
        "INSERT INTO fetches (url_id, version, url, final_url, status, fetched_at, duration_ms,"
        " content_type, bytes, truncated, content_sha256, text_sha256, noindex, warc_file,"
        " warc_offset, warc_length, simhash) VALUES (?, 1, ?, ?, 200, ?, 1.0, 'text/html', ?, 0,"
        " ?, ?, 0, 'crawl-00000.warc.gz', ?, ?, ?)",
        (url_id, url, url, now, len(raw), text_sha, text_sha, url_id * 9000, 9000, url_id),
    ).lastrowid
    db.execute(
        "INSERT INTO page_links (fetch_id, urls, nofollow) VALUES (?, ?, NULL)",
        (fetch_id, json.dumps(hrefs)),
    )
    db.execute(_NEW_URL, (next_url, host_id, now, now))
    db.execute(
        "UPDATE urls SET state = 'fetched', reason = NULL, lease_id = NULL,"
        " lease_expires_at = NULL, updated_at = ? WHERE id = ?",
        (now, url_id),
    )
    db.execute(
        "UPDATE hosts SET in_flight = in_flight - 1, queued = queued + 1, fetched = fetched + 1,"
        " next_allowed_at = ? WHERE id = ?",
        (now, host_id),
    )
    event_id = uuid.uuid4().hex
    db.execute(
        "INSERT INTO events (event_id, url, version, state, status, content_sha256, text_sha256,"
        " warc_file, warc_offset, created_at) VALUES (?, ?, 1, 'fetched', 200, ?, ?,"
        " 'crawl-00000.warc.gz', ?, ?)",
        (event_id, url, text_sha, text_sha, url_id * 9000, now),
    )
    db.execute(
        "INSERT OR IGNORE INTO feed (event_id, doc_id, kind, meta, document)"
        " VALUES (?, ?, 'upsert', ?, ?)",
        (event_id, text_sha[:40], json.dumps({"url": url, "status": 200}), document),
    )
    db.execute("COMMIT")


def store_cost(pages: Sequence[Page], path: Path) -> float:
    """CPU ms of one page's lease and completion transactions."""
    db, host_ids = _store(path, pages)
    now = time.time()
    db.execute(_NEW_URL, (pages[0][0], host_ids[0], now, now))
    spent = 0.0
    for i, page in enumerate(pages):
        url_id, host_id = i + 1, host_ids[i]
        next_url = pages[i + 1][0] if i + 1 < len(pages) else page[0] + "?end"
        began = time.process_time()
        _lease(db, url_id, host_id, now)
        _complete(db, url_id, host_id, page, next_url=next_url, now=now)
        spent += time.process_time() - began
    db.close()
    return 1000 * spent / len(pages)


def _send(channel: socket.socket, value: object) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    channel.sendall(FRAME.pack(len(data)) + data)


def _receive(channel: socket.socket) -> object:
    (size,) = FRAME.unpack(channel.recv(FRAME.size, socket.MSG_WAITALL))
    return pickle.loads(channel.recv(size, socket.MSG_WAITALL))


def _answer_jobs(worker: socket.socket, answers: Sequence[object]) -> None:
    for answer in answers:
        _receive(worker)
        _send(worker, answer)


def ipc_cost(pages: Sequence[Page]) -> float:
    """CPU ms of a job's and its answer's trip across a socket pair, both ends (the worker's
    end on a thread of its own, so a large page never waits on a full socket buffer)."""
    answers = [
        (hrefs, uuid.uuid4().hex * 2, len(document), zlib.compress(raw, 6))
        for _, raw, hrefs, document in pages
    ]
    crawl, worker = socket.socketpair()
    with crawl, worker:
        echo = threading.Thread(target=_answer_jobs, args=(worker, answers))
        began = time.process_time()
        echo.start()
        for url, raw, _, _ in pages:
            _send(crawl, (url, raw, {"content-type": "text/html"}))
            _receive(crawl)
        echo.join()
        return 1000 * (time.process_time() - began) / len(pages)


def crawl_cost(corpus: Corpus, seeds: list[str], work: Path, max_pages: int) -> tuple[float, int]:
    """CPU ms a page of one crawlspace crawl (its whole process tree), and its pages."""
    out = work / "crawl"
    result = run_once("crawlspace", seeds, out, max_pages, corpus=corpus, expected=set())
    return result.cpu_ms_per_page, result.pages


# #29's budget, as a multiple of the floor: ordinary pages 3x, link-heavy pages 2x.
BUDGETS = {"postgres": 3.0, "python": 2.0}


def table(
    parts: dict[str, float], floor: float, times: float, crawl: tuple[float, int] | None
) -> str:
    required = sum(parts.values())
    budget = times * floor
    rows = [f"| {name} | {ms:.3f} | {ms / budget:.0%} |" for name, ms in parts.items()]
    rows.append(f"| **the required parts** | **{required:.3f}** | {required / budget:.0%} |")
    rows.append(f"| {times:g}x the floor (#29's budget) | {budget:.3f} | 100% |")
    rows.append(f"| left for the crawl's own logic | {budget - required:.3f} | |")
    if crawl is not None:
        ms, pages = crawl
        rows.append(f"| crawlspace, one crawl ({pages:,} pages) | {ms:.3f} | {ms / budget:.0%} |")
        rows.append(f"| its own logic today | {ms - required:.3f} | |")
    head = f"| part of a page | CPU ms | of {times:g}x the floor |\n|---|---:|---:|\n"
    return head + "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", choices=sorted(SOURCES), default="postgres")
    parser.add_argument("--hosts", type=int, help="loopback hosts (the corpus's default)")
    parser.add_argument("--pages", type=int, default=0, help="files timed (0: all)")
    parser.add_argument("--repeat", type=int, default=3, help="passes; the best is kept")
    parser.add_argument("--generated", action="store_true", help="a generated corpus (CI smoke)")
    parser.add_argument("--no-install", action="store_true", help="never apt-get the corpus")
    parser.add_argument("--no-crawl", action="store_true", help="leave out the crawl")
    parser.add_argument("--crawl-pages", type=int, default=0, help="the crawl's limit (0: none)")
    parser.add_argument("--times", type=float, help="the budget in floors (#29: 3 or 2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crawlspace-budget-") as tmp:
        work = Path(tmp)
        with served_corpus(
            work,
            args.corpus,
            install=not args.no_install,
            generated=args.generated,
            hosts=args.hosts,
        ) as (corpus, _, seeds):
            bases = [seed.rsplit("/", 1)[0] for seed in seeds]
            pages = load_pages(corpus.root, corpus.html_files, bases, args.pages)
            files = corpus.html_files[: len(pages)]
            floor = measure_floor(corpus.root, files, bases[0], args.repeat).ms_per_page
            parts = {
                "the floor (floor.py)": floor,
                "an HTTP exchange (aiohttp, keep-alive, loopback)": best_of(
                    args.repeat, lambda: http_cost(pages, len(bases))
                ),
                "a durable lease and completion (SQLite WAL, the rows a page must write)": best_of(
                    args.repeat, lambda: store_cost(pages, work / "budget.db")
                ),
                "the trip to a parse process and back (pickle, socket pair)": best_of(
                    args.repeat, lambda: ipc_cost(pages)
                ),
            }
            crawl = None if args.no_crawl else crawl_cost(corpus, seeds, work, args.crawl_pages)
    kib = sum(len(raw) for _, raw, _, _ in pages) / 1024 / len(pages)
    links = sum(len(hrefs) for _, _, hrefs, _ in pages) / len(pages)
    print(f"## A page's budget: {corpus.description}, {len(bases)} hosts\n")
    print(
        f"{len(pages):,} pages, {kib:.1f} KiB and {links:.0f} links a page; best of {args.repeat}\n"
    )
    print(table(parts, floor, args.times or BUDGETS.get(args.corpus, 3.0), crawl))
    return 0


if __name__ == "__main__":
    sys.exit(main())
