"""A parse worker's page without the crawl around it: CPU per page of two crawlspace trees on the
same files, in one process each, alternating: the paired figure for a change inside the parse
worker, too small to see through a whole crawl's noise.

    python benchmarks/parse_cost.py --base REV [--head REV] [--corpus python|postgres]
        [--rounds 5] [--generated]

A crawl on this 2-core VM moves by ~5% between runs (``pair_trees.py``), so a cut of 2% of a
page's CPU is invisible there. Here each side parses the corpus's allowed files as a worker does
(the processor: lexbor's parse, the links and their anchors, the text, simhash and sketch; then
the links normalized with their anchors, and the feed's page document), timed with the process's
CPU clock, the best pass of all (other tenants of a VM only ever slow a pass down, as timeit
reasons); sides alternate A B A B in fresh subprocesses with
``PYTHONPATH=<tree>/src`` (each tree checked out and built as ``pair_trees.py`` does). Admission
and the WARC records, which need a crawl's settings, are left out: changes to them are measured
with ``pair_trees.py``.

``python benchmarks/parse_cost.py --measure`` times the crawlspace it imports and prints one
line (what each side runs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from corpus import SOURCES, prepare_corpus  # noqa: E402
from pair_trees import build_helpers, worktree  # noqa: E402

DOCUMENT_CHARS = 20_000  # the feed's default text budget (feed_text_chars)


def measure(root: Path, files: list[str], passes: int) -> dict[str, float]:
    """CPU ms per page of each step over ``files``, best of ``passes``."""
    from crawlspace.crawl.parse_jobs import page_document
    from crawlspace.discovery.links import prenormalize
    from crawlspace.parse.processors import process_html

    pages = [((root / rel).read_bytes(), f"http://127.0.0.1:8000/{rel}") for rel in files]
    best: dict[str, float] = {}
    for _ in range(passes):
        spent = {"processor": 0.0, "links normalized": 0.0, "feed document": 0.0}
        for body, url in pages:
            began = time.process_time()
            content = process_html(
                body, url=url, content_type="text/html", product_token="crawlspace"
            )
            parsed = time.process_time()
            prelinks = prenormalize(content.links, content.base_url, content.anchors)
            normalized = time.process_time()
            page_document(content, prelinks, DOCUMENT_CHARS)
            spent["processor"] += parsed - began
            spent["links normalized"] += normalized - parsed
            spent["feed document"] += time.process_time() - normalized
        spent["all"] = sum(spent.values())
        for step, seconds in spent.items():
            per_page = 1000 * seconds / len(pages)
            best[step] = min(best.get(step, per_page), per_page)
    return best


def run_side(src: Path, root: Path, files_json: Path, passes: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, __file__, "--measure", "--root", str(root)]
    command += ["--files", str(files_json), "--passes", str(passes)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", help="side A: a git revision")
    parser.add_argument("--head", help="side B: a git revision (default: this working tree)")
    parser.add_argument("--corpus", default="python", choices=sorted(SOURCES))
    parser.add_argument("--rounds", type=int, default=5, help="A B rounds")
    parser.add_argument("--passes", type=int, default=2, help="passes over the files a round")
    parser.add_argument("--generated", action="store_true", help="a generated corpus (CI smoke)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--files", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        files = json.loads(args.files.read_text())
        print(json.dumps(measure(args.root, files, args.passes)))
        return 0
    if args.base is None:
        parser.error("--base is required")
    with tempfile.TemporaryDirectory(prefix="crawlspace-parse-cost-") as tmp:
        work = Path(tmp)
        corpus = prepare_corpus(
            work,
            install=False,
            generated_pages=200,
            generated_only=args.generated,
            name=args.corpus,
        )
        files_json = work / "files.json"
        files_json.write_text(json.dumps(list(corpus.html_files)))
        with worktree(args.base, work) as base_tree:
            head_src = BENCH_DIR.parent / "src"
            build_helpers(head_src.parent)  # its bytecode, as the worktrees get theirs
            if args.head is None:
                return _rounds(args, corpus.root, files_json, base_tree / "src", head_src)
            with worktree(args.head, work) as head_tree:
                return _rounds(args, corpus.root, files_json, base_tree / "src", head_tree / "src")


def _rounds(
    args: argparse.Namespace,
    root: Path,
    files_json: Path,
    base_src: Path,
    head_src: Path,
) -> int:
    sides: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for _ in range(args.rounds):
        sides["A"].append(run_side(base_src, root, files_json, args.passes))
        sides["B"].append(run_side(head_src, root, files_json, args.passes))
    labels = {"A": args.base, "B": args.head or "working tree"}
    pages = len(json.loads(files_json.read_text()))
    print(f"## A parse worker's page, A/B: {args.corpus} ({pages} files), {args.rounds} rounds\n")
    steps = list(sides["A"][0])
    print("CPU ms per page, the best pass of each side:\n")
    print("| side | tree | " + " | ".join(f"{s} ms" for s in steps) + " |")
    print("|---|---|" + "---:|" * len(steps))
    medians = {}
    for side, results in sides.items():
        medians[side] = [min(r[s] for r in results) for s in steps]
        cells = " | ".join(f"{v:.3f}" for v in medians[side])
        print(f"| {side} | {labels[side]} | {cells} |")
    ratios = " | ".join(f"{b / a:.3f}x" for a, b in zip(medians["A"], medians["B"], strict=True))
    print(f"| B / A | | {ratios} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
