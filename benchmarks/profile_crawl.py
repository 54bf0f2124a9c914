"""Where a crawl's CPU goes: one crawlspace crawl of a benchmark corpus under py-spy.

    python benchmarks/profile_crawl.py [--corpus python|postgres] [--max-pages 1000]
        [--hosts N] [--top 25]

Serves a corpus of ``crawl_vs_scrapy.py`` over nginx on loopback hosts (python3.11-doc by
default, on 8 hosts; postgresql-doc-15 on 4; ``--max-pages 0``: no limit), runs the same crawl
command under ``py-spy record --subprocesses`` (the parse workers included) and prints two
Markdown tables: CPU milliseconds per fetched page by process (the crawl loop vs the parse
workers) and the functions with the most self time. py-spy must be on PATH (``pip install
py-spy``; it needs ptrace, so root or CAP_SYS_PTRACE). Sampling slows the crawl a little: take
rates from ``crawl_vs_scrapy.py``, shares from here.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from corpus import SOURCES, precompile, served_corpus  # noqa: E402
from crawl_vs_scrapy import command, fetched_urls  # noqa: E402

RATE = 250  # samples per second per process
# Leaves where a thread only waits (py-spy does not always see these threads as idle): left out
# of the CPU figures and reported as one line.
WAITING = ("select (selectors.py)", "wait (threading.py)", "watch (crawl/stages.py)")


def leaf(frame: str) -> str:
    """``func (path/to/module.py:123)`` -> ``func (module.py)``: lines vary, functions don't."""
    name, _, where = frame.partition(" (")
    module = where.rsplit(":", 1)[0].rsplit("/", 1)[-1]
    return f"{name} ({module})" if module else name


def summarize(raw: Path, pages: int, top: int) -> list[str]:
    """py-spy's raw format: one ``frame;frame;...;leaf count`` line per distinct stack, the
    first frame naming the process when --subprocesses is on."""
    per_process: collections.Counter[str] = collections.Counter()
    per_leaf: collections.Counter[str] = collections.Counter()
    total = waiting = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        n = int(count)
        if len(frames) == 1 or leaf(frames[-1]).endswith(WAITING):
            waiting += n
            continue
        total += n
        worker = "crawlspace.crawl.parse_worker" in stack or "serve_jobs" in stack
        role = "parse worker" if worker else "loop"
        per_process[role] += n
        per_leaf[leaf(frames[-1])] += n
    ms = 1000 / RATE / max(pages, 1)
    rows = [
        f"{pages:,} pages, {total:,} samples at {RATE}/s"
        f" ({waiting:,} more in threads waiting on a selector, a lock or a sleep)\n",
        "| process | CPU ms / page | share |",
        "|---|---:|---:|",
    ]
    rows += [
        f"| {role} | {n * ms:.2f} | {n / total:.0%} |" for role, n in per_process.most_common()
    ]
    rows += ["", "| function (self time) | CPU ms / page | share |", "|---|---:|---:|"]
    rows += [
        f"| `{name}` | {n * ms:.2f} | {n / total:.1%} |" for name, n in per_leaf.most_common(top)
    ]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", choices=sorted(SOURCES), default="python")
    parser.add_argument("--max-pages", type=int, default=1000)
    parser.add_argument("--hosts", type=int, help="loopback hosts (the corpus's default)")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--generated", action="store_true", help="use the generated corpus")
    parser.add_argument("--raw", type=Path, help="also keep py-spy's raw stacks in this file")
    args = parser.parse_args()
    spy = shutil.which("py-spy")
    if spy is None:
        print("py-spy is not on PATH: pip install py-spy", file=sys.stderr)
        return 2
    precompile()  # start-up without compiling, as an installed package starts
    work = Path(tempfile.mkdtemp(prefix="crawlspace-profile-"))
    try:
        with served_corpus(
            work, args.corpus, install=True, generated=args.generated, hosts=args.hosts
        ) as (corpus, _, seeds):
            out = work / "crawl"
            raw = work / "profile.txt"
            cmd = [spy, "record", "--subprocesses", "--rate", str(RATE), "--format", "raw"]
            cmd += ["--output", str(raw), "--", *command("crawlspace", seeds, out, args.max_pages)]
            subprocess.run(cmd, check=True, capture_output=True)
            pages = len(fetched_urls("crawlspace", out))
            if args.raw:
                shutil.copyfile(raw, args.raw)
        print(f"## Where crawlspace's CPU goes ({corpus.description})\n")
        print(*summarize(raw, pages, args.top), sep="\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
