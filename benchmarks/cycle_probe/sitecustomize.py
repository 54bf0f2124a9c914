"""Stamps for ``host_cycle.py``: imported at start by every Python process of a crawl it runs
(this folder is put first on their PYTHONPATH, and the crawl hands its ``sys.path`` on to its
parse workers), inert unless ``CRAWLSPACE_CYCLE_PROBE`` names a folder.

In the crawl process it wraps the steps of a page's visit (the lease's task, the fetch, the
parse round trip, the commit) and records when each began and ended; in a parse worker, when
each job arrived, began and ended. ``time.monotonic`` is the system's monotonic clock, the same
in every process, so the two sides line up. Each process writes its stamps as JSON at exit.
"""

from __future__ import annotations

import atexit
import contextvars
import json
import os
import sys
import time
from typing import Any

_OUT = os.environ.get("CRAWLSPACE_CYCLE_PROBE")


def _crawl_process() -> None:
    from crawlspace.crawl import leases, parse_pool, stages, visit_parts

    now = time.monotonic
    current: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
        "cycle_page", default=None
    )
    pages: list[dict[str, Any]] = []
    sends: list[tuple[int, float, float]] = []

    def stamp(cls: type, name: str, step: str) -> None:
        wrapped = getattr(cls, name)

        async def stamped(self: Any, *args: Any, **kwargs: Any) -> Any:
            page, began = current.get(), now()
            try:
                return await wrapped(self, *args, **kwargs)
            finally:
                if page is not None:
                    page.setdefault(step, []).append((began, now()))

        setattr(cls, name, stamped)

    run = leases.LeaseRunner._run

    async def lease_task(self: Any, visitor: Any, lease: Any) -> None:
        page = {"host": lease.host_key, "start": now()}
        current.set(page)
        try:
            await run(self, visitor, lease)
        finally:
            page["end"] = now()
            pages.append(page)

    leases.LeaseRunner._run = lease_task  # type: ignore[method-assign]
    stamp(visit_parts.VisitParts, "fetch", "fetch")
    stamp(stages.StagePools, "parse_page", "parse")
    stamp(leases.LeaseRunner, "commit", "commit")
    pool_run, hold = parse_pool.ParsePool.run, parse_pool._Channel.hold
    held: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("held", default=None)

    def held_by(self: Any, future: Any, size: int) -> None:
        channels = held.get()
        if channels is not None:  # the channel the pool picked for the job being sent
            channels.append(self)
        hold(self, future, size)

    async def job_sent(self: Any, job: Any) -> Any:
        channels: list[Any] = []
        held.set(channels)
        began = now()
        try:
            return await pool_run(self, job)
        finally:
            if channels and channels[-1] in self._channels:  # (not a worker since replaced)
                pid = self._processes[self._channels.index(channels[-1])].pid
                sends.append((pid, began, now()))

    parse_pool._Channel.hold = held_by  # type: ignore[method-assign]
    parse_pool.ParsePool.run = job_sent  # type: ignore[method-assign]

    def write() -> None:
        with open(os.path.join(str(_OUT), "crawl.json"), "w", encoding="utf-8") as out:
            json.dump({"pages": pages, "sends": sends}, out)

    atexit.register(write)


def _parse_worker() -> None:
    from crawlspace.crawl import parse_jobs

    now = time.monotonic
    jobs: list[tuple[float, float, float]] = []  # arrived, began, ended
    arrived = [0.0]
    receive, run = parse_jobs._receive, parse_jobs._CpuBudget.run

    def received(channel: Any) -> Any:
        job = receive(channel)
        arrived[0] = now()
        return job

    def ran(self: Any, job: Any) -> Any:
        began = now()
        try:
            return run(self, job)
        finally:
            jobs.append((arrived[0], began, now()))

    parse_jobs._receive = received
    parse_jobs._CpuBudget.run = ran  # type: ignore[method-assign]

    def write() -> None:
        path = os.path.join(str(_OUT), f"worker-{os.getpid()}.json")
        with open(path, "w", encoding="utf-8") as out:
            json.dump(jobs, out)

    atexit.register(write)


if _OUT:
    # The command line as given (sys.argv is not complete yet while site imports this).
    _ARGV = sys.orig_argv
    if _ARGV[1:4] == ["-m", "crawlspace.cli", "crawl"]:
        _crawl_process()
    elif _ARGV[1:3] == ["-m", "crawlspace.crawl.parse_worker"]:
        _parse_worker()
