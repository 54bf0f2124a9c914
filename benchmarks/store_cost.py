"""What a page costs the embedded store on the crawl loop: SQL statements a page by kind, and the
loop thread's CPU a page in the group commit and the lease round, for one tree or two.

    python benchmarks/store_cost.py [--base REV] [--head REV] [--corpus python] [--rounds 2]

Serves a corpus of ``crawl_vs_scrapy.py`` (its server and settings) and crawls it with the probe
of ``store_probe/sitecustomize.py`` in the crawl process. With ``--base`` it checks the revisions
out as ``pair_trees.py`` does (``--head`` defaults to this working tree) and alternates them,
A B A B. The CPU is the loop thread's own (``time.thread_time``, the median of ``--rounds``
runs a side), so a change to the store's work shows through a busy machine's noise that hides
it in a whole crawl's pages per second. One more run a side counts the statements (exact, the
same from run to run; counting costs CPU, so that run is not timed).
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
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
PROBE_DIR = BENCH_DIR / "store_probe"
sys.path.insert(0, str(BENCH_DIR))

from corpus import SOURCES, add_crawl_arguments, precompile, served_corpus  # noqa: E402
from crawl_vs_scrapy import command, fetched_urls  # noqa: E402
from pair_trees import worktree  # noqa: E402

TOP_STATEMENTS = 24


@contextmanager
def trees(base: str | None, head: str | None, work: Path) -> Iterator[dict[str, Path]]:
    """The sides to crawl with: this tree alone, or A (``base``) and B (``head`` or this)."""
    if base is None:
        yield {"this tree": REPO}
        return
    with ExitStack() as stack:
        found = {f"A ({base})": stack.enter_context(worktree(base, work))}
        b = REPO if head is None else stack.enter_context(worktree(head, work))
        found[f"B ({head or 'working tree'})"] = b
        yield found


def probed_run(cmd: list[str], tree: Path, probe: Path, *, sql: bool) -> dict[str, Any]:
    """One crawl with the probe and ``tree``'s code first on the path; what the probe wrote
    (``sql``: the statements counted, else the transactions timed)."""
    paths = [str(PROBE_DIR), str(tree / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    env["CRAWLSPACE_STORE_PROBE"] = str(probe)
    if sql:
        env["CRAWLSPACE_STORE_PROBE_SQL"] = "1"
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the crawl failed (exit {done.returncode})")
    found: dict[str, Any] = json.loads(probe.read_text())
    return found


Run = tuple[int, dict[str, Any]]  # pages fetched, what the probe wrote


def report(name: str, runs: list[Run], counted: Run) -> list[str]:
    """One side's Markdown: the loop's CPU a page in the two calls (medians of the timed
    runs), then the statements a page of the counting run."""
    lines = [f"### {name}: {runs[0][0]:,} pages, {len(runs)} timed run(s), medians\n"]
    lines += ["| on the loop | CPU ms / page | calls / page |", "|---|---:|---:|"]
    for call in ("complete_many", "lease"):
        per_page = [1000 * probe["cpu"].get(call, 0.0) / pages for pages, probe in runs]
        counts = [probe["calls"].get(call, 0) / pages for pages, probe in runs]
        lines.append(
            f"| `{call}` | {statistics.median(per_page):.3f} | {statistics.median(counts):.2f} |"
        )
    pages, probe = counted
    total = sum(probe["statements"].values()) / pages
    lines += ["", f"{total:.1f} SQL statements a page (one more run), the most run:", ""]
    lines += ["| statements / page | kind |", "|---:|---|"]
    for sql, n in sorted(probe["statements"].items(), key=lambda kv: -kv[1])[:TOP_STATEMENTS]:
        lines.append(f"| {n / pages:.2f} | `{sql}` |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    add_crawl_arguments(parser)
    parser.add_argument("--base", help="side A: a git revision (default: this tree alone)")
    parser.add_argument("--head", help="side B: a git revision (default: this working tree)")
    parser.add_argument("--rounds", type=int, default=2, help="timed runs of each side")
    args = parser.parse_args()
    precompile()
    work = Path(tempfile.mkdtemp(prefix="crawlspace-store-cost-"))
    hosts = args.hosts or SOURCES[args.corpus].default_hosts
    try:
        with (
            trees(args.base, args.head, work) as sides,
            served_corpus(
                work,
                args.corpus,
                install=not args.no_install,
                generated=args.generated,
                hosts=hosts,
            ) as (corpus, _, seeds),
        ):
            timed: dict[str, list[Run]] = {name: [] for name in sides}
            counted: dict[str, Run] = {}
            for round_ in range(args.rounds + 1):  # the last round counts statements
                for side, (name, tree) in enumerate(sides.items()):
                    out = work / f"crawl-{round_}-{side}"
                    cmd = command("crawlspace", seeds, out, args.max_pages)
                    probe = probed_run(cmd, tree, work / "probe.json", sql=round_ == args.rounds)
                    run = (len(fetched_urls("crawlspace", out)), probe)
                    shutil.rmtree(out, ignore_errors=True)
                    if round_ < args.rounds:
                        timed[name].append(run)
                    else:
                        counted[name] = run
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"## The store's side of a page ({corpus.description}, {hosts} hosts)\n")
    for name, runs in timed.items():
        print("\n".join(report(name, runs, counted[name])), end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
