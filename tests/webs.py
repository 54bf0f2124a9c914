"""Small test webs built on crawlspace.demo.webfarm, shared by the integration tests."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from crawlspace.crawl.crawler import Crawler, CrawlSummary
from crawlspace.demo.webfarm import Response, Site, WebFarm, html, html_site


def linked_pages(
    count: int, *, others: Mapping[str, Sequence[str]] | None = None, prefix: str = "/p"
) -> dict[str, str]:
    """``count`` pages in a chain-with-shortcuts graph, each linking to a few others.

    ``others`` maps a path on this site to absolute URLs of other sites' pages to link to.
    """
    pages: dict[str, str] = {}
    for i in range(count):
        links = {f"{prefix}{(i + 1) % count}.html", f"{prefix}{(i * 7 + 3) % count}.html"}
        if i == 0:
            links |= {f"{prefix}{j}.html" for j in range(0, count, 5)}
        anchors = "".join(f'<a href="{href}">page {href}</a> ' for href in sorted(links))
        extra = "".join(
            f'<a href="{u}">elsewhere</a> ' for u in (others or {}).get(f"{prefix}{i}.html", ())
        )
        pages[f"{prefix}{i}.html"] = (
            f"<html><head><title>Page {i}</title></head><body><h1>Page {i}</h1>"
            f"<p>Words about topic {i} and more words {i * 13}.</p>{anchors}{extra}</body></html>"
        )
    pages["/"] = pages[f"{prefix}0.html"]
    return pages


def site_with_robots(name: str, count: int, robots: str | None, **kw: object) -> Site:
    return html_site(name, linked_pages(count), robots=robots, **kw)  # type: ignore[arg-type]


def status_site(name: str, robots_status: int, count: int = 5) -> Site:
    routes = {p: html(t) for p, t in linked_pages(count).items()}
    routes["/robots.txt"] = Response(robots_status, {"Content-Type": "text/plain"}, b"error")
    return Site(name, routes)


def slow_site(name: str, count: int, delay: float) -> Site:
    routes = {p: html(t, delay=delay) for p, t in linked_pages(count).items()}
    routes["/robots.txt"] = Response(404, {}, b"", delay=delay)
    return Site(name, routes)


__all__ = [
    "WebFarm",
    "crawl_command",
    "linked_pages",
    "run_and_close",
    "site_with_robots",
    "slow_site",
    "stats_json",
    "status_site",
]


def run_and_close(crawler: Crawler, seeds: Iterable[str]) -> CrawlSummary:
    """Seed an in-process crawl, run it to its end, close its store whatever happens."""
    try:
        crawler.add_seeds(seeds)
        return crawler.run()
    finally:
        crawler.close()


def stats_json(out: Path) -> dict[str, Any]:
    """What `crawlspace stats DIR --json` prints, run as a user would."""
    command = [sys.executable, "-m", "crawlspace.cli", "stats", str(out), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def crawl_command(out: Path, config_toml: str, seeds: Iterable[str]) -> list[str]:
    """`crawlspace crawl` as a subprocess command line; the config is written beside ``out``.

    Crawls judged by timing run in their own process, so the in-process servers' timestamps are
    not delayed by the crawler holding the GIL.
    """
    config = out.parent / f"{out.name}.toml"
    config.write_text(config_toml)
    return [
        sys.executable,
        "-m",
        "crawlspace.cli",
        "crawl",
        "--out",
        str(out),
        "--config",
        str(config),
        "-q",
        *seeds,
    ]
