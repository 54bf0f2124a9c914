"""End-to-end crawl benchmark: crawlspace vs Scrapy over the same loopback web.

A static server (nginx, else aiohttp) in its own process serves the corpus (python3.11-doc
HTML, else a generated tree) on 127.0.0.1 ... 127.0.0.N, one port, with a robots.txt
disallowing one folder. Both crawlers start from every host's index page with equal
politeness (robots obeyed, one request in flight per host, no delay, 64 in flight in total)
and write every body to disk. Runs alternate crawlspace, Scrapy, crawlspace, ... each a fresh
subprocess measured with os.wait4 (wall, CPU user+sys, peak RSS). Prints one Markdown table.

Run: python benchmarks/crawl_vs_scrapy.py [--runs 3] [--hosts 16] [--max-pages 0] [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from corpus import Corpus, StaticServer, canonical_url, prepare_corpus  # noqa: E402

CRAWLERS = ("crawlspace", "scrapy")
MAX_DEPTH = 50  # both crawlers; deeper than any python3.11-doc page from index.html
USER_AGENT = "BenchBot/1.0 (+https://github.com/crawlspace/crawlspace)"


class TreeMemory:
    """Peak memory of a process and all its descendants (crawlspace's parse workers included),
    sampled from /proc every 0.2 s: the sum of RSS (shared pages counted in every process) and
    the sum of PSS (shared pages split between the processes that map them; the fair total).
    ``ru_maxrss`` alone would report only the largest single process."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peak_rss_kib = 0
        self.peak_pss_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _tree(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
        tree, todo = [], [self.root]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo.extend(children.get(pid, []))
        return tree

    @staticmethod
    def _kib(pid: int, field: str) -> int:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith(field):
                    return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return 0

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            tree = self._tree()
            self.peak_rss_kib = max(self.peak_rss_kib, sum(self._kib(p, "Rss:") for p in tree))
            self.peak_pss_kib = max(self.peak_pss_kib, sum(self._kib(p, "Pss:") for p in tree))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@dataclass(frozen=True)
class RunResult:
    crawler: str
    wall: float
    cpu: float
    max_rss_mb: float  # the largest single process (ru_maxrss)
    tree_rss_mb: float  # peak sum over the process tree
    tree_pss_mb: float
    pages: int
    covered: int
    returncode: int

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall if self.wall else 0.0

    @property
    def cpu_per_1000(self) -> float:
        return 1000 * self.cpu / self.pages if self.pages else float("nan")


def crawlspace_config(path: Path, max_pages: int, event_loop: str = "asyncio") -> None:
    lines = [
        "[crawl]",
        f'user_agent = "{USER_AGENT}"',
        'allow_nets = ["127.0.0.0/8"]',
        'scope = "host"',
        "min_delay = 0.0",
        "delay_factor = 0.0",
        "max_in_flight_per_host = 1",
        "concurrency = 64",
        f"max_depth = {MAX_DEPTH}",
        "progress = false",
        f'event_loop = "{event_loop}"',
    ]
    if max_pages:
        lines.append(f"max_pages = {max_pages}")
    path.write_text("\n".join(lines) + "\n")


def command(
    crawler: str, seeds: list[str], out: Path, max_pages: int, event_loop: str = "asyncio"
) -> list[str]:
    if crawler == "crawlspace":
        config = out.parent / f"{out.name}.toml"
        crawlspace_config(config, max_pages, event_loop)
        cli = ["-m", "crawlspace.cli", "crawl", *seeds, "--out", str(out)]
        return [sys.executable, *cli, "--config", str(config), "-q"]
    spider = str(BENCH_DIR / "scrapy_spider.py")
    limits = [
        "--max-pages",
        str(max_pages),
        "--max-depth",
        str(MAX_DEPTH),
        "--user-agent",
        USER_AGENT,
    ]
    return [sys.executable, spider, "--out", str(out), *limits, *seeds]


def fetched_urls(crawler: str, out: Path) -> list[str]:
    """One entry per fetched page (robots.txt excluded on both sides)."""
    if crawler == "crawlspace":
        with sqlite3.connect(out / "crawl.db") as db:
            return [row[0] for row in db.execute("SELECT final_url FROM fetches")]
    bodies = out / "bodies.jsonl"
    if not bodies.exists():
        return []
    with bodies.open(encoding="utf-8") as lines:
        return [json.loads(line)["url"] for line in lines]


def run_once(
    crawler: str,
    seeds: list[str],
    out: Path,
    max_pages: int,
    expected: set[str],
    *,
    cpus: str | None = None,
    event_loop: str = "asyncio",
) -> RunResult:
    cmd = command(crawler, seeds, out, max_pages, event_loop)
    if cpus:
        # --cpus pins the crawler (and the processes it starts) to those cores: the 1-core
        # figure for the scaling ratio. The static server is not pinned.
        cmd = ["taskset", "-c", cpus, *cmd]
    log = out.parent / f"{out.name}.log"
    with log.open("wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
        memory = TreeMemory(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        memory.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:]
        print(f"{crawler} exited {proc.returncode}; log tail:\n{tail}", file=sys.stderr)
    urls = fetched_urls(crawler, out) if out.exists() else []
    covered = len({canonical_url(u) for u in urls} & expected)
    return RunResult(
        crawler=crawler,
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        max_rss_mb=usage.ru_maxrss / 1024,  # Linux reports KiB
        tree_rss_mb=memory.peak_rss_kib / 1024,
        tree_pss_mb=memory.peak_pss_kib / 1024,
        pages=len(urls),
        covered=covered,
        returncode=proc.returncode,
    )


def wrk_ceiling(url: str, seconds: int) -> str:
    wrk = shutil.which("wrk")
    if wrk is None:
        return "wrk not installed"
    cmd = [wrk, "-t2", "-c16", f"-d{seconds}s", url]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=seconds + 30)
    match = re.search(r"Requests/sec:\s*([\d.]+)", done.stdout)
    return f"{float(match.group(1)):,.0f} req/s" if match else f"wrk failed: {done.stderr.strip()}"


def machine_info() -> list[str]:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return [
        f"- CPU: {model}, {os.cpu_count()} logical cores",
        f"- Python {platform.python_version()} ({platform.python_implementation()}),"
        f" {platform.system()} {platform.release()}",
        f"- date: {datetime.date.today().isoformat()}",
    ]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(results: list[RunResult], corpus: Corpus, expected: int) -> list[str]:
    rows = [
        "| crawler | runs | pages (median) | pages/s | CPU s / 1,000 pages"
        " | peak RSS MB, all processes | peak PSS MB, all processes"
        " | largest process RSS MB | coverage |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    summary: dict[str, tuple[float, float, float]] = {}
    for crawler in CRAWLERS:
        mine = [r for r in results if r.crawler == crawler]
        if not mine:  # --crawlers left it out
            continue
        rate = median([r.pages_per_s for r in mine])
        rss = median([r.tree_rss_mb for r in mine])
        pss = median([r.tree_pss_mb for r in mine])
        summary[crawler] = (rate, rss, pss)
        coverage = median([r.covered / expected for r in mine]) if expected else float("nan")
        rows.append(
            f"| {crawler} | {len(mine)} | {median([float(r.pages) for r in mine]):,.0f}"
            f" | {rate:,.0f} | {median([r.cpu_per_1000 for r in mine]):.2f}"
            f" | {rss:,.0f} | {pss:,.0f} | {median([r.max_rss_mb for r in mine]):,.0f}"
            f" | {coverage:.1%} |"
        )
    if len(summary) < len(CRAWLERS):
        return rows
    (cs_rate, cs_rss, cs_pss), (sc_rate, sc_rss, sc_pss) = summary["crawlspace"], summary["scrapy"]

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.2f}x" if b else "n/a"

    rows.append(
        f"| crawlspace / Scrapy | | | {ratio(cs_rate, sc_rate)} | | {ratio(cs_rss, sc_rss)}"
        f" | {ratio(cs_pss, sc_pss)} | | |"
    )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="runs per crawler (alternating)")
    parser.add_argument("--hosts", type=int, default=16, help="loopback hosts 127.0.0.1..N")
    parser.add_argument("--max-pages", type=int, default=0, help="page limit for both; 0 = all")
    parser.add_argument("--generated-pages", type=int, default=600, help="fallback corpus size")
    parser.add_argument("--generated", action="store_true", help="use the generated corpus")
    parser.add_argument("--no-install", action="store_true", help="never apt-get python3.11-doc")
    parser.add_argument("--aiohttp", action="store_true", help="serve with aiohttp, not nginx")
    parser.add_argument("--wrk-seconds", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="keep crawl outputs in this directory")
    parser.add_argument("--quick", action="store_true", help="CI smoke: ~300 pages, 1 run each")
    parser.add_argument(
        "--crawlers", default=",".join(CRAWLERS), help="comma-separated subset of the crawlers"
    )
    parser.add_argument("--cpus", help="pin the crawlers to these cores, e.g. 0 (for 1 core)")
    parser.add_argument(
        "--event-loop", default="asyncio", choices=("asyncio", "uvloop"), help="crawlspace's loop"
    )
    args = parser.parse_args()
    crawlers = [c for c in args.crawlers.split(",") if c]
    if not set(crawlers) <= set(CRAWLERS):
        parser.error(f"--crawlers: choose from {', '.join(CRAWLERS)}")
    cpus = args.cpus
    if args.quick:
        # A generated corpus of light pages keeps CI fast and independent of apt.
        args.runs, args.max_pages, args.wrk_seconds = 1, args.max_pages or 300, 1
        args.generated, args.generated_pages = True, 400
    if not 1 <= args.hosts <= 254:
        parser.error("--hosts must be 1..254")

    work = Path(tempfile.mkdtemp(prefix="crawlspace-bench-"))
    try:
        corpus = prepare_corpus(
            work,
            install=not args.no_install,
            generated_pages=args.generated_pages,
            generated_only=args.generated,
        )
        addresses = [f"127.0.0.{i}" for i in range(1, args.hosts + 1)]
        with StaticServer(corpus.root, addresses, prefer_nginx=not args.aiohttp) as server:
            hosts = server.base_urls()
            seeds = [f"{h}/index.html" for h in hosts]
            expected = corpus.expected_urls(hosts)
            ceiling = wrk_ceiling(f"{hosts[0]}/{corpus.html_files[0]}", args.wrk_seconds)
            results: list[RunResult] = []
            for run in range(args.runs):
                for crawler in crawlers:
                    out = (args.keep or work) / f"{crawler}-{run}"
                    shutil.rmtree(out, ignore_errors=True)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    result = run_once(
                        crawler,
                        seeds,
                        out,
                        args.max_pages,
                        expected,
                        cpus=cpus,
                        event_loop=args.event_loop,
                    )
                    results.append(result)
                    print(
                        f"run {run + 1}/{args.runs} {crawler}: {result.pages} pages in"
                        f" {result.wall:.1f}s, CPU {result.cpu:.1f}s,"
                        f" RSS {result.tree_rss_mb:.0f} MB (PSS {result.tree_pss_mb:.0f}) in all"
                        f" processes, exit {result.returncode}",
                        file=sys.stderr,
                    )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    limit = f"max_pages={args.max_pages}" if args.max_pages else "no page limit"
    print(f"## crawlspace vs Scrapy: {len(hosts)} hosts, {limit}, median of {args.runs} run(s)\n")
    print(f"- corpus: {corpus.description}: {len(corpus.html_files)} allowed HTML files per host,")
    print(f"  {len(expected):,} in all; coverage = distinct fetched HTML files / {len(expected):,}")
    print(f"- server: {server.kind}, 1 worker; wrk -t2 -c16 on one page: {ceiling}")
    if cpus:
        print(f"- crawlers pinned to core(s) {cpus} (taskset)")
    print(f"- crawlspace event loop: {args.event_loop}")
    print(*machine_info(), sep="\n")
    print()
    print(*table(results, corpus, len(expected)), sep="\n")
    failed = [r for r in results if r.returncode != 0 or r.pages == 0]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
