"""What the index feed and the search index cost per page, next to the crawl's own cost.

    python benchmarks/feed_index_bench.py [--corpus python|postgres] [--pairs 3] [--no-install]

Serves a corpus (crawl_vs_scrapy.py's server and settings) and crawls it with this tree, the
feed off and on in turn (off, on, off, on ...: a machine that drifts favours neither side), each
run measured as crawl_vs_scrapy.py measures a crawl (wall and CPU of the whole process tree).
After each crawl with the feed it runs ``crawlspace index`` on the crawl directory, measured the
same way, and times searches of the index. Prints one Markdown table: crawl CPU per page with
and without the feed, the index's CPU per page, the sizes they add, search latency.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from corpus import SOURCES, StaticServer, prepare_corpus  # noqa: E402
from crawl_vs_scrapy import RunResult, run_once  # noqa: E402

QUERIES = ["function", "return value", "socket timeout", "index", "transaction isolation"]


def feed_bytes(out: Path) -> tuple[int, int]:
    """(records, bytes of meta and packed documents) of a crawl's feed."""
    with sqlite3.connect(out / "crawl.db") as db:
        row = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(meta) + COALESCE(LENGTH(document), 0)), 0)"
            " FROM feed"
        ).fetchone()
    return int(row[0]), int(row[1])


def index_once(out: Path) -> tuple[float, float]:
    """``crawlspace index OUT``: (wall, CPU) seconds of the process."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "crawlspace.cli", "index", str(out), "-q"])
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("crawlspace index failed")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def search_ms(index: Path) -> float:
    """The median milliseconds of a search with snippets over QUERIES, in process."""
    from crawlspace.ops.search_index import SearchIndex

    times = []
    with SearchIndex(index) as searcher:
        for _ in range(5):
            for query in QUERIES:
                start = time.perf_counter()
                searcher.search(query, 10)
                times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="python", choices=sorted(SOURCES))
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--generated", action="store_true", help="a generated corpus (CI smoke)")
    parser.add_argument("--no-install", action="store_true", help="never apt-get the corpus")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="crawlspace-feed-"))
    try:
        return run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path) -> int:
    corpus = prepare_corpus(
        work,
        install=not args.no_install,
        generated_pages=300,
        generated_only=args.generated,
        name=args.corpus,
    )
    hosts = [f"127.0.0.{i}" for i in range(1, SOURCES[args.corpus].default_hosts + 1)]
    sides: dict[str, list[RunResult]] = {"off": [], "on": []}
    index_cpu: list[float] = []
    sizes: list[tuple[int, int, int]] = []
    searches: list[float] = []
    with StaticServer(corpus.root, hosts, robots_txt=corpus.robots_txt) as server:
        seeds = [f"{h}/index.html" for h in server.base_urls()]
        expected = corpus.expected_urls(server.base_urls())
        for pair in range(args.pairs):
            for side, results in sides.items():
                out = work / f"{side}-{pair}"
                extra = ["feed = false"] if side == "off" else []
                result = run_once(
                    "crawlspace", seeds, out, 0, corpus=corpus, expected=expected, extra=extra
                )
                results.append(result)
                line = f"feed {side} run {pair + 1}: {result.pages} pages, CPU {result.cpu:.2f} s"
                if side == "on":
                    records, stored = feed_bytes(out)
                    _, cpu = index_once(out)
                    index_cpu.append(cpu / max(result.pages, 1))
                    sizes.append((records, stored, (out / "index.db").stat().st_size))
                    searches.append(search_ms(out / "index.db"))
                    line += f"; index CPU {cpu:.2f} s for {records} records"
                print(line, file=sys.stderr)
                shutil.rmtree(out, ignore_errors=True)
    print(*table(args, sides, index_cpu, sizes, searches), sep="\n")
    return 0


def table(
    args: argparse.Namespace,
    sides: dict[str, list[RunResult]],
    index_cpu: list[float],
    sizes: list[tuple[int, int, int]],
    searches: list[float],
) -> list[str]:
    def cpu_ms(side: str) -> float:
        return statistics.median(r.cpu_ms_per_page for r in sides[side])

    def pages_per_s(side: str) -> float:
        return statistics.median(r.pages_per_s for r in sides[side])

    pages = statistics.median(r.pages for r in sides["on"])
    records, stored, index_size = sizes[-1]
    off, on, index = cpu_ms("off"), cpu_ms("on"), statistics.median(index_cpu) * 1000
    return [
        f"## Feed and index cost: {args.corpus}, {args.pairs} pair(s), {pages:.0f} pages\n",
        "| | CPU ms/page | pages/s | vs the crawl without the feed |",
        "|---|---|---|---|",
        f"| crawl, feed off | {off:.2f} | {pages_per_s('off'):.0f} | 1.000x |",
        f"| crawl, feed on | {on:.2f} | {pages_per_s('on'):.0f} | {on / off:.3f}x CPU,"
        f" {pages_per_s('on') / pages_per_s('off'):.3f}x pages/s |",
        f"| `crawlspace index` afterwards | {index:.2f} | | +{index / off:.1%} of the crawl's"
        " CPU |",
        "",
        f"Feed: {records} records, {stored / max(records, 1) / 1024:.1f} KiB a record in crawl.db;"
        f" index: {index_size / max(records, 1) / 1024:.1f} KiB a record;"
        f" search (top 10 with snippets) median {statistics.median(searches):.1f} ms.",
    ]


if __name__ == "__main__":
    sys.exit(main())
