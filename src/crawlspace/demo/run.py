"""`crawlspace demo`: serve the bundled sample web on loopback and crawl it, offline."""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path

from rich.console import Console

from crawlspace.config import CrawlConfig
from crawlspace.demo.sample_web import base_urls_for, resolve_map, sample_farm, seed_urls
from crawlspace.errors import OutputDirError
from crawlspace.fetch.settings import ResolveOverride
from crawlspace.ops.indexer import index_feeds
from crawlspace.ops.runner import print_summary, run_crawl
from crawlspace.ops.search_index import SearchIndex

# The demo should be quick but still visibly polite: a short gap, one request per host.
DEMO_MIN_DELAY = 0.1
DEMO_DELAY_FACTOR = 2.0
# The blog asks for a Crawl-delay of 1 s: capped here (max_crawl_delay) so that its 15 pages do
# not make the whole demo wait 15 s; its gap still shows, five times the others'.
DEMO_MAX_CRAWL_DELAY = 0.5
# What the demo searches its index for once the crawl is done.
DEMO_QUERY = "archive"


def demo_config(resolve: dict[str, tuple[str, int]], *, progress: bool) -> CrawlConfig:
    return CrawlConfig(
        scope="domain",
        allow_nets=("127.0.0.0/8",),
        resolve=tuple(ResolveOverride(host, port, addr) for host, (addr, port) in resolve.items()),
        min_delay=DEMO_MIN_DELAY,
        delay_factor=DEMO_DELAY_FACTOR,
        max_depth=6,
        max_crawl_delay=DEMO_MAX_CRAWL_DELAY,
        concurrency=8,
        progress=progress,
    )


# Written into every demo directory: only a directory holding it is emptied by the next demo.
DEMO_MARK = ".crawlspace-demo"


def fresh_demo_dir(out_dir: Path) -> None:
    """Each demo starts from nothing. The demo's settings (a 0.1 s gap, Crawl-delay capped at
    0.5 s) must never resume a real crawl, so a non-empty directory without the demo's mark is
    refused, and one with it is emptied (unless a demo is running in it)."""
    if out_dir.exists() and any(out_dir.iterdir()):
        if not (out_dir / DEMO_MARK).is_file():
            raise OutputDirError(
                f"{out_dir} is not a crawlspace demo directory and is not empty;"
                " give the demo a new or empty --out directory"
            )
        with open(out_dir / ".lock", "a+") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise OutputDirError(f"{out_dir} is in use by a running demo") from None
            shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / DEMO_MARK).write_text("made by `crawlspace demo`; the next demo empties this\n")


def run_demo(out_dir: Path, *, quiet: bool = False) -> int:
    fresh_demo_dir(out_dir)
    console = Console()
    with sample_farm() as farm:
        ports = {name: farm.port(name) for name in farm.names}
        seeds = seed_urls(base_urls_for(ports))
        if not quiet:
            console.print("[bold]crawlspace demo[/]: a sample web of 4 hosts on loopback:")
            for host, (addr, port) in resolve_map(farm).items():
                console.print(f"  http://{host}:{port}/  ->  {addr}:{port}")
            console.print(f"seed: {seeds[0]}   output: {out_dir}")
        config = demo_config(resolve_map(farm), progress=not quiet)
        summary = run_crawl(config, out_dir, seeds)
        print_summary(out_dir, summary)
    # The crawl's index feed into a search index, and a first search of it.
    index_feeds([out_dir], out_dir / "index.db")
    with SearchIndex(out_dir / "index.db") as index:
        hits = index.search(DEMO_QUERY, limit=3)
    if not quiet:
        console.print(f"\n[bold]crawlspace search {out_dir} {DEMO_QUERY}[/]")
        for rank, hit in enumerate(hits, 1):
            console.print(f"{rank}. {hit.title}  {hit.url}\n   {hit.snippet}", markup=False)
        console.print(
            f"\nNext: [bold]crawlspace stats {out_dir}[/],"
            f" [bold]crawlspace search {out_dir} WORDS[/],"
            f" [bold]crawlspace feed {out_dir}[/],"
            f" [bold]warcio index {out_dir}/warc/*.warc.gz[/]"
        )
    return 0
