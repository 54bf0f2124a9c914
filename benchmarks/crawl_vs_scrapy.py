"""End-to-end crawl benchmark: crawlspace vs Scrapy vs crawlee over the same loopback web.

A static server (nginx, else aiohttp) in its own process serves a corpus on 127.0.0.1 ...
127.0.0.N, one port, with a robots.txt disallowing one path prefix. Two real corpora from
Debian's documentation packages: python3.11-doc (530 pages, some large; 8 hosts by default)
and postgresql-doc-15 (1,169 ordinary pages of ~13 KiB and ~20 links; 4 hosts by default);
else a generated tree. The crawlers start from every host's index page with equal politeness
(robots obeyed, one request in flight per host, no delay; crawlee, which has no per-host limit,
gets a global concurrency of N) and write every body to disk. Runs alternate crawlspace,
Scrapy, crawlee, crawlspace, ... each a fresh subprocess measured with os.wait4 (wall, CPU
user+sys, peak RSS) and a /proc sampler of its process tree.

The floor (floor.py: lexbor parse, a[href], ada join, visible text, SHA-256, gzip 6, in one
process) is measured on the same files, before the first round and after each (the median
timing is used), and each crawler's CPU per page is printed as a multiple of it. Prints one
Markdown table per corpus.

Run: python benchmarks/crawl_vs_scrapy.py [--corpus both] [--runs 3] [--hosts N]
         [--max-pages 0] [--crawlers crawlspace,scrapy,crawlee] [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from corpus import (  # noqa: E402
    SOURCES,
    Corpus,
    StaticServer,
    canonical_url,
    precompile,
    prepare_corpus,
)
from floor import STEPS, Floor, measure_floor  # noqa: E402

CRAWLERS = ("crawlspace", "scrapy", "crawlee")
PEERS = {"scrapy": "Scrapy", "crawlee": "crawlee"}  # peer -> its name in the ratio rows
SIDE_SCRIPTS = {"scrapy": "scrapy_spider.py", "crawlee": "crawlee_crawler.py"}
MAX_DEPTH = 50  # all crawlers; deeper than any page of the corpora from index.html
USER_AGENT = "BenchBot/1.0 (+https://github.com/crawlspace/crawlspace)"
CORES_TARGET = 1.85  # crawlspace's CPU seconds per wall second on 2 cores, CPU-bound runs


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
    violations: int  # fetched pages that robots.txt disallows
    returncode: int

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall if self.wall else 0.0

    @property
    def cpu_ms_per_page(self) -> float:
        return 1000 * self.cpu / self.pages if self.pages else float("nan")

    @property
    def cores(self) -> float:
        """CPU seconds per wall second: how many cores the crawl kept busy."""
        return self.cpu / self.wall if self.wall else 0.0


def crawlspace_config(
    path: Path, max_pages: int, event_loop: str = "asyncio", extra: Sequence[str] = ()
) -> None:
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
    path.write_text("\n".join([*lines, *extra]) + "\n")


def command(
    crawler: str,
    seeds: list[str],
    out: Path,
    max_pages: int,
    event_loop: str = "asyncio",
    *,
    extra: Sequence[str] = (),
) -> list[str]:
    if crawler == "crawlspace":
        config = out.parent / f"{out.name}.toml"
        crawlspace_config(config, max_pages, event_loop, extra)
        cli = ["-m", "crawlspace.cli", "crawl", *seeds, "--out", str(out)]
        return [sys.executable, *cli, "--config", str(config), "-q"]
    script = str(BENCH_DIR / SIDE_SCRIPTS[crawler])
    limits = ["--max-pages", str(max_pages), "--max-depth", str(MAX_DEPTH)]
    limits += ["--user-agent", USER_AGENT]
    if crawler == "crawlee":
        # No per-host limit in crawlee: one task per host, globally.
        limits += ["--concurrency", str(len(seeds))]
    return [sys.executable, script, "--out", str(out), *limits, *seeds]


def fetched_urls(crawler: str, out: Path) -> list[str]:
    """One entry per fetched page (robots.txt excluded on every side)."""
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
    *,
    corpus: Corpus,
    expected: set[str],
    cpus: str | None = None,
    event_loop: str = "asyncio",
    extra: Sequence[str] = (),
) -> RunResult:
    """One crawl, measured; ``extra``: more crawlspace TOML lines."""
    cmd = command(crawler, seeds, out, max_pages, event_loop, extra=extra)
    if cpus:
        # --cpus pins the crawler (and the processes it starts) to those cores: the 1-core
        # figure for the scaling ratio. The static server is not pinned.
        cmd = ["taskset", "-c", cpus, *cmd]
    log = out.parent / f"{out.name}.log"
    with log.open("wb") as sink:
        start = time.perf_counter()
        # cwd: whatever a crawler might write beside itself lands in the run's scratch folder.
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, cwd=out.parent)
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
        violations=sum(corpus.is_disallowed(u) for u in urls),
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


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


@dataclass(frozen=True)
class Summary:
    """One crawler's medians over its runs."""

    runs: int
    pages: float
    rate: float
    cpu_ms: float
    cores: float
    rss: float
    pss: float
    largest: float
    coverage: float
    violations: int  # the most in any run

    @classmethod
    def of(cls, runs: list[RunResult], expected: int) -> Summary:
        return cls(
            runs=len(runs),
            pages=median([float(r.pages) for r in runs]),
            rate=median([r.pages_per_s for r in runs]),
            cpu_ms=median([r.cpu_ms_per_page for r in runs]),
            cores=median([r.cores for r in runs]),
            rss=median([r.tree_rss_mb for r in runs]),
            pss=median([r.tree_pss_mb for r in runs]),
            largest=median([r.max_rss_mb for r in runs]),
            coverage=median([r.covered / expected for r in runs]) if expected else float("nan"),
            violations=max(r.violations for r in runs),
        )


TABLE_HEAD = (
    "| crawler | runs | pages (median) | pages/s | CPU ms / page | CPU / floor"
    " | cores used (CPU/wall) | peak RSS MB, all processes | peak PSS MB, all processes"
    " | largest process RSS MB | coverage | robots violations |"
)


def summaries(results: list[RunResult], expected: int) -> dict[str, Summary]:
    found = {}
    for crawler in CRAWLERS:
        mine = [r for r in results if r.crawler == crawler]
        if mine:  # --crawlers may leave one out
            found[crawler] = Summary.of(mine, expected)
    return found


def median_floor(floors: list[Floor]) -> Floor:
    """The timing of the floor in the middle (the lower of the two middle ones)."""
    return sorted(floors, key=lambda f: f.ms_per_page)[(len(floors) - 1) // 2]


def table(found: dict[str, Summary], floor: Floor) -> list[str]:
    rows = [TABLE_HEAD, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for crawler, s in found.items():
        rows.append(
            f"| {crawler} | {s.runs} | {s.pages:,.0f} | {s.rate:,.1f} | {s.cpu_ms:.2f}"
            f" | {ratio(s.cpu_ms, floor.ms_per_page)} | {s.cores:.2f} | {s.rss:,.0f}"
            f" | {s.pss:,.0f} | {s.largest:,.0f} | {s.coverage:.1%} | {s.violations} |"
        )
    mine = found.get("crawlspace")
    for peer, label in PEERS.items():
        other = found.get(peer)
        if mine is None or other is None:
            continue
        rows.append(
            f"| crawlspace / {label} | | | {ratio(mine.rate, other.rate)}"
            f" | {ratio(mine.cpu_ms, other.cpu_ms)} | | | {ratio(mine.rss, other.rss)}"
            f" | {ratio(mine.pss, other.pss)} | | | |"
        )
    return rows


def floor_lines(
    found: dict[str, Summary], floors: list[Floor], repeat: int, cores: int
) -> list[str]:
    """The floor (the median of its timings: ``floors``, before the first round and after
    each), each crawler's CPU as a multiple of it, and the cores crawlspace used."""
    floor = median_floor(floors)
    steps = ", ".join(f"{name} {floor.steps[name]:.3f}" for name in STEPS)
    timings = ", ".join(f"{f.ms_per_page:.3f}" for f in floors)
    lines = [
        f"- **floor** (floor.py, one process: lexbor parse, a[href], ada join, visible text,"
        f" SHA-256, gzip 6; best of {repeat} pass(es) over the {floor.pages:,} allowed files,"
        f" {floor.kib_per_page:.1f} KiB and {floor.links / max(floor.pages, 1):.0f} links a"
        f" page; timed before the first round and after each: {timings} ms, the median"
        f" kept): **{floor.ms_per_page:.3f} CPU ms/page** ({steps})",
    ]
    multiples = [f"{c} {ratio(s.cpu_ms, floor.ms_per_page)}" for c, s in found.items()]
    if multiples:
        lines.append(f"- CPU per page as a multiple of the floor: {', '.join(multiples)}")
    if "crawlspace" in found:
        used = found["crawlspace"].cores
        lines.append(
            f"- crawlspace cores used: {used:.2f} of {cores}"
            f" (target >= {CORES_TARGET} of 2 on CPU-bound runs)"
        )
    return lines


def peers_available(crawlers: list[str]) -> tuple[list[str], list[str]]:
    """The crawlers that can run here, and a note for each peer that cannot be imported."""
    kept, notes = [], []
    for crawler in crawlers:
        module = "scrapy" if crawler == "scrapy" else "crawlee" if crawler == "crawlee" else None
        if module is not None and importlib.util.find_spec(module) is None:
            notes.append(f"- {crawler}: not importable (pip install -e '.[bench]'), skipped")
            continue
        kept.append(crawler)
    return kept, notes


def bench_corpus(
    name: str, args: argparse.Namespace, crawlers: list[str], work: Path
) -> tuple[list[str], bool]:
    """Crawl one corpus with every crawler, alternating; its report lines and whether a run
    failed (non-zero exit, no page, or a page robots.txt disallows)."""
    corpus = prepare_corpus(
        work,
        install=not args.no_install,
        generated_pages=args.generated_pages,
        generated_only=args.generated,
        name=name,
    )
    hosts_n = args.hosts or SOURCES[name].default_hosts
    addresses = [f"127.0.0.{i}" for i in range(1, hosts_n + 1)]
    server = StaticServer(
        corpus.root, addresses, prefer_nginx=not args.aiohttp, robots_txt=corpus.robots_txt
    )
    with server:
        hosts = server.base_urls()
        seeds = [f"{h}/index.html" for h in hosts]
        expected = corpus.expected_urls(hosts)
        ceiling = wrk_ceiling(f"{hosts[0]}/{corpus.html_files[0]}", args.wrk_seconds)
        results: list[RunResult] = []
        # The floor before the first round and after each: a VM's speed moves by tens of
        # percent within minutes, and one timing of it made single runs' multiples swing
        # (benchmarks/README.md, "Eleventh session"); the median timing is the one used.
        floors = [measure_floor(corpus.root, corpus.html_files, hosts[0], args.floor_repeat)]
        for run in range(args.runs):
            for crawler in crawlers:
                out = (args.keep or work) / f"{corpus.name}-{crawler}-{run}"
                shutil.rmtree(out, ignore_errors=True)
                out.parent.mkdir(parents=True, exist_ok=True)
                result = run_once(
                    crawler,
                    seeds,
                    out,
                    args.max_pages,
                    corpus=corpus,
                    expected=expected,
                    cpus=args.cpus,
                    event_loop=args.event_loop,
                )
                results.append(result)
                print(
                    f"{corpus.name} run {run + 1}/{args.runs} {crawler}: {result.pages} pages in"
                    f" {result.wall:.1f}s, CPU {result.cpu:.1f}s ({result.cores:.2f} cores),"
                    f" RSS {result.tree_rss_mb:.0f} MB (PSS {result.tree_pss_mb:.0f}) in all"
                    f" processes, {result.violations} robots violations, exit {result.returncode}",
                    file=sys.stderr,
                )
            floors.append(
                measure_floor(corpus.root, corpus.html_files, hosts[0], args.floor_repeat)
            )
    floor = median_floor(floors)
    found = summaries(results, len(expected))
    cores = len(args.cpus.split(",")) if args.cpus else len(os.sched_getaffinity(0))
    limit = f"max_pages={args.max_pages}" if args.max_pages else "no page limit"
    names = " vs ".join(PEERS.get(c, c) for c in crawlers)
    lines = [
        f"## {names}: {corpus.name}, {len(hosts)} hosts, {limit}, median of {args.runs} run(s)\n",
        f"- corpus: {corpus.description}: {len(corpus.html_files)} allowed HTML files per host"
        f" ({corpus.disallowed_files} more under robots.txt's `Disallow: {corpus.disallowed}`),",
        f"  {len(expected):,} in all; coverage = distinct fetched HTML files / {len(expected):,};"
        " robots violations = fetched pages under the disallowed prefix (most in any run)",
        f"- server: {server.kind}, 1 worker; wrk -t2 -c16 on one page: {ceiling}",
    ]
    if args.max_pages:
        lines.append(
            "- with a page limit the crawlers fetch a subset of the files the floor covers:"
            " read the multiples of the floor from a run without one"
        )
    lines += [*floor_lines(found, floors, args.floor_repeat, cores), ""]
    lines += table(found, floor)
    failed = any(r.returncode != 0 or r.pages == 0 or r.violations for r in results)
    return lines, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--corpus", default="both", choices=(*SOURCES, "both"), help="which corpus to crawl"
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per crawler (alternating)")
    parser.add_argument(
        "--hosts", type=int, default=0, help="loopback hosts 127.0.0.1..N (0: python 8, postgres 4)"
    )
    parser.add_argument("--max-pages", type=int, default=0, help="page limit for all; 0 = all")
    parser.add_argument("--generated-pages", type=int, default=600, help="fallback corpus size")
    parser.add_argument("--generated", action="store_true", help="use the generated corpus")
    parser.add_argument("--no-install", action="store_true", help="never apt-get the docs")
    parser.add_argument("--aiohttp", action="store_true", help="serve with aiohttp, not nginx")
    parser.add_argument("--wrk-seconds", type=int, default=5)
    parser.add_argument("--floor-repeat", type=int, default=3, help="floor passes; best kept")
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
    asked = {c for c in args.crawlers.split(",") if c}
    if not asked or not asked <= set(CRAWLERS):
        parser.error(f"--crawlers: choose from {', '.join(CRAWLERS)}")
    crawlers = [c for c in CRAWLERS if c in asked]  # runs alternate in this order
    if args.quick:
        # A generated corpus of light pages keeps CI fast and independent of apt.
        args.runs, args.max_pages, args.wrk_seconds = 1, args.max_pages or 300, 1
        args.generated, args.generated_pages, args.floor_repeat = True, 400, 1
    if not 0 <= args.hosts <= 254:
        parser.error("--hosts must be 1..254 (0: the corpus's default)")
    crawlers, notes = peers_available(crawlers)
    # The generated corpus stands in for both real ones: one table.
    names = ["python"] if args.generated else [*SOURCES] if args.corpus == "both" else [args.corpus]

    precompile()  # as pip install leaves every package, the peers' included
    print(*machine_info(), sep="\n")
    print(f"- crawlspace event loop: {args.event_loop}")
    if args.cpus:
        print(f"- crawlers pinned to core(s) {args.cpus} (taskset)")
    for note in notes:
        print(note)
    print(flush=True)
    failed = False
    work = Path(tempfile.mkdtemp(prefix="crawlspace-bench-"))
    try:
        for name in names:
            lines, bad = bench_corpus(name, args, crawlers, work)
            failed = failed or bad
            print(*lines, sep="\n")
            print(flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
