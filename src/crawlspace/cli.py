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

from crawlspace.cli_index import add_index_commands
from crawlspace.cli_options import (
    DEFAULT_DASHBOARD_PORT,
    config_from,
    crawl_options,
    durability_options,
    frontier_options,
    given_from,
    port_number,
)
from crawlspace.errors import ConfigError, CrawlspaceError, OutputDirError, StoreIOError
from crawlspace.version import __version__


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


def _includes(args: argparse.Namespace, seeds: list[str]) -> dict[str, tuple[str, ...]]:
    """The include patterns given, with the seeds' directories under --no-parent."""
    from crawlspace.frontier.budgets import parent_patterns

    if args.no_parent and not seeds:
        raise ConfigError(
            "--no-parent keeps the crawl below its seeds' directories: give the seeds on the"
            " same command line (a resumed crawl keeps the ones it stored)"
        )
    parents = parent_patterns(seeds) if args.no_parent else ()
    return {"include": (*args.include, *parents)}


def _seeds_from(args: argparse.Namespace) -> list[str]:
    """The seed URLs given as arguments, then those of ``--seeds FILE`` (one a line; ``#``
    comments)."""
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
    return seeds


def _cmd_crawl(args: argparse.Namespace) -> int:
    from crawlspace.ops.runner import print_summary, run_crawl

    seeds = _seeds_from(args)
    # --log-json: stderr carries JSON lines only, so no progress line and no plain message.
    include = _includes(args, seeds)
    config = config_from(args, progress=not args.quiet and not args.log_json, **include)
    _check_new_crawl(args.out, seeds, config.sitemaps)
    if (args.out / "crawl.db").exists() and not args.quiet:
        if args.log_json:
            logging.getLogger("crawlspace").info("resuming the crawl in %s", args.out)
        else:
            print(f"resuming the crawl in {args.out}", file=sys.stderr, flush=True)
    settings = {"given": given_from(args, **include), "reconfigure": args.reconfigure}
    with contextlib.ExitStack() as beside:
        _start_beside(args, beside)
        summary = run_crawl(config, args.out, seeds, **settings)
    print_summary(args.out, summary, quiet=args.quiet)
    if summary.error:
        print(f"crawlspace: error: {summary.error}", file=sys.stderr)
        return 3
    return 0


def _start_beside(args: argparse.Namespace, stack: contextlib.ExitStack) -> None:
    """What runs beside a crawl or worker until it ends: the dashboard, the search index."""
    if args.dashboard:
        from crawlspace.dashboard.data import SharedFrontier
        from crawlspace.dashboard.server import DashboardServer
        from crawlspace.store.redis.frontier import connect

        port = DEFAULT_DASHBOARD_PORT if args.dashboard_port is None else args.dashboard_port
        from crawlspace.store.control import CONTROL_FILE, CrawlControl, FileControl, RedisControl

        shared = None
        control: CrawlControl = FileControl(args.out / CONTROL_FILE)
        if getattr(args, "frontier", None):  # a worker's: the crawl's figures and commands
            shared = SharedFrontier(args.frontier, args.namespace, args.buckets)
            control = RedisControl(connect(args.frontier), args.namespace)
        stack.callback(control.close)
        dashboard = DashboardServer(args.out, port, frontier=shared, control=control)
        stack.enter_context(dashboard)
        print(f"dashboard at {dashboard.url}", file=sys.stderr, flush=True)
    if args.index:
        from crawlspace.ops.indexer import following_index

        stack.enter_context(following_index(args.out))


def _check_new_crawl(out: Path, seeds: list[str], sitemaps: tuple[str, ...]) -> None:
    """Refuse, before anything is written, what would leave a directory no crawl can use: a
    seed that is no URL, a new crawl with nothing to crawl, a directory of other files."""
    from crawlspace.urls import normalize_with_reason

    for raw in seeds:
        url, reason = normalize_with_reason(raw.strip())
        if url is None:
            raise ConfigError(f"seed {raw!r} is not a usable http(s) URL ({reason})")
    if (out / "crawl.db").exists():
        return  # a crawl to resume, with or without more seeds
    if out.is_dir() and any(out.iterdir()):  # (a file there: the crawl says it is no directory)
        raise OutputDirError(
            f"{out} is not empty and holds no crawl (no crawl.db): give a new or empty"
            " directory, or the directory of a crawl to resume it"
        )
    if not seeds and not sitemaps:
        raise ConfigError(
            "nothing to crawl: give one or more URLs, --seeds FILE or --sitemap URL (a crawl"
            " directory given without them resumes its crawl)"
        )


def _cmd_demo(args: argparse.Namespace) -> int:
    from crawlspace.demo.run import run_demo

    return run_demo(args.out, quiet=args.quiet)


def _reads_frontier(args: argparse.Namespace) -> bool:
    """`stats` and `export` read a crawl directory, or a shared frontier with --frontier."""
    if (args.dir is None) == (args.frontier is None):
        raise ConfigError("give either a crawl directory or --frontier URL")
    return args.frontier is not None


def _cmd_stats(args: argparse.Namespace) -> int:
    from crawlspace.ops.report import crawl_stats
    from crawlspace.ops.runner import print_stats
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
        from crawlspace.ops.parquet import write_parquet

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

    # Into the crawl's directory unless told otherwise: never over a report.html where the
    # command happened to run.
    out = args.out if args.out is not None else args.dir / "report.html"
    print(f"wrote {write_report(args.dir, out)}")
    return 0


def _cmd_config(args: argparse.Namespace) -> int:
    from crawlspace.config_help import markdown_table, text_table

    if args.markdown:
        sys.stdout.write(markdown_table())
    elif args.dir is None and args.frontier is None:
        sys.stdout.write(text_table())
    else:
        sys.stdout.write(text_table(_stored_settings(args)))
    return 0


def _stored_settings(args: argparse.Namespace) -> dict[str, object]:
    """The settings a crawl directory or a shared frontier stored (crawl/settings.py)."""
    from crawlspace.crawl.setup import SETTINGS_KEY
    from crawlspace.store.sqlite.readonly import read_meta

    if _reads_frontier(args):
        from crawlspace.store.redis.scripts import connect

        client = connect(args.frontier)
        try:
            text = client.get(f"{args.namespace}:settings")
        finally:
            client.close()
        where = f"namespace {args.namespace!r} of {args.frontier}"
    else:
        db = args.dir / "crawl.db"
        text = read_meta(db, SETTINGS_KEY) if db.exists() else None
        where = str(args.dir)
    if text is None:
        raise ConfigError(f"{where} holds no crawl settings (no crawl started there)")
    stored: dict[str, object] = json.loads(text)
    return stored


def _cmd_seed(args: argparse.Namespace) -> int:
    from crawlspace.crawl.worker import Resume, seed_frontier

    seeds = _seeds_from(args)
    include = _includes(args, seeds)
    run_flags = [flag for flag, given in _run_flags(args) if given]
    if run_flags:
        # Settings of one run, read by each worker from its own command line: on seed they
        # would be accepted and do nothing.
        raise ConfigError(f"{', '.join(run_flags)} go with each worker, not with seed")
    if not seeds and not args.sitemap:
        raise ConfigError("nothing to add: give one or more URLs, --seeds FILE or --sitemap URL")
    config = config_from(args, progress=False, **include)
    added = seed_frontier(
        config,
        args.frontier,
        seeds,
        namespace=args.namespace,
        buckets=args.buckets,
        resume=Resume(given_from(args, **include), args.reconfigure),
    )
    sitemaps = f" and {len(config.sitemaps)} sitemaps" if config.sitemaps else ""
    print(f"added {added} of {len(seeds)} seeds{sitemaps} to {args.frontier}")
    return 0


def _run_flags(args: argparse.Namespace) -> list[tuple[str, bool]]:
    """The flags of a crawl's run (not stored with it: crawl/settings.py PER_RUN) and whether
    this command line gave each."""
    return [
        ("--max-pages", args.max_pages is not None),
        ("--max-bytes", args.max_bytes is not None),
        ("--duration", args.duration is not None),
        ("--concurrency", args.concurrency is not None),
        ("--continuous", bool(args.continuous)),
        ("--metrics-port", args.metrics_port is not None),
        ("--dashboard", bool(args.dashboard)),
        ("--dashboard-port", args.dashboard_port is not None),
        ("--index", bool(args.index)),
    ]


def _cmd_worker(args: argparse.Namespace) -> int:
    from crawlspace.crawl.worker import Durability, Resume, run_worker
    from crawlspace.ops.runner import print_summary

    _includes(args, [])  # --no-parent has no seeds here: refused
    config = config_from(args, progress=False)
    durability = Durability(args.wait_replicas, args.wait_timeout)
    with contextlib.ExitStack() as beside:
        _start_beside(args, beside)
        summary = run_worker(
            config,
            args.out,
            args.frontier,
            namespace=args.namespace,
            buckets=args.buckets,
            durability=durability,
            resume=Resume(given_from(args), args.reconfigure),
        )
    if not args.quiet:
        print_summary(args.out, summary)
    return 3 if summary.error else 0


def _add_reading_commands(sub: Any) -> None:
    """The commands that read a crawl (or a shared frontier) and write nothing to it."""
    stats = sub.add_parser("stats", help="summarize a crawl directory or a shared frontier")
    stats.add_argument("dir", type=Path, nargs="?", help="crawl directory (or give --frontier)")
    stats.add_argument("--json", action="store_true")
    frontier_options(stats, reading=True)
    stats.set_defaults(func=_cmd_stats, quiet=True, verbose=False)

    export = sub.add_parser(
        "export", help="write urls, fetches, links, items, ...: one record per line"
    )
    export.add_argument("dir", type=Path, nargs="?", help="crawl directory (or give --frontier)")
    export.add_argument(
        "--what",
        required=True,
        choices=["urls", "fetches", "links", "items", "events", "hosts", "duplicates"],
        help="with --frontier: urls, events or hosts",
    )
    export.add_argument("--format", default="jsonl", choices=["jsonl", "csv", "parquet"])
    export.add_argument(
        "--output", type=Path, help="file to write (required for parquet; default stdout)"
    )
    frontier_options(export, reading=True)
    export.set_defaults(func=_cmd_export, quiet=True, verbose=False)

    serve = sub.add_parser("serve", help="serve a live dashboard of a crawl on 127.0.0.1")
    serve.add_argument("dir", type=Path)
    serve.add_argument("--port", type=port_number, default=DEFAULT_DASHBOARD_PORT)
    serve.set_defaults(func=_cmd_serve, quiet=False, verbose=False)

    report = sub.add_parser("report", help="write a self-contained HTML report of a crawl")
    report.add_argument("dir", type=Path)
    report.add_argument("--out", type=Path, help="the HTML file (default: DIR/report.html)")
    report.set_defaults(func=_cmd_report, quiet=True, verbose=False)

    config = sub.add_parser(
        "config", help="list every crawl setting: its TOML key, flag, default and meaning"
    )
    config.add_argument(
        "dir", type=Path, nargs="?", help="a crawl directory: the settings it runs with"
    )
    config.add_argument("--markdown", action="store_true", help="as docs/options.md's table")
    frontier_options(config, reading=True)
    config.set_defaults(func=_cmd_config, quiet=True, verbose=False)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crawlspace", description="A polite, crash-safe crawler.")
    parser.add_argument("--version", action="version", version=f"crawlspace {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    crawl = sub.add_parser("crawl", help="crawl from seed URLs into an output directory")
    crawl.add_argument("seeds", nargs="*", metavar="SEED_URL")
    crawl.add_argument("--out", type=Path, required=True, help="crawl directory (resumable)")
    crawl.add_argument("--seeds", dest="seeds_file", type=Path, help="file with one seed per line")
    crawl_options(crawl)
    crawl.set_defaults(func=_cmd_crawl)

    demo = sub.add_parser("demo", help="crawl a bundled sample web on loopback, offline")
    demo.add_argument("--out", type=Path, default=Path("crawlspace-demo"))
    demo.add_argument("-q", "--quiet", action="store_true")
    demo.add_argument("-v", "--verbose", action="store_true")
    demo.set_defaults(func=_cmd_demo)

    _add_reading_commands(sub)
    add_index_commands(sub)

    seed = sub.add_parser("seed", help="add seed URLs (and sitemaps) to a shared (Redis) frontier")
    seed.add_argument("seeds", nargs="*", metavar="SEED_URL")
    seed.add_argument("--seeds", dest="seeds_file", type=Path, help="file with one seed per line")
    frontier_options(seed)
    crawl_options(seed)
    seed.set_defaults(func=_cmd_seed)

    worker = sub.add_parser("worker", help="crawl from a shared (Redis) frontier, one of many")
    worker.add_argument("--out", type=Path, required=True, help="this worker's own directory")
    frontier_options(worker)
    durability_options(worker)
    crawl_options(worker)
    worker.set_defaults(func=_cmd_worker)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging(args)
    try:
        return int(args.func(args))
    except StoreIOError as exc:
        # Committed state is intact: the same command resumes once the cause is fixed.
        print(f"crawlspace: error: cannot read or write the crawl's state: {exc}", file=sys.stderr)
        return 3
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
