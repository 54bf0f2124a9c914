"""Worker pools for the CPU-heavy stages, so they overlap with fetching and use every core.

Parsing runs in worker *processes*: lexbor releases the GIL while it builds the tree, but the
link and text walks that follow hold it, and a hostile 10 MiB page held the event loop for
seconds when parsed in a thread (benchmarks/parse_worst_case.py). The processes are fed by the
event loop itself (crawl/parse_pool.py). A processor that cannot be sent to another process (a
closure, a lambda, or a function of the script that started the crawl, its ``__main__``, which
a worker does not import) runs in a thread instead. A parsed page's WARC records are built
where it is parsed; other responses' on one thread (zlib releases the GIL); the loop appends
them all, in order (a WARC file is one ordered stream).

There is no unbounded queue anywhere: each lease holds its fetch slot until its parse and WARC
write are done, so when these stages fall behind the dispatcher has no free slot and stops
leasing (backpressure), and memory stays bounded by ``concurrency``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import pickle
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from crawlspace.archive.records import EarlierCapture, Exchange, RecordBuilder
from crawlspace.crawl.parse_jobs import ParsedPage, ParseLimits, parse_and_admit
from crawlspace.crawl.parse_pool import ParsePool, WorkersGone
from crawlspace.discovery.links import Discovery
from crawlspace.parse.extract import Extractor
from crawlspace.parse.processors import ContentProcessor

T = TypeVar("T")
log = logging.getLogger("crawlspace.crawl.stages")


def _sendable(obj: object) -> bool:
    """Whether a worker process can rebuild ``obj``: it pickles, and nothing in it refers to the
    script that started the crawl (``__main__``), which a worker does not import (a processor
    defined there, a URL filter of a Discovery, a partial of either)."""
    try:
        data = pickle.dumps(obj)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return b"__main__" not in data


class StagePools:
    def __init__(
        self,
        parse_workers: int,
        *,
        processes: bool = True,
        discovery: Discovery | None = None,
        limits: ParseLimits | None = None,
    ) -> None:
        self._threads = ThreadPoolExecutor(parse_workers, thread_name_prefix="crawlspace-parse")
        self._processes: ParsePool | None = None  # None: parsing in threads
        self._pool: ParsePool | None = None  # the processes started, ended by close()
        # Link admission runs in the workers too, given a Discovery they can receive (a URL
        # filter that is a closure or lambda keeps it in the crawl loop).
        self.admits_in_workers = processes and discovery is not None and _sendable(discovery)
        self._discovery = discovery
        self._scope_revision = discovery.scope.revision if discovery is not None else 0
        if processes:
            admission = discovery if self.admits_in_workers else None
            # crawl/parse_pool.py; each page's CPU and memory limits hold there (parse_jobs.py),
            # not in threads, which cannot be interrupted. One worker at first, up to
            # parse_workers while parsing keeps them busy (crawl/parse_demand.py).
            self._processes = ParsePool(1, admission, limits, most=parse_workers)
        self._pool = self._processes
        self._warc = ThreadPoolExecutor(1, thread_name_prefix="crawlspace-warc")
        self._in_process: dict[Callable[..., Any], bool] = {}

    def _runs_in_process(self, fn: Callable[..., Any]) -> bool:
        placed = self._in_process.get(fn)
        if placed is None:
            placed = self._in_process[fn] = self._processes is not None and _sendable(fn)
        return placed and self._processes is not None

    async def parse(self, call: functools.partial[T]) -> T:
        """A parse job on a worker process (its function and arguments picklable)."""
        if self._processes is None:
            return await self.in_thread(call)
        try:
            return await self._processes.run(call)
        except WorkersGone:
            # A worker died (killed, out of memory) or could not start: parsing in threads
            # still works.
            if self._processes is not None:  # ended in close(): its other jobs may be running
                log.warning("parse worker processes unavailable; parsing in threads from now on")
                self._processes = None
            return await self.in_thread(call)

    async def parse_page(
        self,
        processor: ContentProcessor,
        body: bytes,
        *,
        url: str,
        content_type: str | None,
        product_token: str,
        parent_depth: int,
        header_nofollow: bool,
        archive: tuple[RecordBuilder, Exchange, EarlierCapture | None] | None = None,
        document_chars: int | None = None,
        extractor: Extractor | None = None,
    ) -> ParsedPage:
        """``processor`` and the first half of link admission on a worker process where the
        processor can go (then the worker also admits the links: parse_jobs.py), else on a
        thread; the exchange's WARC records are built there too when ``archive`` asks, and
        the page's feed document when ``document_chars`` does."""
        job = functools.partial(
            parse_and_admit,
            processor,
            body,
            url=url,
            content_type=content_type,
            product_token=product_token,
            parent_depth=parent_depth,
            header_nofollow=header_nofollow,
            archive=archive,
            document_chars=document_chars,
            extractor=extractor,
        )
        sendable = extractor is None or self._runs_in_process(extractor)
        if not (sendable and self._runs_in_process(processor)):
            return await self.in_thread(job)
        unadmitted = functools.partial(job, admit=False)
        if self._scope_changed():
            # Seeds added during the crawl widened the scope after the workers got their
            # copy: the loop admits with the current one (the links travel back instead).
            return await self.parse(unadmitted)
        page = await self.parse(job)
        if page.admission is not None and self._scope_changed():  # widened meanwhile
            return await self.parse(unadmitted)
        return page

    def _scope_changed(self) -> bool:
        return self._discovery is not None and self._discovery.scope.revision != (
            self._scope_revision
        )

    async def in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn`` on a parse thread: long pure work kept off the event loop (a big sitemap)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, functools.partial(fn, *args))

    async def archive(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._warc, functools.partial(fn, *args, **kwargs))

    def close(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)
        if self._pool is not None:
            self._pool.close()
        self._warc.shutdown(wait=True)
