"""The `crawlspace` command. Each subcommand is a few lines over a library call."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sqlite3
import sys
from pathlib import Path
from typing import Any

from crawlspace import __version__
from crawlspace.config import build_config, given_settings
from crawlspace.errors import ConfigError, CrawlspaceError


def _crawl_options(parser: argparse.ArgumentParser) -> None:
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
    add("--metrics-port", type=_port, metavar="PORT", help="serve Prometheus metrics on 127.0.0.1")
    add("--dashboard", action="store_true", help="serve the live dashboard on 127.0.0.1")
    add("--dashboard-port", type=_port, default=8765, metavar="PORT", help="(default 8765)")
    add("-q", "--quiet", action="store_true", help="no progress line, warnings only")
    add("-v", "--verbose", action="store_true", help="debug logging")
    add("--log-json", action="store_true", help="structured JSON log lines on stderr")


def _config_from(args: argparse.Namespace, **extra: Any) -> Any:
    return build_config(args.config, **_overrides(args, extra))


def _given_from(args: argparse.Namespace, **extra: Any) -> frozenset[str]:
    """The settings this command line gives (a resume keeps the others, crawl/settings.py)."""
    return given_settings(args.config, **_overrides(args, extra))


def _overrides(args: argparse.Namespace, extra: dict[str, Any]) -> dict[str, Any]:
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
        "concurrency": args.concurrency,
        "duration": args.duration,
        "continuous": True if args.continuous else None,
        "max_bytes": args.max_bytes,
        "allow_nets": tuple(args.allow_net),
        "resolve": tuple(args.resolve),
        "sitemaps": tuple(args.sitemap),
        "metrics_port": args.metrics_port,
    }
    overrides.update(extra)
    return overrides


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(
            {
                "ts": record.created,
                "level": record.levelname,
                "logger": record.name,
                "msg": record.getMessage(),
            }
        )


def _setup_logging(args: argparse.Namespace) -> None:
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    if getattr(args, "log_json", False):
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)


def _cmd_crawl(args: argparse.Namespace) -> int:
    from crawlspace.crawl.runner import print_summary, run_crawl

    seeds = list(args.seeds)
    if args.seeds_file:
        try:
            text = args.seeds_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise ConfigError(f"cannot read the seeds file {args.seeds_file}: {reason}") from None
        seeds += [
            line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
        ]
    config = _config_from(args, progress=not args.quiet)
    settings = {"given": _given_from(args), "reconfigure": args.reconfigure}
    if args.dashboard:
        from crawlspace.dashboard.server import DashboardServer

        with DashboardServer(args.out, args.dashboard_port) as dashboard:
            print(f"dashboard at {dashboard.url}", file=sys.stderr, flush=True)
            summary = run_crawl(config, args.out, seeds, **settings)
    else:
        summary = run_crawl(config, args.out, seeds, **settings)
    print_summary(args.out, summary)
    if summary.error:
        print(f"crawlspace: error: {summary.error}", file=sys.stderr)
        return 3
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from crawlspace.demo.run import run_demo

    return run_demo(args.out, quiet=args.quiet)


def _reads_frontier(args: argparse.Namespace) -> bool:
    """`stats` and `export` read a crawl directory, or a shared frontier with --frontier."""
    if (args.dir is None) == (args.frontier is None):
        raise ConfigError("give either a crawl directory or --frontier URL")
    return args.frontier is not None


def _cmd_stats(args: argparse.Namespace) -> int:
    from crawlspace.crawl.runner import print_stats
    from crawlspace.ops.report import crawl_stats
    from crawlspace.ops.shared_report import frontier_summary, print_frontier_stats

    if _reads_frontier(args):
        stats = frontier_summary(args.frontier, namespace=args.namespace, buckets=args.buckets)
        show = print_frontier_stats
    else:
        stats, show = crawl_stats(args.dir), print_stats
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        show(stats)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from crawlspace.ops.export import write_export, write_frontier_export

    frontier = _reads_frontier(args)
    if args.format == "parquet":
        if frontier:
            raise ConfigError("--format parquet reads a crawl directory; use jsonl or csv")
        from crawlspace.telemetry.parquet import write_parquet

        write_parquet(args.dir, args.what, args.output)
        return 0
    with (
        args.output.open("w", encoding="utf-8", newline="")
        if args.output is not None
        else contextlib.nullcontext(sys.stdout)
    ) as stream:
        if frontier:
            write_frontier_export(
                args.frontier,
                args.what,
                args.format,
                stream,
                namespace=args.namespace,
                buckets=args.buckets,
            )
        else:
            write_export(args.dir, args.what, args.format, stream)
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from crawlspace.dashboard.server import serve_forever

    serve_forever(args.dir, args.port)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from crawlspace.dashboard import write_report

    print(f"wrote {write_report(args.dir, args.out)}")
    return 0


def _cmd_seed(args: argparse.Namespace) -> int:
    from crawlspace.crawl.worker import Resume, seed_frontier

    config = _config_from(args, progress=False)
    added = seed_frontier(
        config,
        args.frontier,
        args.seeds,
        namespace=args.namespace,
        buckets=args.buckets,
        resume=Resume(_given_from(args), args.reconfigure),
    )
    print(f"added {added} of {len(args.seeds)} seeds to {args.frontier}")
    return 0


def _cmd_worker(args: argparse.Namespace) -> int:
    from crawlspace.crawl.runner import print_summary
    from crawlspace.crawl.worker import Durability, Resume, run_worker

    config = _config_from(args, progress=False)
    durability = Durability(args.wait_replicas, args.wait_timeout)
    summary = run_worker(
        config,
        args.out,
        args.frontier,
        namespace=args.namespace,
        buckets=args.buckets,
        durability=durability,
        resume=Resume(_given_from(args), args.reconfigure),
    )
    if not args.quiet:
        print_summary(args.out, summary)
    return 3 if summary.error else 0


def _frontier_options(parser: argparse.ArgumentParser, *, reading: bool = False) -> None:
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


def _durability_options(parser: argparse.ArgumentParser) -> None:
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


def _port(text: str) -> int:
    """A TCP port for argparse (0: any free port)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535 (got {port})")
    return port


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crawlspace", description="A polite, crash-safe crawler.")
    parser.add_argument("--version", action="version", version=f"crawlspace {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    crawl = sub.add_parser("crawl", help="crawl from seed URLs into an output directory")
    crawl.add_argument("seeds", nargs="*", metavar="SEED_URL")
    crawl.add_argument("--out", type=Path, required=True, help="crawl directory (resumable)")
    crawl.add_argument("--seeds", dest="seeds_file", type=Path, help="file with one seed per line")
    _crawl_options(crawl)
    crawl.set_defaults(func=_cmd_crawl)

    demo = sub.add_parser("demo", help="crawl a bundled sample web on loopback, offline")
    demo.add_argument("--out", type=Path, default=Path("crawlspace-demo"))
    demo.add_argument("-q", "--quiet", action="store_true")
    demo.add_argument("-v", "--verbose", action="store_true")
    demo.set_defaults(func=_cmd_demo)

    stats = sub.add_parser("stats", help="summarize a crawl directory or a shared frontier")
    stats.add_argument("dir", type=Path, nargs="?", help="crawl directory (or give --frontier)")
    stats.add_argument("--json", action="store_true")
    _frontier_options(stats, reading=True)
    stats.set_defaults(func=_cmd_stats, quiet=True, verbose=False)

    export = sub.add_parser("export", help="write urls, fetches or links, one record per line")
    export.add_argument("dir", type=Path, nargs="?", help="crawl directory (or give --frontier)")
    export.add_argument(
        "--what",
        required=True,
        choices=["urls", "fetches", "links", "events", "hosts", "duplicates"],
        help="with --frontier: urls, events or hosts",
    )
    export.add_argument("--format", default="jsonl", choices=["jsonl", "csv", "parquet"])
    export.add_argument(
        "--output", type=Path, help="file to write (required for parquet; default stdout)"
    )
    _frontier_options(export, reading=True)
    export.set_defaults(func=_cmd_export, quiet=True, verbose=False)

    serve = sub.add_parser("serve", help="serve a live dashboard of a crawl on 127.0.0.1")
    serve.add_argument("dir", type=Path)
    serve.add_argument("--port", type=_port, default=8765)
    serve.set_defaults(func=_cmd_serve, quiet=False, verbose=False)

    report = sub.add_parser("report", help="write a self-contained HTML report of a crawl")
    report.add_argument("dir", type=Path)
    report.add_argument("--out", type=Path, default=Path("report.html"))
    report.set_defaults(func=_cmd_report, quiet=True, verbose=False)

    seed = sub.add_parser("seed", help="add seed URLs to a shared (Redis) frontier")
    seed.add_argument("seeds", nargs="+", metavar="SEED_URL")
    _frontier_options(seed)
    _crawl_options(seed)
    seed.set_defaults(func=_cmd_seed)

    worker = sub.add_parser("worker", help="crawl from a shared (Redis) frontier, one of many")
    worker.add_argument("--out", type=Path, required=True, help="this worker's own directory")
    _frontier_options(worker)
    _durability_options(worker)
    _crawl_options(worker)
    worker.set_defaults(func=_cmd_worker)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging(args)
    try:
        return int(args.func(args))
    except CrawlspaceError as exc:
        print(f"crawlspace: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except (OSError, sqlite3.DatabaseError) as exc:
        # Committed state is intact: the same command resumes once the cause is fixed.
        print(f"crawlspace: error: cannot read or write the crawl files: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
