"""The `crawlspace` commands for a search index: ``feed`` prints a crawl's index feed
(docs/feed.md). Each is a few lines over a library call in ops/."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_index_commands"]


def _cmd_feed(args: argparse.Namespace) -> int:
    from crawlspace.ops.feed import feed_records, open_feed

    db = open_feed(args.dir)
    try:
        for item in feed_records(db, args.start, args.limit):
            sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")
    finally:
        db.close()
    return 0


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
    feed.set_defaults(func=_cmd_feed, quiet=True, verbose=False)
