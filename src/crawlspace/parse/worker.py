"""What a parse worker process runs when it starts (crawl/stages.py spawns them).

Kept apart from crawl/stages.py, which imports asyncio and the executors: a spawned worker imports
only this, the processors and the discovery policy, not the crawler (~10 MB less per worker).
"""

from __future__ import annotations

import os
import threading
import time

from crawlspace.discovery.links import Discovery
from crawlspace.parse.processors import install_discovery

__all__ = ["start_parse_worker"]


def _follow_crawler(crawler_pid: int) -> None:
    """Worker initializer: exit as soon as the crawler process is gone.

    A crawler killed with SIGKILL cannot shut its pool down, and its workers would otherwise
    linger forever, holding its stdout open.
    """

    def watch() -> None:
        # Not os.kill(pid, 0): a dead crawler stays a zombie until its parent reaps it, and a
        # parent waiting for our inherited stdout to close would never reap it. Re-parenting
        # happens the moment the crawler dies.
        while os.getppid() == crawler_pid:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, name="crawlspace-follow", daemon=True).start()


def start_parse_worker(crawler_pid: int, discovery: Discovery | None) -> None:
    """The pool's initializer: follow the crawler, install its link admission."""
    _follow_crawler(crawler_pid)
    install_discovery(discovery)
