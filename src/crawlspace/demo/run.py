"""`crawlspace demo`: serve the bundled sample web on loopback and crawl it, offline."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from crawlspace.config import CrawlConfig, ResolveOverride
from crawlspace.demo.sample_web import base_urls_for, resolve_map, sample_farm, seed_urls
from crawlspace.runner import print_summary, run_crawl

# The demo should be quick but still visibly polite: a short gap, one request per host.
DEMO_MIN_DELAY = 0.1
DEMO_DELAY_FACTOR = 2.0


def demo_config(resolve: dict[str, tuple[str, int]], *, progress: bool) -> CrawlConfig:
    return CrawlConfig(
        scope="domain",
        allow_nets=("127.0.0.0/8",),
        resolve=tuple(ResolveOverride(host, port, addr) for host, (addr, port) in resolve.items()),
        min_delay=DEMO_MIN_DELAY,
        delay_factor=DEMO_DELAY_FACTOR,
        max_depth=6,
        max_crawl_delay=1.0,
        concurrency=8,
        progress=progress,
    )


def run_demo(out_dir: Path, *, quiet: bool = False) -> int:
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
        if not quiet:
            console.print(
                f"\nNext: [bold]crawlspace stats {out_dir}[/],"
                f" [bold]crawlspace export {out_dir} --what fetches[/],"
                f" [bold]warcio index {out_dir}/warc/*.warc.gz[/]"
            )
    return 0
