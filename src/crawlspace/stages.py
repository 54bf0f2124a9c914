"""Worker pools for the CPU-heavy stages, so they overlap with fetching and use both cores.

lexbor parsing and zlib compression release the GIL, so threads run them in parallel with the
event loop. There is no unbounded queue anywhere: each lease holds its fetch slot until its
parse and WARC write are done, so when these stages fall behind the dispatcher simply has no
free slot and stops leasing (backpressure), and memory stays bounded by ``concurrency``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class StagePools:
    def __init__(self, parse_workers: int) -> None:
        self._parse = ThreadPoolExecutor(parse_workers, thread_name_prefix="crawlspace-parse")
        # One writer thread: a WARC file is an ordered append-only stream.
        self._warc = ThreadPoolExecutor(1, thread_name_prefix="crawlspace-warc")

    async def parse(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._parse, functools.partial(fn, *args, **kwargs))

    async def archive(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._warc, functools.partial(fn, *args, **kwargs))

    def close(self) -> None:
        self._parse.shutdown(wait=True, cancel_futures=True)
        self._warc.shutdown(wait=True)
