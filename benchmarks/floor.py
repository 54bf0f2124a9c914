"""The floor: the CPU a crawled HTML page cannot avoid, timed in one process.

For each file (read from disk untimed), in this order:

1. **parse**: lexbor builds the DOM from the raw bytes (``selectolax.lexbor.LexborHTMLParser``);
2. **links**: ``a[href]`` selected and each ``href`` read (``node.attrs.get("href")``);
3. **join**: each href joined to the page URL with ada (its C API through cffi, as
   ``crawlspace.urls`` calls it: the cheapest ada call; ``ada_url.join_url`` if that is absent);
4. **text**: the visible text: ``script``, ``style``, ``noscript`` and ``template`` removed, then
   the body's ``text(separator=" ", strip=True)``;
5. **sha256**: SHA-256 of the text encoded as UTF-8;
6. **gzip**: the raw bytes compressed at level 6 (``zlib.compress(raw, 6)``, stdlib zlib).

No decoding, normalization, scope or robots check, dedup, queue, storage, networking or event
loop: anything a crawler does beyond these is above the floor. Each step is timed with the
thread's CPU clock; a pass covers every file, the best of ``repeat`` passes is kept (per page:
total CPU of the pass / files).

Run: python benchmarks/floor.py --corpus python|postgres [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import ada_url
from selectolax.lexbor import LexborHTMLParser

STEPS = ("parse", "links", "join", "text", "sha256", "gzip")
INVISIBLE = ["script", "style", "noscript", "template"]


def _ada_joiner() -> Callable[[str, str], str | None]:
    """ada's join through its C API (no Python URL object per call), else the public one."""
    try:
        from ada_url._ada_wrapper import ffi, lib

        parse_with_base, is_valid = lib.ada_parse_with_base, lib.ada_is_valid
        get_href, free, unpack = lib.ada_get_href, lib.ada_free, ffi.unpack
    except (ImportError, AttributeError):  # pragma: no cover - depends on ada_url's internals

        def join_public(base: str, href: str) -> str | None:
            try:
                return ada_url.join_url(base, href)
            except ValueError:
                return None

        return join_public

    def join(base: str, href: str) -> str | None:
        raw, raw_base = href.encode(), base.encode()
        handle = parse_with_base(raw, len(raw), raw_base, len(raw_base))
        try:
            if not is_valid(handle):
                return None
            view = get_href(handle)
            joined: str = unpack(view.data, view.length).decode("ascii")
            return joined
        finally:
            free(handle)

    return join


@dataclass(frozen=True)
class Floor:
    ms_per_page: float  # CPU ms per page, all steps
    pages: int
    bytes: int  # raw bytes of all the pages
    links: int  # hrefs joined, all pages
    steps: dict[str, float] = field(default_factory=dict)  # CPU ms per page, by step

    @property
    def kib_per_page(self) -> float:
        return self.bytes / 1024 / self.pages if self.pages else 0.0

    def summary(self) -> str:
        steps = ", ".join(f"{name} {self.steps[name]:.3f}" for name in STEPS)
        return (
            f"{self.ms_per_page:.3f} CPU ms/page over {self.pages:,} pages"
            f" ({self.kib_per_page:.1f} KiB, {self.links / max(self.pages, 1):.0f} links a page);"
            f" ms/page: {steps}"
        )


def _one_pass(
    pages: list[tuple[str, bytes]], join: Callable[[str, str], str | None]
) -> tuple[dict[str, int], int]:
    clock = time.thread_time_ns
    spent = dict.fromkeys(STEPS, 0)
    links = 0
    for url, raw in pages:
        t0 = clock()
        tree = LexborHTMLParser(raw)
        t1 = clock()
        hrefs = [node.attrs.get("href") or "" for node in tree.css("a[href]")]
        t2 = clock()
        for href in hrefs:
            join(url, href)
        t3 = clock()
        tree.strip_tags(INVISIBLE, recursive=True)
        body = tree.body
        text = body.text(separator=" ", strip=True) if body is not None else ""
        t4 = clock()
        hashlib.sha256(text.encode("utf-8")).digest()
        t5 = clock()
        zlib.compress(raw, 6)
        t6 = clock()
        links += len(hrefs)
        for name, start, end in zip(
            STEPS, (t0, t1, t2, t3, t4, t5), (t1, t2, t3, t4, t5, t6), strict=True
        ):
            spent[name] += end - start
    return spent, links


def measure_floor(root: Path, files: Sequence[str], base_url: str, repeat: int = 3) -> Floor:
    """The floor over ``files`` (paths relative to ``root``), each page's URL being
    ``base_url/path``: the best of ``repeat`` passes, in CPU ms per page."""
    base = base_url.rstrip("/")
    pages = [(f"{base}/{rel}", (root / rel).read_bytes()) for rel in files]
    if not pages:
        return Floor(0.0, 0, 0, 0, dict.fromkeys(STEPS, 0.0))
    join = _ada_joiner()
    best: dict[str, int] | None = None
    links = 0
    for _ in range(max(1, repeat)):
        spent, links = _one_pass(pages, join)
        if best is None or sum(spent.values()) < sum(best.values()):
            best = spent
    assert best is not None
    per_page = {name: ns / 1e6 / len(pages) for name, ns in best.items()}
    return Floor(
        ms_per_page=sum(per_page.values()),
        pages=len(pages),
        bytes=sum(len(raw) for _, raw in pages),
        links=links,
        steps=per_page,
    )


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from corpus import SOURCES, prepare_corpus

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", choices=sorted(SOURCES), default="python")
    parser.add_argument("--repeat", type=int, default=3, help="passes; the best is kept")
    parser.add_argument("--base-url", default="http://127.0.0.1:8080", help="the pages' host")
    parser.add_argument("--generated", action="store_true", help="use the generated corpus")
    parser.add_argument("--no-install", action="store_true", help="never apt-get the docs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crawlspace-floor-") as work:
        corpus = prepare_corpus(
            Path(work),
            install=not args.no_install,
            generated_pages=600,
            generated_only=args.generated,
            name=args.corpus,
        )
        floor = measure_floor(corpus.root, corpus.html_files, args.base_url, args.repeat)
    print(f"## The floor: {corpus.description}, best of {args.repeat} pass(es)\n")
    print("| step | CPU ms / page | share |")
    print("|---|---:|---:|")
    for name in STEPS:
        share = floor.steps[name] / floor.ms_per_page if floor.ms_per_page else 0.0
        print(f"| {name} | {floor.steps[name]:.3f} | {share:.0%} |")
    print(f"| **all** | **{floor.ms_per_page:.3f}** | |")
    print(
        f"\n{floor.pages:,} pages (robots.txt's allowed HTML files), {floor.bytes / 2**20:.1f} MiB,"
        f" {floor.kib_per_page:.1f} KiB and {floor.links / floor.pages:.1f} links a page"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
