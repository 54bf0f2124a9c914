"""Parse worker processes fed over socket pairs by the event loop (crawl/parse_pool.py): answers
in order from real spawned processes, errors delivered, a dead worker detected and parsing moved
to threads, every worker ended by close(), and WARC records built in a worker byte for byte as
the crawl process builds them."""

from __future__ import annotations

import asyncio
import functools
import gzip
import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from crawlspace.archive.records import Exchange, RecordBuilder
from crawlspace.crawl.parse_demand import ParseDemand
from crawlspace.crawl.parse_jobs import ParseLimits
from crawlspace.crawl.parse_pool import ParsePool, WorkersGone
from crawlspace.crawl.parse_worker import NICER_THAN_THE_CRAWL
from crawlspace.crawl.stages import StagePools
from crawlspace.errors import ParseBudgetError, ParseCrashedError, ParseMemoryError
from crawlspace.parse.processors import process_html

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)


def _echo(value: int, delay: float = 0.0) -> tuple[int, int]:
    time.sleep(delay)
    return value, os.getpid()


def _fail(message: str) -> None:
    raise ValueError(message)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as status:
            return "\nState:\tZ" not in status.read()
    except OSError:
        return False


def test_jobs_run_in_worker_processes_and_answer_in_order() -> None:
    pool = ParsePool(2, None)

    async def go() -> list[tuple[int, int]]:
        jobs = [pool.run(functools.partial(_echo, i, 0.001 * (i % 3))) for i in range(60)]
        return await asyncio.gather(*jobs)

    try:
        answers = asyncio.run(go())
    finally:
        pool.close()
    assert [value for value, _ in answers] == list(range(60))
    workers = {pid for _, pid in answers}
    assert workers == set(pool.pids)
    assert len(workers) == 2
    assert os.getpid() not in workers


def test_workers_run_nicer_than_the_crawl() -> None:
    pool = ParsePool(2, None)

    async def both() -> list[tuple[int, int]]:  # a job each: both workers are up and serving
        return await asyncio.gather(*(pool.run(functools.partial(_echo, n, 0.2)) for n in (1, 2)))

    try:
        assert {pid for _, pid in asyncio.run(both())} == set(pool.pids)
        crawl = os.getpriority(os.PRIO_PROCESS, 0)
        workers = {os.getpriority(os.PRIO_PROCESS, pid) for pid in pool.pids}
    finally:
        pool.close()
    assert workers == {min(crawl + NICER_THAN_THE_CRAWL, 19)}


def test_an_error_in_a_job_reaches_its_caller_and_the_worker_goes_on() -> None:
    pool = ParsePool(1, None)

    async def go() -> tuple[int, int]:
        with pytest.raises(ValueError, match="bad page"):
            await pool.run(functools.partial(_fail, "bad page"))
        return await pool.run(functools.partial(_echo, 7))

    try:
        value, _ = asyncio.run(go())
    finally:
        pool.close()
    assert value == 7


def test_workers_that_never_answered_fail_their_jobs_and_pages_are_parsed_in_threads() -> None:
    pools = StagePools(1)
    page = b"<html><body><p>still parsed</p><a href='/next'>n</a></body></html>"

    async def go() -> list[str]:
        pool = pools._pool
        assert pool is not None
        slow = asyncio.ensure_future(pool.run(functools.partial(_echo, 1, 5.0)))
        await asyncio.sleep(1.0)  # the worker has started the slow job
        os.kill(pool.pids[0], signal.SIGKILL)
        with pytest.raises(WorkersGone):
            await asyncio.wait_for(slow, 10)
        parsed = await pools.parse_page(
            process_html,
            page,
            url="http://site.test/",
            content_type="text/html",
            product_token="bot",
            parent_depth=0,
            header_nofollow=False,
        )
        assert parsed.prelinks is not None
        return [url for url, _, _ in parsed.prelinks.urls]

    try:
        links = asyncio.run(go())
    finally:
        pools.close()
    assert links == ["http://site.test/next"]


def _allocate(megabytes: int) -> int:
    """A job that holds ``megabytes`` of memory at once (a page whose DOM would)."""
    blocks = [bytearray(1024 * 1024) for _ in range(megabytes)]
    return len(blocks)


def test_a_worker_that_dies_mid_job_is_replaced_and_the_jobs_behind_it_run() -> None:
    pool = ParsePool(1, None)

    async def go() -> tuple[int, int, int, int]:
        _, first_pid = await pool.run(functools.partial(_echo, 0))  # it started: it answered
        running = asyncio.ensure_future(pool.run(functools.partial(_echo, 1, 5.0)))
        behind = asyncio.ensure_future(pool.run(functools.partial(_echo, 2)))
        await asyncio.sleep(1.0)  # the worker has started the slow job
        os.kill(first_pid, signal.SIGKILL)
        with pytest.raises(ParseCrashedError):
            await asyncio.wait_for(running, 10)
        value, behind_pid = await asyncio.wait_for(behind, 30)  # never began: run elsewhere
        _, next_pid = await pool.run(functools.partial(_echo, 3))
        return first_pid, value, behind_pid, next_pid

    try:
        first_pid, value, behind_pid, next_pid = asyncio.run(go())
        assert value == 2
        assert behind_pid == next_pid == pool.pids[0] != first_pid
        assert pool.replaced == 1
        assert not _alive(first_pid)
    finally:
        pool.close()


def test_a_job_past_its_memory_fails_and_its_worker_is_replaced() -> None:
    pool = ParsePool(1, None, ParseLimits(memory_mb=64))

    async def go() -> tuple[int, int, int]:
        _, first_pid = await pool.run(functools.partial(_echo, 0))
        assert await pool.run(functools.partial(_allocate, 16)) == 16  # within the limit
        with pytest.raises(ParseMemoryError):
            await pool.run(functools.partial(_allocate, 512))
        value, next_pid = await pool.run(functools.partial(_echo, 5))
        return first_pid, value, next_pid

    try:
        first_pid, value, next_pid = asyncio.run(go())
        assert value == 5
        assert next_pid != first_pid  # the worker that ran out ended; another took its place
        assert pool.replaced == 1
    finally:
        pool.close()


def test_close_ends_every_worker() -> None:
    pool = ParsePool(2, None)
    asyncio.run(pool.run(functools.partial(_echo, 1)))
    pids = pool.pids
    assert all(map(_alive, pids))
    pool.close()
    assert not any(map(_alive, pids))


class _NumberedIds:
    """Record ids 0, 1, 2, ... (picklable: a worker's copy counts from where ours was)."""

    def __init__(self) -> None:
        self.issued = 0

    def __call__(self) -> str:
        self.issued += 1
        return f"<urn:uuid:00000000-0000-0000-0000-{self.issued:012d}>"


def _build(builder: RecordBuilder, exchange: Exchange) -> bytes:
    records = builder.exchange(exchange)
    return records.request_member + records.response_member


def test_records_built_in_a_worker_are_the_records_built_here() -> None:
    exchange = Exchange(
        url="http://site.test/page?x=1",
        request_headers=[("User-Agent", "bot"), ("Accept", "*/*")],
        status=200,
        reason="OK",
        response_headers=[("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")],
        payload=b"<html>" + bytes(range(256)) * 40 + b"</html>",
        fetched_at=1_700_000_000.25,
        ip_address="127.0.0.1",
    )
    pool = ParsePool(1, None)
    try:
        there = asyncio.run(
            pool.run(functools.partial(_build, RecordBuilder(6, _NumberedIds()), exchange))
        )
    finally:
        pool.close()
    here = _build(RecordBuilder(6, _NumberedIds()), exchange)
    assert there == here
    assert b"X-Crawlspace-Original-Transfer-Encoding" in gzip.decompress(here)


def _digest(data: bytes) -> tuple[int, str]:
    return len(data), hashlib.sha256(data).hexdigest()


def test_jobs_larger_than_the_socket_buffer_arrive_whole_and_in_order() -> None:
    # 12 MiB and more: far past a socket pair's buffer, so the frames go out in pieces as the
    # worker reads them (the loop's writer callback), interleaved with small jobs.
    big = [os.urandom(1024) * (12 * 1024 + i) for i in range(3)]
    pool = ParsePool(1, None)

    async def go() -> list[object]:
        jobs = []
        for data in big:
            jobs.append(pool.run(functools.partial(_digest, data)))
            jobs.append(pool.run(functools.partial(_echo, len(jobs))))
        return await asyncio.gather(*jobs)

    try:
        answers = asyncio.run(go())
    finally:
        pool.close()
    assert answers[0::2] == [_digest(data) for data in big]
    assert [value for value, _ in answers[1::2]] == [1, 3, 5]  # type: ignore[misc]


def _size(data: bytes) -> int:
    return len(data)


def _kernel_send_buffer_cap() -> int:
    try:
        return int(Path("/proc/sys/net/core/wmem_max").read_text())
    except (OSError, ValueError):
        return 0


def test_a_job_queued_behind_a_running_one_is_handed_to_the_kernel_whole() -> None:
    # 700 KB: twice what a socket pair's default buffer (208 KiB) lets a sender queue. While
    # the worker is busy with its first job, the second must wait in the socket, not in the
    # crawl loop's backlog, so the worker finds all of it when it gets there.
    data = os.urandom(700_000)
    if _kernel_send_buffer_cap() < len(data):
        pytest.skip("net.core.wmem_max caps the job buffer below this job")
    pool = ParsePool(1, None)

    async def go() -> tuple[int, list[int]]:
        await pool.run(functools.partial(_echo, 0))  # the worker is up
        first = asyncio.ensure_future(pool.run(functools.partial(_echo, 1, 0.5)))
        await asyncio.sleep(0.1)  # the worker has the first job and sleeps in it
        second = asyncio.ensure_future(pool.run(functools.partial(_size, data)))
        await asyncio.sleep(0.05)  # the loop's turn to write what the socket took
        backlog = [len(channel._unsent) for channel in pool._channels]
        await first
        return await second, backlog

    try:
        size, backlog = asyncio.run(go())
    finally:
        pool.close()
    assert size == len(data)
    assert backlog == [0]


class _Unbuildable(Exception):
    """Pickles, but cannot be rebuilt: its __init__ wants two arguments, args holds one."""

    def __init__(self, first: str, second: str) -> None:
        super().__init__(f"{first} {second}")


def _raise_unbuildable() -> None:
    raise _Unbuildable("a", "b")


def test_an_answer_that_cannot_be_rebuilt_fails_its_job_and_the_next_goes_on() -> None:
    pool = ParsePool(1, None)

    async def go() -> tuple[int, int]:
        with pytest.raises(RuntimeError, match="unreadable"):
            await asyncio.wait_for(pool.run(_raise_unbuildable), 30)
        return await asyncio.wait_for(pool.run(functools.partial(_echo, 9)), 30)

    try:
        value, _ = asyncio.run(go())
    finally:
        pool.close()
    assert value == 9


# A script as a library user writes one: no `if __name__ == "__main__":` guard, a processor of
# its own. Its workers must start (a multiprocessing child re-imported the script and failed),
# be the crawl process's only children (no resource-tracker process), and the script's own
# processor must run in a thread, since no worker can import the script (wrapped in a partial too).
_SCRIPT = """
import asyncio, functools, os
from pathlib import Path
from crawlspace.crawl.parse_pool import ParsePool
from crawlspace.crawl.stages import StagePools
from crawlspace.errors import ParseBudgetError

def my_processor(body, **kwargs):
    return body

pool = ParsePool(2, None)
answer = asyncio.run(pool.run(functools.partial(os.getpid)))
children = set()
for task in Path(f"/proc/{os.getpid()}/task").glob("*"):
    children.update(int(c) for c in (task / "children").read_text().split())
print(answer in pool.pids, answer != os.getpid(), children == set(pool.pids))
pool.close()
stages = StagePools(1)
print(stages._runs_in_process(my_processor), stages._runs_in_process(functools.partial))
print(stages._runs_in_process(functools.partial(my_processor, url="x")))
stages.close()
"""


def test_a_script_without_a_main_guard_starts_its_workers(tmp_path: Path) -> None:
    if not Path("/proc/self/task").exists():
        pytest.skip("needs /proc")
    script = tmp_path / "my_crawl.py"
    script.write_text(_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "False", "True", "False"]
    assert done.stderr == ""


def _spin(seconds: float) -> str:
    """CPU work for ``seconds`` of process CPU time (what a pathological page costs)."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return "done"


def test_a_job_past_its_cpu_budget_fails_and_the_worker_goes_on() -> None:
    pool = ParsePool(1, None, ParseLimits(cpu_seconds=0.2))

    async def go() -> tuple[BaseException, str, tuple[int, int], float]:
        started = time.monotonic()
        with pytest.raises(ParseBudgetError) as failed:
            await pool.run(functools.partial(_spin, 30.0))
        cut_after = time.monotonic() - started
        spent = await pool.run(functools.partial(_spin, 0.05))  # each job's budget is its own
        waited = await pool.run(functools.partial(_echo, 7, 0.5))  # sleeping spends no CPU
        return failed.value, spent, waited, cut_after

    try:
        error, spent, (value, pid), cut_after = asyncio.run(go())
    finally:
        pool.close()
    assert error.reason == "parse_budget"  # type: ignore[attr-defined]
    assert cut_after < 10.0  # not the job's 30 s
    assert (spent, value) == ("done", 7)
    assert pid == pool.pids[0]  # the same worker: not replaced, not gone


def _run_and_close(
    pool: ParsePool, go: Callable[[], Coroutine[Any, Any, set[int]]]
) -> tuple[set[int], list[int]]:
    """``go()`` on a loop of its own, and the pool's workers after it; the pool closed."""
    try:
        return asyncio.run(go()), pool.pids
    finally:
        pool.close()


def _spin_where(seconds: float) -> int:
    _spin(seconds)
    return os.getpid()


def test_a_pool_that_may_grow_starts_a_worker_while_parsing_keeps_its_one_busy() -> None:
    pool = ParsePool(1, None, most=2)
    assert len(pool.pids) == 1
    # A lower bar than the crawl's 85%: on a loaded machine the spinning worker gets less than
    # its core, and its CPU share, not its wall time, is what the rule reads.
    pool._demand = ParseDemand(2, busy_share=0.5)

    async def go() -> set[int]:
        where: set[int] = set()
        for _ in range(300):  # two jobs of 20 ms of CPU in hand at a time: always busy
            jobs = (pool.run(functools.partial(_spin_where, 0.02)) for _ in range(2))
            where.update(await asyncio.gather(*jobs))
            if len(where) == 2:
                break
        return where

    where, pids = _run_and_close(pool, go)
    assert len(pids) == 2  # grown, and no further than its most
    assert where == set(pids)  # the new worker took jobs once it was ready


def test_jobs_that_wait_back_to_back_grow_the_pool_too() -> None:
    pool = ParsePool(1, None, most=2)

    async def go() -> set[int]:
        # Two jobs in hand at a time, each waiting 30 ms (a processor calling a service): the
        # worker spends almost no CPU, but its jobs leave it no gap.
        where: set[int] = set()
        for _ in range(200):
            jobs = (pool.run(functools.partial(_echo, n, 0.03)) for n in (1, 2))
            where.update(pid for _, pid in await asyncio.gather(*jobs))
            if len(where) == 2:
                break
        return where

    where, pids = _run_and_close(pool, go)
    assert len(pids) == 2
    assert where == set(pids)


def test_a_worker_with_gaps_between_its_jobs_stays_alone() -> None:
    pool = ParsePool(1, None, most=2)

    async def go() -> set[int]:
        # ~1.5 s (six windows) of jobs that take 10 ms each, one every ~30 ms.
        where: set[int] = set()
        for _ in range(50):
            where.add((await pool.run(functools.partial(_echo, 1, 0.01)))[1])
            await asyncio.sleep(0.02)
        return where

    where, pids = _run_and_close(pool, go)
    assert len(pids) == 1
    assert where == set(pids)


def test_a_replaced_worker_takes_jobs_again() -> None:
    pool = ParsePool(2, None)

    async def go() -> tuple[int, set[int]]:
        both = await asyncio.gather(*(pool.run(functools.partial(_echo, n, 0.2)) for n in (1, 2)))
        assert {pid for _, pid in both} == set(pool.pids)  # both answered: both are replaced
        killed = pool.pids[0]
        os.kill(killed, signal.SIGKILL)
        where: set[int] = set()
        for _ in range(200):  # bounded: the replacement is ready within seconds
            await asyncio.sleep(0.02)
            pair = await asyncio.gather(
                *(pool.run(functools.partial(_echo, n, 0.01)) for n in (1, 2))
            )
            where.update(pid for _, pid in pair)
            if pool.pids[0] != killed and pool.pids[0] in where:
                break
        return killed, where

    try:
        killed, where = asyncio.run(go())
        pids = pool.pids
    finally:
        pool.close()
    assert killed not in pids
    assert pool.replaced == 1
    assert set(pids) <= where
