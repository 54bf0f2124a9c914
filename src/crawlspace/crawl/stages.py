"""Worker pools for the CPU-heavy stages, so they overlap with fetching and use every core.

Parsing runs in worker *processes*: lexbor releases the GIL while it builds the tree, but the
link and text walks that follow hold it, and a hostile 10 MiB page held the event loop for
seconds when parsed in a thread (benchmarks/parse_worst_case.py). A processor that cannot be
sent to another process (a closure, a lambda) runs in a thread instead. WARC compression runs in
one thread (zlib releases the GIL; a WARC file is one ordered stream).

There is no unbounded queue anywhere: each lease holds its fetch slot until its parse and WARC
write are done, so when these stages fall behind the dispatcher has no free slot and stops
leasing (backpressure), and memory stays bounded by ``concurrency``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import multiprocessing
import os
import pickle
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from crawlspace.crawl.parse_jobs import ParsedPage, parse_and_admit, start_parse_worker
from crawlspace.discovery.links import Discovery
from crawlspace.parse.processors import ContentProcessor

T = TypeVar("T")
log = logging.getLogger("crawlspace.crawl.stages")


def _picklable(fn: object) -> bool:
    try:
        pickle.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


class StagePools:
    def __init__(
        self, parse_workers: int, *, processes: bool = True, discovery: Discovery | None = None
    ) -> None:
        self._threads = ThreadPoolExecutor(parse_workers, thread_name_prefix="crawlspace-parse")
        self._processes: Executor | None = None
        # Link admission runs in the workers too, given a Discovery they can receive (a URL
        # filter that is a closure or lambda keeps it in the crawl loop).
        self.admits_in_workers = processes and discovery is not None and _picklable(discovery)
        self._discovery = discovery
        self._scope_revision = discovery.scope.revision if discovery is not None else 0
        if processes:
            # spawn: a clean child (never a fork of a process that runs threads) whose parent is
            # the crawler itself, so the worker can see it go (parse_jobs.py).
            context = multiprocessing.get_context("spawn")
            self._processes = ProcessPoolExecutor(
                parse_workers,
                mp_context=context,
                initializer=start_parse_worker,
                initargs=(os.getpid(), discovery if self.admits_in_workers else None),
            )
            # Start the workers now, while robots.txt is fetched: a spawned interpreter takes a
            # second or more to import the parser on a busy machine.
            self._processes.submit(os.getpid)
        self._warc = ThreadPoolExecutor(1, thread_name_prefix="crawlspace-warc")
        self._placement: dict[Callable[..., Any], Executor] = {}

    def _executor_for(self, fn: Callable[..., Any]) -> Executor:
        executor = self._placement.get(fn)
        if executor is None:
            use_process = self._processes is not None and _picklable(fn)
            executor = self._processes if use_process and self._processes else self._threads
            self._placement[fn] = executor
        return executor

    async def parse(self, call: functools.partial[T]) -> T:
        """A parse job on a worker process (its function and arguments picklable)."""
        loop = asyncio.get_running_loop()
        executor = self._processes or self._threads
        try:
            return await loop.run_in_executor(executor, call)
        except BrokenProcessPool:
            # Typically a script that starts a crawl without an `if __name__ == "__main__":`
            # guard, which spawned workers cannot import. Parsing in threads still works.
            log.warning("parse worker processes unavailable; parsing in threads from now on")
            self._processes = None
            self._placement.clear()
            return await loop.run_in_executor(self._threads, call)

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
    ) -> ParsedPage:
        """``processor`` and the first half of link admission on a worker process where the
        processor can go (then the worker also admits the links: parse_jobs.py), else on a
        thread."""
        job = functools.partial(
            parse_and_admit,
            processor,
            body,
            url=url,
            content_type=content_type,
            product_token=product_token,
            parent_depth=parent_depth,
            header_nofollow=header_nofollow,
        )
        if self._executor_for(processor) is self._threads:
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
        if self._processes is not None:
            self._processes.shutdown(wait=True, cancel_futures=True)
        self._warc.shutdown(wait=True)
