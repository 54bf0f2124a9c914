"""End-to-end pages/s with 1, 2 and 4 `crawlspace worker` processes on one shared Redis frontier.

The corpus and its server are crawl_vs_scrapy.py's (python3.11-doc, else a generated tree, served
by nginx, else aiohttp, on 127.0.0.1 ... 127.0.0.N: N host keys), and so are the crawl settings
(one request in flight per host, no delay, 64 in flight per process, robots obeyed). Each run
starts a fresh redis-server on a loopback port in a temp dir (``--cluster``: a 3-master cluster),
runs ``crawlspace seed`` with every host's index page, then starts N workers together. A run ends
when every worker has exited: the frontier is drained, or the shared frontier's fetched counter
reached ``--max-pages`` and the benchmark sent each worker SIGTERM (a graceful stop that lets
in-flight fetches finish; kept so figures compare with runs from before ``crawlspace worker
--max-pages`` became crawl-wide).

Per run: pages = fetch rows in the workers' ``crawl.db`` files, wall = first worker started ->
last worker exited (process start-up included), CPU and peak RSS from ``os.wait4`` per worker,
Redis CPU from ``INFO cpu``, and Redis server time per page from ``INFO commandstats`` (every
command's execution time, and the frontier's scripts' alone: lease, complete, admissions).
Runs interleave the worker counts (1, 2, 4, 1, 2, 4, ...); the table
shows medians. Prints one Markdown table.

Run: python benchmarks/redis_workers_bench.py [--runs 1] [--workers 1,2,4] [--max-pages 1500]
    [--hosts 16] [--buckets 1024] [--cluster] [--quick]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))  # corpus, crawl_vs_scrapy
sys.path.insert(0, str(BENCH_DIR.parent))  # tests.redis_servers

from tests.redis_servers import RedisDeployment, start_cluster, start_single  # noqa: E402

from corpus import Corpus, StaticServer, canonical_url, prepare_corpus  # noqa: E402
from crawl_vs_scrapy import crawlspace_config, machine_info, median  # noqa: E402
from crawlspace.store.redis.frontier import RedisFrontier, connect  # noqa: E402

NAMESPACE = "cs"
REAP_EVERY = 0.02  # seconds between checks for exited workers (sets wall-time resolution)
COUNT_EVERY = 0.2  # seconds between reads of the shared fetched counter (O(buckets) scan)
STOP_GRACE = 90.0  # a worker's drain is bounded by total_timeout (60 s) + 5 s; then SIGKILL


@dataclass(frozen=True)
class WorkerUsage:
    cpu: float
    max_rss_mb: float
    returncode: int


@dataclass(frozen=True)
class RunResult:
    workers: int
    wall: float
    startup: float  # workers started -> first page fetched by any of them
    pages: int
    distinct: int
    usage: tuple[WorkerUsage, ...]
    redis_cpu: float
    redis_usec: float  # server time of every command (INFO commandstats), all nodes
    script_usec: float  # ... of the frontier's scripts alone (EVALSHA)
    capped: bool  # stopped by the page cap (SIGTERM), not by a drained frontier
    load: float  # 1-minute load average at the end: other work on this machine shows here

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall if self.wall else 0.0

    @property
    def cpu_per_1000(self) -> float:
        return 1000 * sum(u.cpu for u in self.usage) / self.pages if self.pages else float("nan")

    @property
    def redis_cpu_per_1000(self) -> float:
        return 1000 * self.redis_cpu / self.pages if self.pages else float("nan")

    @property
    def redis_usec_per_page(self) -> float:
        return self.redis_usec / self.pages if self.pages else float("nan")

    @property
    def script_usec_per_page(self) -> float:
        return self.script_usec / self.pages if self.pages else float("nan")

    @property
    def peak_rss_mb(self) -> float:
        return max(u.max_rss_mb for u in self.usage)

    @property
    def failed(self) -> bool:
        return self.pages == 0 or any(u.returncode != 0 for u in self.usage)


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "crawlspace.cli", *args]


def redis_cpu(deployment: RedisDeployment) -> float:
    """CPU seconds (user + sys) of the redis-server processes, summed over every node."""
    total = 0.0
    for node in deployment.nodes:
        client = connect(f"redis://127.0.0.1:{node.port}/0")
        info = client.info("cpu")
        client.close()
        total += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    return total


def redis_usec(deployment: RedisDeployment) -> tuple[float, float]:
    """(every command, the scripts alone): microseconds of server time so far, summed over every
    node (``INFO commandstats``: time spent executing, network and queueing excluded)."""
    total = scripts = 0.0
    for node in deployment.nodes:
        client = connect(f"redis://127.0.0.1:{node.port}/0")
        stats = client.info("commandstats")
        client.close()
        for name, entry in stats.items():
            usec = float(entry.get("usec", 0))
            total += usec
            if name in ("cmdstat_evalsha", "cmdstat_eval"):
                scripts += usec
    return total, scripts


def fetched(out_dirs: list[Path]) -> tuple[int, int]:
    """(fetch rows, distinct fetched files) over every worker's crawl.db."""
    urls: list[str] = []
    for out in out_dirs:
        db_path = out / "crawl.db"
        if db_path.exists():
            with closing(sqlite3.connect(db_path)) as db:
                urls += [row[0] for row in db.execute("SELECT final_url FROM fetches")]
    return len(urls), len({canonical_url(u) for u in urls})


class WorkerGroup:
    """N worker processes, reaped one by one with ``os.wait4`` for their own rusage."""

    def __init__(self, commands: list[list[str]], logs: list[Path]) -> None:
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.usage: dict[int, WorkerUsage] = {}
        for cmd, log in zip(commands, logs, strict=True):
            with log.open("wb") as sink:
                proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
            self.procs[proc.pid] = proc

    def reap(self, block: bool = False) -> None:
        for pid, proc in self.procs.items():
            if pid in self.usage:
                continue
            done, status, ru = os.wait4(pid, 0 if block else os.WNOHANG)
            if done == 0:
                continue
            proc.returncode = os.waitstatus_to_exitcode(status)
            self.usage[pid] = WorkerUsage(
                cpu=ru.ru_utime + ru.ru_stime,
                max_rss_mb=ru.ru_maxrss / 1024,  # Linux reports KiB
                returncode=proc.returncode,
            )

    @property
    def running(self) -> bool:
        return len(self.usage) < len(self.procs)

    def signal(self, sig: int) -> None:
        for pid in self.procs:
            if pid not in self.usage:  # not reaped yet, so the PID is still our child's
                os.kill(pid, sig)


def watch(
    group: WorkerGroup, counter: RedisFrontier, start: float, args: argparse.Namespace
) -> tuple[float, bool]:
    """Reap workers until all exited; SIGTERM them all once the shared counter reaches the cap.
    Returns (seconds to the first fetched page, whether the cap was signalled)."""
    startup = float("nan")
    signalled = False
    deadline = start + args.timeout
    next_count = start
    while True:
        group.reap()
        now = time.perf_counter()
        if not group.running:
            return startup, signalled
        if now >= next_count:
            next_count = now + COUNT_EVERY
            total = counter.fetched_pages()
            if total and math.isnan(startup):
                startup = now - start
            if not signalled and args.max_pages and total >= args.max_pages:
                signalled = True
                group.signal(signal.SIGTERM)
                deadline = min(deadline, now + STOP_GRACE)
        if now > deadline:
            print("past the deadline: SIGKILL to every worker", file=sys.stderr)
            group.signal(signal.SIGKILL)
            group.reap(block=True)
            return startup, signalled
        time.sleep(REAP_EVERY)


def run_once(
    n: int, deployment: RedisDeployment, seeds: list[str], work: Path, args: argparse.Namespace
) -> RunResult:
    work.mkdir(parents=True, exist_ok=True)
    config = work / "crawl.toml"
    # No max_pages in the workers' settings: every N stops the same way, by SIGTERM at the
    # shared cap (as before max_pages was crawl-wide), and no worker is signalled while it exits.
    crawlspace_config(config, 0)
    frontier_opts = ["--frontier", deployment.url, "--namespace", NAMESPACE]
    frontier_opts += ["--buckets", str(args.buckets)]
    seed = cli("seed", *frontier_opts, "--config", str(config), "-q", *seeds)
    subprocess.run(seed, check=True, timeout=60, stdout=subprocess.DEVNULL)
    counter = RedisFrontier(
        connect(deployment.url), namespace=NAMESPACE, buckets=args.buckets, epoch=0
    )
    outs = [work / f"w{i}" for i in range(n)]
    commands = [
        cli("worker", *frontier_opts, "--out", str(out), "--config", str(config), "-q")
        for out in outs
    ]
    cpu_before = redis_cpu(deployment)
    usec_before = redis_usec(deployment)
    start = time.perf_counter()
    group = WorkerGroup(commands, [work / f"w{i}.log" for i in range(n)])
    try:
        startup, signalled = watch(group, counter, start, args)
        wall = time.perf_counter() - start
        reached_cap = bool(args.max_pages) and counter.fetched_pages() >= args.max_pages
    finally:
        if group.running:
            group.signal(signal.SIGKILL)
            group.reap(block=True)
        counter.close()
    redis_seconds = redis_cpu(deployment) - cpu_before
    usec_after = redis_usec(deployment)
    for i, proc in enumerate(group.procs.values()):
        if proc.returncode != 0:
            tail = (work / f"w{i}.log").read_text(errors="replace")[-2000:]
            print(f"worker {i} exited {proc.returncode}; log tail:\n{tail}", file=sys.stderr)
    pages, distinct = fetched(outs)
    return RunResult(
        workers=n,
        wall=wall,
        startup=startup,
        pages=pages,
        distinct=distinct,
        usage=tuple(group.usage[pid] for pid in group.procs),
        redis_cpu=redis_seconds,
        redis_usec=usec_after[0] - usec_before[0],
        script_usec=usec_after[1] - usec_before[1],
        capped=reached_cap or signalled,
        load=os.getloadavg()[0],
    )


def start_redis(directory: Path, cluster: bool) -> RedisDeployment:
    return start_cluster(directory, masters=3) if cluster else start_single(directory)


def table(results: list[RunResult], counts: list[int]) -> list[str]:
    rows = [
        "| workers | runs | pages (median) | pages/s | scaling vs 1 | CPU s / 1,000 pages"
        " | Redis CPU s / 1,000 pages | Redis server µs / page (scripts)"
        " | peak RSS MB / worker | start-up s | repeat fetches |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rates = {n: median([r.pages_per_s for r in results if r.workers == n]) for n in counts}
    base = rates.get(1)
    for n in counts:
        mine = [r for r in results if r.workers == n]
        scaling = f"{rates[n] / base:.2f}x" if base else "n/a"
        repeats = sum(r.pages - r.distinct for r in mine)
        rows.append(
            f"| {n} | {len(mine)} | {median([float(r.pages) for r in mine]):,.0f}"
            f" | {rates[n]:,.1f} | {scaling} | {median([r.cpu_per_1000 for r in mine]):.2f}"
            f" | {median([r.redis_cpu_per_1000 for r in mine]):.2f}"
            f" | {median([r.redis_usec_per_page for r in mine]):,.0f}"
            f" ({median([r.script_usec_per_page for r in mine]):,.0f})"
            f" | {median([r.peak_rss_mb for r in mine]):,.0f}"
            f" | {median([r.startup for r in mine]):.1f} | {repeats} |"
        )
    return rows


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    add = parser.add_argument
    add("--runs", type=int, default=1, help="runs per worker count (median reported)")
    add("--workers", default="1,2,4", help="comma-separated worker counts")
    add("--max-pages", type=int, help="stop the crawl at this many pages (1500); 0 = all")
    add("--hosts", type=int, default=16, help="loopback hosts 127.0.0.1..N")
    add("--cluster", action="store_true", help="a 3-master Redis Cluster, not one Redis")
    add("--buckets", type=int, default=1024, help="host buckets (crawlspace's default: 1024)")
    add("--timeout", type=float, default=1800.0, help="per run, then the workers are killed")
    add("--generated-pages", type=int, default=600, help="fallback corpus size")
    add("--generated", action="store_true", help="use the generated corpus")
    add("--no-install", action="store_true", help="never apt-get python3.11-doc")
    add("--aiohttp", action="store_true", help="serve with aiohttp, not nginx")
    add("--quick", action="store_true", help="CI smoke: 1 and 2 workers, ~150 pages, 4 hosts")
    args = parser.parse_args()
    if args.quick:
        # A generated corpus keeps the smoke run fast and independent of apt and nginx.
        args.runs, args.workers = 1, "1,2"
        args.max_pages = 150 if args.max_pages is None else args.max_pages
        args.hosts, args.generated, args.generated_pages, args.no_install = 4, True, 300, True
    args.max_pages = 1500 if args.max_pages is None else args.max_pages
    args.counts = [int(n) for n in args.workers.split(",")]
    if not 1 <= args.hosts <= 254 or min(args.counts) < 1 or args.runs < 1:
        parser.error("--hosts must be 1..254, worker counts and --runs at least 1")
    return args


def report(
    args: argparse.Namespace,
    corpus: Corpus,
    server: StaticServer,
    redis: str,
    results: list[RunResult],
) -> None:
    limit = f"page cap {args.max_pages:,}" if args.max_pages else "no page cap"
    print(
        f"## crawlspace workers on a shared {redis} ({args.buckets} buckets): {args.hosts} hosts,"
        f" {limit},"
        f" median of {args.runs} run(s)\n"
    )
    print(f"- corpus: {corpus.description}: {len(corpus.html_files)} allowed HTML files per host")
    print(f"- server: {server.kind}; per worker: concurrency 64, 1 in flight per host, no delay")
    print(*machine_info(), sep="\n")
    cores = os.cpu_count() or 1
    print(
        f"- note: workers, their parse processes, Redis, the web server and this driver share"
        f" {cores} cores, so N workers cannot scale past ~{cores}x here; pages/s = all fetches /"
        " wall time, start-up included; CPU = sum of the workers' rusage"
    )
    loads = [r.load for r in results]
    print(f"- 1-minute load average at the end of each run: {min(loads):.1f} to {max(loads):.1f}")
    print()


def main() -> int:
    args = parse_args()
    if shutil.which("redis-server") is None:
        print("redis-server is not installed (apt-get install redis-server)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="crawlspace-workers-bench-"))
    results: list[RunResult] = []
    try:
        corpus = prepare_corpus(
            work,
            install=not args.no_install,
            generated_pages=args.generated_pages,
            generated_only=args.generated,
        )
        addresses = [f"127.0.0.{i}" for i in range(1, args.hosts + 1)]
        with StaticServer(corpus.root, addresses, prefer_nginx=not args.aiohttp) as server:
            seeds = [f"{h}/index.html" for h in server.base_urls()]
            for run in range(args.runs):
                for n in args.counts:
                    run_dir = work / f"run{run}-n{n}"
                    deployment = start_redis(run_dir / "redis", args.cluster)
                    try:
                        result = run_once(n, deployment, seeds, run_dir, args)
                    finally:
                        deployment.stop()
                    results.append(result)
                    why = "page cap" if result.capped else "drained"
                    print(
                        f"run {run + 1}/{args.runs} {n} worker(s): {result.pages} pages"
                        f" ({result.distinct} distinct) in {result.wall:.1f}s ({why}),"
                        f" {result.pages_per_s:.1f} pages/s, worker CPU"
                        f" {sum(u.cpu for u in result.usage):.1f}s, Redis CPU"
                        f" {result.redis_cpu:.1f}s, load {result.load:.1f},"
                        f" exits {[u.returncode for u in result.usage]}",
                        file=sys.stderr,
                    )
                    shutil.rmtree(run_dir, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    redis = "3-master Redis Cluster" if args.cluster else "single Redis"
    report(args, corpus, server, redis, results)
    print(*table(results, args.counts), sep="\n")
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
