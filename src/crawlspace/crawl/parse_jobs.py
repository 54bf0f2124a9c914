"""What a parse worker process runs (crawl/stages.py spawns them): the page's processor, then the
first half of link admission (discovery/links.py prenormalize) and, where the crawl's Discovery
was installed in the worker, the rest of it, so the per-URL policy, scope and trap checks run
there and not in the crawl loop.

Parsing (parse/) returns a page's raw links; deciding which of them the crawl takes is
discovery's, and this module is where the two meet. A spawned worker imports this module, the
processors and the discovery policy only, never the crawler (~10 MB less per worker): keep its
imports that way.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from dataclasses import dataclass

from crawlspace.discovery.links import Admission, Discovery, PreLinks, prenormalize
from crawlspace.heap import TRIM_AFTER_BYTES, release_free_heap
from crawlspace.parse.processors import ContentProcessor, ProcessedContent

__all__ = ["ParsedPage", "parse_and_admit", "start_parse_worker"]


@dataclass(frozen=True, slots=True)
class ParsedPage:
    """A processed page, its links normalized (``content.links`` then empty: they travel once)
    and, when they were admitted where the page was parsed, their admission (``prelinks`` then
    None: only the admission travels back)."""

    content: ProcessedContent
    prelinks: PreLinks | None
    admission: Admission | None

    def admit(self, discovery: Discovery, *, parent_depth: int, header_nofollow: bool) -> Admission:
        """The page's admission: the one made where it was parsed, or made now."""
        if self.admission is not None:
            return self.admission
        assert self.prelinks is not None
        nofollow = self.content.nofollow or header_nofollow
        return discovery.admit_prenormalized(
            self.prelinks, parent_depth=parent_depth, page_nofollow=nofollow
        )


# The crawl's link admission, installed in each parse worker process when it starts.
_worker_discovery: Discovery | None = None


def parse_and_admit(
    processor: ContentProcessor,
    body: bytes,
    *,
    url: str,
    content_type: str | None,
    product_token: str,
    parent_depth: int,
    header_nofollow: bool,
    admit: bool = True,
) -> ParsedPage:
    """Run ``processor`` and normalize its links; where a Discovery is installed (a parse
    worker) and ``admit`` is set, admit them as the crawl loop would."""
    content = processor(body, url=url, content_type=content_type, product_token=product_token)
    if len(body) >= TRIM_AFTER_BYTES:
        release_free_heap()  # the big page's DOM, freed, would stay with this worker (heap.py)
    prelinks = prenormalize(content.links, content.base_url)
    content = dataclasses.replace(content, links=[])
    if _worker_discovery is None or not admit:
        return ParsedPage(content, prelinks, None)
    nofollow = content.nofollow or header_nofollow
    admission = _worker_discovery.admit_prenormalized(
        prelinks, parent_depth=parent_depth, page_nofollow=nofollow
    )
    return ParsedPage(content, None, admission)


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
    global _worker_discovery  # noqa: PLW0603 -- one per worker process, set once at its start
    _follow_crawler(crawler_pid)
    _worker_discovery = discovery
