"""Where a crawl's CPU goes, exactly: CPU per page of each process and thread of one crawlspace
crawl, read from the kernel's own accounting (``/proc/<pid>/task/<tid>/stat``), and how busy each
was over the crawl.

    python benchmarks/thread_cpu.py [--corpus python|postgres] [--hosts N] [--max-pages 0]
        [--generated]

Serves a corpus of ``crawl_vs_scrapy.py`` over nginx on loopback hosts and runs the same crawl
command, reading every thread's user + system time 20 times a second until the crawl exits (a
thread's last reading stands for it). py-spy (``profile_crawl.py``) says which functions cost,
but it also counts a thread blocked in ``recv`` or ``fsync`` as busy: here only the CPU the
kernel charged counts, so the table answers "which process is the bottleneck" (a thread busy
~100% of the wall time is; a crawl whose threads all have room is bound by its hosts' cycle).
Linux only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from corpus import SOURCES, add_crawl_arguments, precompile, served_corpus  # noqa: E402
from crawl_vs_scrapy import command, fetched_urls  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_SECONDS = 0.05


def descendants(root: int) -> list[int]:
    """``root`` and every process under it (the parse workers), from /proc's children lists."""
    found, index = [root], 0
    while index < len(found):
        pid = found[index]
        index += 1
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                children = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
                found += [int(c) for c in children if int(c) not in found]
        except OSError:  # gone meanwhile
            continue
    return found


def thread_seconds(pids: list[int]) -> dict[tuple[int, int], float]:
    """(pid, tid) -> the thread's user + system seconds so far."""
    seconds: dict[tuple[int, int], float] = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            seconds[(pid, int(tid))] = (int(fields[11]) + int(fields[12])) / TICKS
    return seconds


def role(root: int, pid: int, tid: int, workers: list[int]) -> str:
    if pid == root:
        return "crawl loop (main thread)" if tid == pid else f"crawl process, thread {tid}"
    return f"parse worker {workers.index(pid) + 1}" if pid in workers else f"process {pid}"


def measure(
    cmd: list[str], timeline: list[tuple[float, float]] | None = None
) -> tuple[float, dict[str, float]]:
    """Run ``cmd`` to its end: its wall seconds and each thread's CPU seconds by role.

    ``timeline``, if given, gets (seconds since the start, the tree's CPU seconds so far) at
    every sample: where in the crawl the cores were not busy (start-up, the last host's tail).
    """
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    last: dict[tuple[int, int], float] = {}
    while proc.poll() is None:
        last.update(thread_seconds(descendants(proc.pid)))
        if timeline is not None:
            timeline.append((time.monotonic() - started, sum(last.values())))
        time.sleep(SAMPLE_SECONDS)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"the crawl failed (exit {proc.returncode})")
    workers = sorted({pid for pid, _ in last if pid != proc.pid})
    by_role: dict[str, float] = {}
    for (pid, tid), cpu in last.items():
        name = role(proc.pid, pid, tid, workers)
        by_role[name] = by_role.get(name, 0.0) + cpu
    return wall, by_role


def print_timeline(timeline: list[tuple[float, float]], window: float) -> None:
    """Cores used in each ``window`` seconds of the crawl."""
    print(f"\n## Cores used, each {window:g} s\n")
    print("| from s | cores |")
    print("|---:|---:|")
    mark, cpu_at_mark = 0.0, 0.0
    for at, cpu in timeline:
        if at - mark >= window:
            print(f"| {mark:.1f} | {(cpu - cpu_at_mark) / (at - mark):.2f} |")
            mark, cpu_at_mark = at, cpu
    at, cpu = timeline[-1]
    if at > mark:  # the last, shorter window: the crawl's tail
        print(f"| {mark:.1f} | {(cpu - cpu_at_mark) / (at - mark):.2f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    add_crawl_arguments(parser)
    parser.add_argument(
        "--timeline",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="also print the cores used in each window of this many seconds",
    )
    args = parser.parse_args()
    if not Path("/proc/self/task").is_dir():
        print("thread_cpu.py reads /proc: Linux only", file=sys.stderr)
        return 2
    precompile()
    work = Path(tempfile.mkdtemp(prefix="crawlspace-threads-"))
    install, hosts = not args.no_install, args.hosts or SOURCES[args.corpus].default_hosts
    try:
        with served_corpus(
            work, args.corpus, install=install, generated=args.generated, hosts=hosts
        ) as (corpus, _, seeds):
            out = work / "crawl"
            timeline: list[tuple[float, float]] | None = [] if args.timeline else None
            cmd = command("crawlspace", seeds, out, args.max_pages)
            wall, by_role = measure(cmd, timeline)
            pages = len(fetched_urls("crawlspace", out))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = sum(by_role.values())
    print(f"## CPU by thread ({corpus.description}, {hosts} hosts)\n")
    rate = pages / wall
    print(f"{pages:,} pages in {wall:.2f} s ({rate:.1f} pages/s), {total / wall:.2f} cores\n")
    print("| thread | CPU s | CPU ms / page | busy (of the wall time) |")
    print("|---|---:|---:|---:|")
    for name, cpu in sorted(by_role.items(), key=lambda item: -item[1]):
        print(f"| {name} | {cpu:.2f} | {1000 * cpu / max(pages, 1):.3f} | {cpu / wall:.0%} |")
    print(f"| all | {total:.2f} | {1000 * total / max(pages, 1):.3f} | {total / wall:.0%} |")
    if timeline:
        print_timeline(timeline, args.timeline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
