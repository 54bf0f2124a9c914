"""Paired A/B of two crawlspace trees on one corpus: the before-and-after figures every change to
the per-page path needs (benchmarks/README.md).

    python benchmarks/pair_trees.py --base REV [--head REV] [--corpus postgres] [--pairs 3]

Checks ``--base`` (and ``--head``, else the working tree this script is in) out into temporary
git worktrees (their compiled helpers built in place), serves the corpus once
(crawl_vs_scrapy.py's server and settings), and crawls it with each tree in turn, A B A B ...,
each run a fresh ``crawlspace crawl`` subprocess with
``PYTHONPATH=<tree>/src``, measured as crawl_vs_scrapy.py measures (``os.wait4``: wall and CPU of
the whole process tree, start-up included; peak RSS and PSS over the tree). Alternating keeps a
machine that slows down or speeds up during the session from favouring one side. Prints each
run, then the medians and B/A ratios as one Markdown table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))

from corpus import SOURCES, precompile, served_corpus  # noqa: E402
from crawl_vs_scrapy import RunResult, run_once  # noqa: E402


@contextmanager
def worktree(rev: str, parent: Path) -> Iterator[Path]:
    """``rev`` checked out (detached) in a worktree under ``parent``; removed afterwards."""
    path = parent / f"tree-{rev.replace('/', '_')}"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(path), rev], check=True
    )
    try:
        build_helpers(path)
        yield path
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)], check=False
        )


def build_helpers(tree: Path) -> None:
    """A tree's bytecode and compiled helpers (setup.py), built in place, as ``pip install``
    builds them: the crawl imports ``<tree>/src`` and must run the code it would run there."""
    precompile(tree / "src")
    if (tree / "setup.py").exists():
        subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=tree,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


@contextmanager
def python_path(src: Path) -> Iterator[None]:
    """Crawler subprocesses started inside import crawlspace from ``src``."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(src)
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def table(sides: dict[str, list[RunResult]], labels: dict[str, str]) -> list[str]:
    rows = [
        "| side | tree | runs | pages (median) | pages/s | CPU ms / page | cores used"
        " | peak RSS MB, all processes | peak PSS MB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    medians: dict[str, tuple[float, float]] = {}
    for side, results in sides.items():
        rate = statistics.median(r.pages_per_s for r in results)
        cpu = statistics.median(r.cpu_ms_per_page for r in results)
        medians[side] = (rate, cpu)
        rows.append(
            f"| {side} | {labels[side]} | {len(results)}"
            f" | {statistics.median(r.pages for r in results):,.0f} | {rate:,.1f} | {cpu:.2f}"
            f" | {statistics.median(r.cores for r in results):.2f}"
            f" | {statistics.median(r.tree_rss_mb for r in results):,.0f}"
            f" | {statistics.median(r.tree_pss_mb for r in results):,.0f} |"
        )
    (rate_a, cpu_a), (rate_b, cpu_b) = medians["A"], medians["B"]
    rows.append(f"| B / A | | | | {rate_b / rate_a:.3f}x | {cpu_b / cpu_a:.3f}x | | | |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", required=True, help="side A: a git revision")
    parser.add_argument("--head", help="side B: a git revision (default: this working tree)")
    parser.add_argument("--corpus", default="postgres", choices=sorted(SOURCES))
    parser.add_argument("--pairs", type=int, default=3, help="A B rounds")
    parser.add_argument("--hosts", type=int, help="default: the corpus's (crawl_vs_scrapy.py)")
    parser.add_argument("--max-pages", type=int, default=0, help="0 = the whole corpus")
    parser.add_argument("--generated", action="store_true", help="a generated corpus (CI smoke)")
    parser.add_argument("--no-install", action="store_true", help="never apt-get the corpus")
    args = parser.parse_args()
    if args.pairs < 1:
        parser.error("--pairs must be at least 1")
    work = Path(tempfile.mkdtemp(prefix="crawlspace-pair-"))
    try:
        with worktree(args.base, work) as base_tree:
            if args.head is None:
                return run_pairs(args, work, {"A": base_tree, "B": REPO})
            with worktree(args.head, work) as head_tree:
                return run_pairs(args, work, {"A": base_tree, "B": head_tree})
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_pairs(args: argparse.Namespace, work: Path, trees: dict[str, Path]) -> int:
    hosts_n = args.hosts or SOURCES[args.corpus].default_hosts
    labels = {"A": args.base, "B": args.head or "working tree"}
    sides: dict[str, list[RunResult]] = {"A": [], "B": []}
    install = not args.no_install
    with served_corpus(
        work, args.corpus, install=install, generated=args.generated, hosts=hosts_n
    ) as (corpus, server, seeds):
        expected = corpus.expected_urls(server.base_urls())
        for run in range(args.pairs):
            for side, tree in trees.items():
                out = work / f"{side}-{run}"
                with python_path(tree / "src"):
                    result = run_once(
                        "crawlspace", seeds, out, args.max_pages, corpus=corpus, expected=expected
                    )
                shutil.rmtree(out, ignore_errors=True)
                sides[side].append(result)
                print(
                    f"{side} ({labels[side]}) run {run + 1}: {result.pages} pages in"
                    f" {result.wall:.2f} s, CPU {result.cpu:.2f} s, exit {result.returncode}",
                    file=sys.stderr,
                )
    print(f"## crawlspace A/B: {corpus.description}, {hosts_n} hosts, {args.pairs} pair(s)\n")
    print(*table(sides, labels), sep="\n")
    failed = [r for results in sides.values() for r in results if r.returncode or not r.pages]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
