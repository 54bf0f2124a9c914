"""Run a crawl with terminal progress and print its summary (shared by `crawl` and `demo`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler, CrawlSummary
from crawlspace.ops.report import crawl_stats

if TYPE_CHECKING:
    from rich.console import Console

# rich (the progress line, the summary table) is imported only where it is used: a quiet crawl
# never needs it, and it was ~30 ms of every crawl's start and ~6 MB of its memory.


def run_crawl(
    config: CrawlConfig,
    out_dir: Path,
    seeds: list[str],
    *,
    given: frozenset[str] | None = None,
    reconfigure: bool = False,
) -> CrawlSummary:
    crawler = Crawler(config, out_dir, given=given, reconfigure=reconfigure)
    try:
        crawler.add_seeds(seeds)
        if config.progress:
            from crawlspace.ops.progress import CrawlProgress

            with CrawlProgress() as progress:
                return crawler.run_with_progress(progress)
        return crawler.run()
    finally:
        crawler.close()


def print_stats(stats: dict[str, Any], console: Console | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title="crawl summary", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("pages fetched", f"{stats['pages']:,}")
    table.add_row("bytes", f"{stats['bytes']:,}")
    table.add_row("hosts (crawled / known)", f"{stats['hosts_crawled']} / {stats['hosts']}")
    table.add_row("URLs known", f"{stats['urls']:,} ({stats['queued']:,} still queued)")
    table.add_row("URL states", ", ".join(f"{k} {v}" for k, v in sorted(stats["states"].items())))
    table.add_row("HTTP status", ", ".join(f"{k}: {v}" for k, v in stats["statuses"].items()))
    table.add_row("exact duplicates (text)", str(stats["exact_duplicates"]))
    table.add_row("dedup", ", ".join(f"{k} {v}" for k, v in stats.get("dedup", {}).items()))
    table.add_row("excluded/failed", ", ".join(f"{k} {v}" for k, v in stats["reasons"].items()))
    table.add_row("links rejected", ", ".join(f"{k} {v}" for k, v in stats["rejections"].items()))
    table.add_row("robots.txt", ", ".join(f"{k} {v}" for k, v in stats["robots"].items()))
    table.add_row(
        "robots.txt status",
        ", ".join(f"{k}: {v}" for k, v in stats["robots_statuses"].items()),
    )
    table.add_row("sitemaps", ", ".join(f"{k} {v}" for k, v in stats["sitemaps"].items()))
    table.add_row("WARC", f"{stats['warc_dir']} ({len(stats['warc_files'])} files)")
    feed = stats.get("feed") or {}
    if feed:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(feed["kinds"].items()))
        table.add_row("index feed", f"{feed['records']:,} records ({kinds or 'none yet'})")
        index = feed.get("index")
        table.add_row(
            "search index",
            f"{index['documents']:,} documents, {index['behind']:,} feed records behind"
            if index
            else "none (crawlspace index DIR)",
        )
    if stats.get("recovery"):
        table.add_row("recovery", ", ".join(f"{k} {v}" for k, v in stats["recovery"].items()))
    if stats.get("render"):
        table.add_row("rendered", ", ".join(f"{k} {v}" for k, v in stats["render"].items()))
    console.print(table)


def print_summary(out_dir: Path, summary: CrawlSummary, *, quiet: bool = False) -> None:
    """The stop line, the summary table (not with ``quiet``) and what the user can do next."""
    stopped = f"after {summary.elapsed:.1f}s, {summary.pages} pages this run"
    stats = crawl_stats(out_dir)
    steps = next_steps(summary.stop_reason, stats)
    if quiet:  # plain lines, one each, whole (logs are grepped)
        print(f"stopped: {summary.stop_reason} {stopped}", *steps, sep="\n", flush=True)
        return
    from rich.console import Console

    console = Console()
    console.print(f"stopped: [bold]{summary.stop_reason}[/] {stopped}")
    print_stats(stats, console)
    for line in steps:
        console.print(line, soft_wrap=True)  # (one line each, whole: logs are grepped)


# What a stop leaves to do, by its reason: the limits count the whole crawl, across runs.
_GO_ON = {
    "signal": "run the same command to go on from here",
    "duration": "run the same command to go on from here",
    "max_pages": "max_pages counts the crawl's pages across runs: rerun with a higher"
    " --max-pages to go on",
    "max_bytes": "max_bytes counts the crawl's bytes across runs: rerun with a higher"
    " --max-bytes to go on",
}


def next_steps(stop_reason: str, stats: dict[str, Any]) -> list[str]:
    """Hints after a crawl's summary: how to go on, and why nothing was fetched from a site
    the address guard refused (the one exclusion a new user cannot guess the cause of)."""
    lines = []
    if stats["queued"] and stop_reason in _GO_ON:
        lines.append(f"{stats['queued']:,} URLs still queued; {_GO_ON[stop_reason]}")
    blocked = sum(n for k, n in stats["reasons"].items() if k.endswith(":blocked_address"))
    if blocked:
        lines.append(
            f"hint: {blocked:,} URL(s) were refused because their address is private, loopback"
            " or link-local; to crawl such a network on purpose, name it with --allow-net"
            " (e.g. --allow-net 127.0.0.0/8 for this machine)"
        )
    return lines
