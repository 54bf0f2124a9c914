"""The `crawlspace` command's options: the crawl's flags, the shared frontier's, and how the
flags become a CrawlConfig (defaults <- TOML file <- flags) and the set of settings given."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from crawlspace.config_sources import build_config, given_settings

DEFAULT_DASHBOARD_PORT = 8765


def crawl_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--reconfigure",
        action="store_true",
        help="change settings a resumed crawl started with (each change is listed)",
    )
    add = parser.add_argument
    add("--config", type=Path, help="TOML file with crawl settings (flags override it)")
    add("--user-agent", help="User-Agent; the robots product token is the part before '/'")
    add("--scope", choices=["host", "domain", "any"], help="which discovered URLs to follow")
    add(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="add a host to the scope (repeatable)",
    )
    add("--max-pages", type=int, help="stop after this many fetched pages")
    add("--max-depth", type=int, help="links deeper than this are not followed (default 10)")
    add("--max-pages-per-host", type=int, help="admit at most this many URLs per host")
    add("--max-url-length", type=int, help="longer URLs are dropped (default 2048)")
    add("--min-delay", type=float, help="minimum seconds between requests to a host (default 1)")
    add(
        "--delay-factor",
        type=float,
        help="gap after a fetch = max(min-delay, factor x its duration) (default 10)",
    )
    add(
        "--max-in-flight-per-ip",
        type=int,
        metavar="N",
        help="requests in flight to one server address, whatever its host names (default 4)",
    )
    add(
        "--min-delay-per-ip",
        type=float,
        metavar="SECONDS",
        help="minimum seconds between requests to one server address (default 0)",
    )
    add(
        "--max-rate",
        type=float,
        metavar="PER_SECOND",
        help="at most this many requests started per second in all, every worker together"
        " (default: no cap beyond politeness)",
    )
    add("--concurrency", type=int, help="total fetches in flight")
    add("--duration", type=float, metavar="SECONDS", help="stop gracefully after this long")
    add(
        "--continuous",
        action="store_true",
        help="keep running: revisit fetched URLs at their adaptive intervals (recrawl)",
    )
    add("--max-bytes", type=int, metavar="N", help="stop after downloading this many bytes")
    add(
        "--allow-net",
        action="append",
        default=[],
        metavar="CIDR",
        help="allow fetching from this network, e.g. 127.0.0.0/8 (repeatable); on its addresses"
        " only the seeds' host:port and --allow-host entries are in scope",
    )
    add(
        "--include",
        action="append",
        default=[],
        metavar="PATTERN",
        help="follow only links matching a pattern '[HOST_GLOB ]GLOB' or '[HOST_GLOB ]re:REGEX'"
        " over path+query (repeatable; seeds always)",
    )
    add(
        "--exclude",
        action="append",
        default=[],
        metavar="PATTERN",
        help="never crawl URLs matching a pattern, as --include's (repeatable)",
    )
    add(
        "--no-parent",
        action="store_true",
        help="follow only links below the seeds' directories (adds them to --include)",
    )
    add(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="add a request header to every request, as curl -H (repeatable)",
    )
    add(
        "--proxy",
        metavar="URL",
        help="send every request through this HTTP proxy, http://[USER:PASSWORD@]HOST:PORT",
    )
    add(
        "--extract",
        metavar="MODULE:FUNCTION",
        help="call this function with each parsed page and store the dicts it returns as items",
    )
    add(
        "--render",
        choices=["never", "auto", "always"],
        help="render pages that need JavaScript in headless Chromium (default never)",
    )
    add(
        "--render-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="--render always renders this host's pages (repeatable; none: every host)",
    )
    add(
        "--page-requisites",
        action="store_true",
        help="also fetch the stylesheets, scripts, images and fonts pages embed",
    )
    add(
        "--resolve",
        action="append",
        default=[],
        metavar="HOST:PORT:ADDR",
        help="use ADDR for HOST:PORT instead of DNS, like curl (repeatable)",
    )
    add(
        "--sitemap",
        action="append",
        default=[],
        metavar="URL",
        help="crawl the URLs this sitemap (or sitemap index) lists (repeatable)",
    )
    add(
        "--metrics-port",
        type=port_number,
        metavar="PORT",
        help="serve Prometheus metrics on 127.0.0.1",
    )
    add("--dashboard", action="store_true", help="serve the live dashboard on 127.0.0.1")
    add(
        "--dashboard-port",
        type=port_number,
        metavar="PORT",
        help=f"(default {DEFAULT_DASHBOARD_PORT})",
    )
    add(
        "--index",
        action="store_true",
        help="keep a search index of the crawl current while it runs (crawlspace search DIR)",
    )
    add("-q", "--quiet", action="store_true", help="no progress line, warnings only")
    add("-v", "--verbose", action="store_true", help="debug logging")
    add("--log-json", action="store_true", help="structured JSON log lines on stderr")


def config_from(args: argparse.Namespace, **extra: Any) -> Any:
    return build_config(args.config, **overrides(args, extra))


def given_from(args: argparse.Namespace, **extra: Any) -> frozenset[str]:
    """The settings this command line gives (a resume keeps the others, crawl/settings.py)."""
    return given_settings(args.config, **overrides(args, extra))


def overrides(args: argparse.Namespace, extra: dict[str, Any]) -> dict[str, Any]:
    overrides = {
        "user_agent": args.user_agent,
        "scope": args.scope,
        "allow_hosts": tuple(args.allow_host),
        "max_pages": args.max_pages,
        "max_depth": args.max_depth,
        "max_pages_per_host": args.max_pages_per_host,
        "max_url_length": args.max_url_length,
        "min_delay": args.min_delay,
        "delay_factor": args.delay_factor,
        "max_in_flight_per_ip": args.max_in_flight_per_ip,
        "min_delay_per_ip": args.min_delay_per_ip,
        "max_rate": args.max_rate,
        "concurrency": args.concurrency,
        "duration": args.duration,
        "continuous": True if args.continuous else None,
        "max_bytes": args.max_bytes,
        "allow_nets": tuple(args.allow_net),
        "include": tuple(args.include),
        "exclude": tuple(args.exclude),
        "resolve": tuple(args.resolve),
        "headers": tuple(args.header),
        "proxy": args.proxy,
        "sitemaps": tuple(args.sitemap),
        "metrics_port": args.metrics_port,
        "page_requisites": True if args.page_requisites else None,
        "render": args.render,
        "render_hosts": tuple(args.render_host),
        "extract": args.extract,
    }
    overrides.update(extra)
    return overrides


def frontier_options(parser: argparse.ArgumentParser, *, reading: bool = False) -> None:
    add = parser.add_argument
    add(
        "--frontier",
        required=not reading,
        metavar="URL",
        help="redis://HOST:PORT or redis+cluster://HOST:PORT,HOST:PORT,... (shared frontier)"
        + (" to read instead of a crawl directory" if reading else ""),
    )
    add("--namespace", default="cs", help="key prefix of this crawl in Redis (default cs)")
    if reading:
        add("--buckets", type=int, help="host buckets (default: the crawl's own, read from Redis)")
    else:
        add("--buckets", type=int, default=1024, help="host buckets; the same for every process")


def durability_options(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add(
        "--wait-replicas",
        type=int,
        default=1,
        metavar="N",
        help="WAIT until N replicas have each lease grant before fetching it, and each page's"
        " links on other shards before completing it, so a failover can neither put two"
        " requests on one host nor lose links (Redis Cluster with replicas; default 1; 0: off)",
    )
    add(
        "--wait-timeout",
        type=float,
        default=0.2,
        metavar="SECONDS",
        help="longest WAIT; past it a lease is given back unfetched and a page completes"
        " anyway (default 0.2)",
    )


def port_number(text: str) -> int:
    """A TCP port for argparse (0: any free port)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535 (got {port})")
    return port
