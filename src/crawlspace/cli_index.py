"""The `crawlspace` commands for a search index: ``feed`` prints a crawl's index feed
(docs/feed.md), ``index`` keeps a search index current with it, ``search`` asks the index. Each
is a few lines over a library call in ops/."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from crawlspace.cli_options import frontier_options
from crawlspace.errors import ConfigError

__all__ = ["add_index_commands"]


def _cmd_feed(args: argparse.Namespace) -> int:
    from crawlspace.ops.feed import feed_records, open_feed

    if args.format == "parquet" and args.output is None:
        raise ConfigError("--format parquet writes a binary file: give it with --output FILE")
    db = open_feed(args.dir)
    try:
        if args.output is not None:
            from crawlspace.ops.feed_export import write_feed

            count = write_feed(db, args.output, args.format, args.start, args.limit)
            print(f"wrote {count:,} feed records to {args.output}", file=sys.stderr)
            return 0
        for item in feed_records(db, args.start, args.limit):
            sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")
    finally:
        db.close()
    return 0


def _cmd_index(args: argparse.Namespace) -> int:
    from crawlspace.ops.indexer import (
        default_index_path,
        index_feeds,
        index_stream,
        stop_with_parent,
    )

    if bool(args.dirs) == (args.frontier is not None):
        raise ConfigError("give crawl directories or --frontier URL (with --into FILE)")
    if args.frontier is not None and args.into is None:
        raise ConfigError("--frontier: say where the index goes with --into FILE")
    path = default_index_path(args.dirs, args.into)
    stop = threading.Event()
    if args.follow:
        # SIGTERM or Ctrl-C: one last pass over what the crawls wrote, then exit.
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
    if args.with_parent is not None:
        stop_with_parent(args.with_parent, stop)
    if args.frontier is not None:
        run = index_stream(
            args.frontier,
            path,
            namespace=args.namespace,
            buckets=args.buckets,
            follow=args.follow,
            stop=stop,
            batch=args.batch,
        )
    else:
        run = index_feeds(args.dirs, path, follow=args.follow, stop=stop, batch=args.batch)
    if not args.quiet:
        print(f"applied {run.records:,} feed records; {run.documents:,} documents in {path}")
    return 0


def _cmd_search(args: argparse.Namespace) -> int:
    from crawlspace.ops.search_index import SearchIndex

    path = args.index / "index.db" if args.index.is_dir() else args.index
    if not path.is_file():
        raise ConfigError(f"{path} is no search index: make one with `crawlspace index DIR`")
    with SearchIndex(path) as index:
        hits = index.search(args.query, args.limit, raw=args.raw)
    for rank, hit in enumerate(hits, 1):
        if args.json:
            sys.stdout.write(json.dumps({"rank": rank, **_fields(hit)}, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(f"{rank}. {hit.title or '(no title)'}\n   {hit.url}\n")
            sys.stdout.write(f"   {hit.snippet}\n")
    return 0 if hits else 1


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def _fields(hit: Any) -> dict[str, Any]:
    return {"url": hit.url, "title": hit.title, "snippet": hit.snippet, "score": hit.score}


def add_index_commands(sub: Any) -> None:
    """The commands, on the `crawlspace` parser's subparsers."""
    feed = sub.add_parser("feed", help="print a crawl's index feed, one JSON record per line")
    feed.add_argument("dir", type=Path, help="crawl directory")
    feed.add_argument(
        "--from",
        dest="start",
        type=int,
        default=1,
        metavar="POSITION",
        help="the first record's position (a consumer's last one plus 1)",
    )
    feed.add_argument("--limit", type=int, help="print at most this many records")
    feed.add_argument("--format", default="jsonl", choices=["jsonl", "parquet"])
    feed.add_argument(
        "--output", type=Path, help="write to this file (jsonl: zstd-compressed if it ends in .zst)"
    )
    feed.set_defaults(func=_cmd_feed, quiet=True, verbose=False)

    index = sub.add_parser("index", help="add what crawls fetched to a search index")
    index.add_argument("dirs", type=Path, nargs="*", metavar="DIR", help="crawl directories")
    index.add_argument("--into", type=Path, help="the index file (default: DIR/index.db)")
    index.add_argument(
        "--follow", action="store_true", help="keep it current until stopped (SIGTERM, Ctrl-C)"
    )
    index.add_argument(
        "--batch", type=_positive, default=500, help="records per transaction (default 500)"
    )
    index.add_argument("--with-parent", type=int, metavar="PID", help=argparse.SUPPRESS)
    index.add_argument("-q", "--quiet", action="store_true")
    frontier_options(index, reading=True)
    index.set_defaults(func=_cmd_index, verbose=False)

    search = sub.add_parser("search", help="search a crawl's index: ranked URLs and snippets")
    search.add_argument("index", type=Path, help="a crawl directory or an index file")
    search.add_argument("query", help="words every result contains")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--json", action="store_true", help="one JSON object per result")
    search.add_argument("--raw", action="store_true", help="the query is SQLite FTS5 syntax")
    search.set_defaults(func=_cmd_search, quiet=True, verbose=False)
