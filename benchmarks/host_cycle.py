"""Where a host's cycle goes: the steps between one request to a host and its next, in time.

    python benchmarks/host_cycle.py [--corpus postgres|python] [--hosts N] [--max-pages 0]
        [--generated]

With one request in flight per host and no delay, a crawl of N hosts makes N / (the host's
cycle) pages a second, whatever its CPU: on ordinary pages the cycle, not the CPU, bounds the
rate (``thread_cpu.py`` shows every thread with room). This runs the crawl of
``crawl_vs_scrapy.py`` once with the stamps of ``cycle_probe/sitecustomize.py`` in every process
(the crawl's and its parse workers') and prints each step's median, mean and 90th percentile in
milliseconds over the parsed pages:

- the lease's task started -> its request began, the fetch (the address token, the request
  and the body), -> the parse job sent;
- the parse round trip, and within it: sent -> the worker has the job (waiting for the worker,
  and reading and unpickling it), the job itself, the job's end -> the crawl loop resumes with
  the answer (pickling, the socket, and the loop getting to it);
- -> the commit submitted, the commit (the group commit's turn and the transaction);
- the host's gap: one page's task ended -> the host's next task started.

The stamps cost a few microseconds a step; take rates from ``crawl_vs_scrapy.py``, the shape
of the cycle from here. Linux and macOS (the clock shared between processes is
``time.monotonic``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
PROBE_DIR = BENCH_DIR / "cycle_probe"
sys.path.insert(0, str(BENCH_DIR))

from corpus import SOURCES, add_crawl_arguments, precompile, served_corpus  # noqa: E402
from crawl_vs_scrapy import command, fetched_urls  # noqa: E402

Span = tuple[float, float]


def run_probed(cmd: list[str], stamps: Path) -> float:
    """Run ``cmd`` with the probe in its processes; its wall seconds."""
    paths = [str(PROBE_DIR), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    env["CRAWLSPACE_CYCLE_PROBE"] = str(stamps)
    started = time.monotonic()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the crawl failed (exit {done.returncode})")
    return time.monotonic() - started


def worker_jobs(stamps: Path) -> dict[int, list[list[float]]]:
    """Each parse worker's jobs (arrived, began, ended), by its pid, in order."""
    return {
        int(path.stem.split("-")[1]): json.loads(path.read_text())
        for path in stamps.glob("worker-*.json")
    }


def round_trips(
    sends: list[list[float]], jobs: dict[int, list[list[float]]]
) -> list[dict[str, float]]:
    """The parse round trips with their worker's side: a worker answers its jobs in the order
    they were sent, so the n-th job sent to a worker is the n-th it ran."""
    by_worker: dict[int, list[list[float]]] = {}
    for pid, sent, resumed in sorted(sends, key=lambda s: s[1]):
        by_worker.setdefault(int(pid), []).append([sent, resumed])
    trips = []
    for pid, sent_jobs in by_worker.items():
        # (strict=False: a worker replaced mid-crawl wrote no stamps for its last jobs)
        done = zip(sent_jobs, jobs.get(pid, []), strict=False)
        for (sent, resumed), (arrived, began, ended) in done:
            trips.append(
                {
                    "sent -> the worker has the job": arrived - sent,
                    "the worker has it -> it begins": began - arrived,
                    "the job": ended - began,
                    "the job's end -> the loop resumes": resumed - ended,
                }
            )
    return trips


def page_steps(pages: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Each step's durations over the parsed pages, in the order of the cycle."""
    steps: dict[str, list[float]] = {}

    def add(name: str, seconds: float) -> None:
        steps.setdefault(name, []).append(seconds)

    last: dict[str, dict[str, Any]] = {}
    for page in sorted(pages, key=lambda p: p["start"]):
        previous = last.get(page["host"])
        last[page["host"]] = page
        if not ("fetch" in page and "parse" in page and "commit" in page):
            continue  # robots.txt, a redirect, a page not parsed: not an ordinary cycle
        fetch, parse, commit = page["fetch"][0], page["parse"][0], page["commit"][-1]
        add("lease's task started -> request began", fetch[0] - page["start"])
        add("fetch (address token, request, body)", fetch[1] - fetch[0])
        add("-> parse job sent", parse[0] - fetch[1])
        add("parse round trip", parse[1] - parse[0])
        add("-> commit submitted", commit[0] - parse[1])
        add("commit (group commit's turn, transaction)", commit[1] - commit[0])
        add("task's end after the commit", page["end"] - commit[1])
        if previous is not None:
            add(
                "host's gap (its last task ended -> this one started)",
                page["start"] - previous["end"],
            )
            add(
                "host's cycle (its last task started -> this one started)",
                page["start"] - previous["start"],
            )
    return steps


def table(rows: dict[str, list[float]]) -> list[str]:
    lines = ["| step | median ms | mean ms | p90 ms |", "|---|---:|---:|---:|"]
    for name, values in rows.items():
        if not values:
            continue
        ordered = sorted(values)
        p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
        median, mean = statistics.median(values), statistics.fmean(values)
        lines.append(f"| {name} | {1000 * median:.2f} | {1000 * mean:.2f} | {1000 * p90:.2f} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    add_crawl_arguments(parser)
    args = parser.parse_args()
    precompile()
    work = Path(tempfile.mkdtemp(prefix="crawlspace-cycle-"))
    stamps = work / "stamps"
    stamps.mkdir()
    install, hosts = not args.no_install, args.hosts or SOURCES[args.corpus].default_hosts
    try:
        with served_corpus(
            work, args.corpus, install=install, generated=args.generated, hosts=hosts
        ) as (corpus, _, seeds):
            out = work / "crawl"
            wall = run_probed(command("crawlspace", seeds, out, args.max_pages), stamps)
            fetched = len(fetched_urls("crawlspace", out))
        crawl = json.loads((stamps / "crawl.json").read_text())
        trips = round_trips(crawl["sends"], worker_jobs(stamps))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    steps = page_steps(crawl["pages"])
    parsed = len(next(iter(steps.values()), []))
    print(f"## A host's cycle ({corpus.description}, {hosts} hosts)\n")
    print(f"{fetched:,} pages in {wall:.2f} s ({fetched / wall:.1f} pages/s), {parsed:,} parsed\n")
    print("\n".join(table(steps)))
    print("\nThe parse round trip, by side:\n")
    print("\n".join(table({name: [t[name] for t in trips] for name in (trips[:1] or [{}])[0]})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
