"""Parse worker processes that the event loop feeds and reads itself, one socket pair each.

Why not ``concurrent.futures.ProcessPoolExecutor``: there a job crossed three threads of the
crawl process on its way out (the loop, the pool's manager thread, its queue feeder thread) and
two on its way back, each hop waiting for the GIL behind the others. An ordinary page's 0.3 ms
parse came back after ~5 ms, and its host waited all that time for its next request
(benchmarks/README.md, "the parse round trip"). Here the loop writes a job to a worker's socket
and reads the answer when the socket is readable: no thread in between, one pickle each way.

A worker runs its jobs one at a time in the order they were sent, so its answers come back in
that order (a queue of futures per worker, no job ids). A worker that dies is replaced: the job
it was running fails with ``ParseCrashedError`` (its page is kept without text or links: running
it again could only kill the next worker), the jobs queued behind it run on another worker. A
worker that dies before it ever answered (it could not start) is not replaced: the pool fails
its jobs with ``WorkersGone`` and takes no more, and the crawl parses in threads.

The workers are plain interpreters (``python -m crawlspace.crawl.parse_worker FD``,
parse_worker.py) given their socket as an inherited file descriptor, not multiprocessing
children: those brought a resource-tracker process (12 MB of the crawl's memory) and re-imported
the script that started the crawl, which failed in a script without a ``__main__`` guard. A
worker imports what the crawl process can (it is given the crawl's ``sys.path``), but a job's
function must live in a module, not in that script (stages.py keeps those in threads).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from crawlspace.crawl.parse_demand import ParseDemand
from crawlspace.crawl.parse_jobs import FRAME, ParseLimits
from crawlspace.discovery.links import Discovery
from crawlspace.errors import ParseCrashedError, ParseMemoryError

T = TypeVar("T")
log = logging.getLogger("crawlspace.crawl.parse_pool")

READ_BYTES = 256 * 1024  # per read of a worker's socket (as asyncio's transports read)
# The kernel's buffer for the jobs on their way to a worker once one did not fit in the default
# 208 KiB (the kernel caps it at twice net.core.wmem_max). A link-heavy page's job is ~100 KiB
# (the largest pages several MiB): with the default, the rest of one queued behind others waited
# in the loop and went out in pieces whenever the loop got to the socket's writable callback,
# while the worker sat idle mid-job. Grown only then: ordinary pages' jobs always fit, and with
# the buffer set at the start they were 3-4% slower in five paired series, for no reason found
# (benchmarks/README.md, "Fifteenth session").
JOB_BUFFER_BYTES = 1024 * 1024
# How long close() waits for a worker to finish its job and exit before it is terminated.
EXIT_WAIT_SECONDS = 5.0


class WorkersGone(Exception):
    """The parse worker processes could not start or keep running: no job has an answer."""


class _NotRun(Exception):
    """The job's worker ended before the job began: another worker can run it."""


# How many times a job whose worker ended before it began is sent again.
RESENDS = 3


class _Channel:
    """The crawl's end of one worker's socket, read and written by the event loop's selector
    (no asyncio transport: the pool outlives the loop in tests and scripts, and a transport
    left on a closed loop cannot be closed cleanly): frames out, answers in, in order."""

    def __init__(self, sock: socket.socket, pool: ParsePool) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.waiting: deque[asyncio.Future[Any]] = deque()
        # The bytes of the jobs it holds, each and in all: a job's size stands for its cost.
        self._sizes: deque[int] = deque()
        self.load = 0
        self._pool = pool
        self._loop: asyncio.AbstractEventLoop | None = None
        self._received = bytearray()
        self._unsent = bytearray()
        self._buffer_grown = False  # JOB_BUFFER_BYTES set: a job did not fit in the default
        self.answered = False  # the worker has answered a job: it started, so it is replaced
        self.ready = False  # the worker said it is ready (its imports done): jobs go to it
        self.retiring = False  # the worker said it ends after its last answer (parse_jobs.py)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Read on ``loop`` (the one running: a later crawl may run on another)."""
        if self._loop is loop:
            return
        self.detach()
        self._loop = loop
        loop.add_reader(self.sock.fileno(), self._readable)
        if self._unsent:
            loop.add_writer(self.sock.fileno(), self._writable)

    def detach(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None and not loop.is_closed():
            loop.remove_reader(self.sock.fileno())
            loop.remove_writer(self.sock.fileno())

    def send(self, data: bytes) -> None:
        """One frame: ``data``'s length, then ``data`` (one sendmsg, no joined copy)."""
        head = FRAME.pack(len(data))
        sent = 0
        if not self._unsent:
            try:
                sent = self.sock.sendmsg((head, data))
            except BlockingIOError:
                sent = 0
            except OSError:  # the worker is gone (EPIPE): _readable sees its end too
                self._lost()
                return
            if sent == len(head) + len(data):
                return
            self._grow_buffer()
            assert self._loop is not None
            self._loop.add_writer(self.sock.fileno(), self._writable)
        self._unsent += head[sent:]
        self._unsent += memoryview(data)[max(0, sent - len(head)) :]

    def _grow_buffer(self) -> None:
        """A frame did not fit in the socket: the rest goes out with the next writable
        callback, into JOB_BUFFER_BYTES from now on (once)."""
        if not self._buffer_grown:
            self._buffer_grown = True
            with contextlib.suppress(OSError):
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, JOB_BUFFER_BYTES)

    def hold(self, future: asyncio.Future[Any], size: int) -> None:
        """A job of ``size`` bytes is being sent: ``future`` takes its answer."""
        self.waiting.append(future)
        self._sizes.append(size)
        self.load += size

    def _writable(self) -> None:
        try:
            sent = self.sock.send(self._unsent)
        except BlockingIOError:
            return
        except OSError:
            self._lost()
            return
        del self._unsent[:sent]
        if not self._unsent and self._loop is not None:
            self._loop.remove_writer(self.sock.fileno())

    def _readable(self) -> None:
        try:
            data = self.sock.recv(READ_BYTES)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._lost()
            return
        received = self._received
        received += data
        while len(received) >= FRAME.size:
            end = FRAME.size + FRAME.unpack_from(received)[0]
            if len(received) < end:
                return
            frame = received[FRAME.size : end]
            del received[:end]
            if not frame:  # the worker is ready (parse_jobs.serve_jobs)
                self.ready = True
                continue
            future = self.waiting.popleft()
            self.load -= self._sizes.popleft()
            self.answered = True
            try:
                ok, value, cpu_seconds, wall_seconds = pickle.loads(frame)
            except Exception as exc:  # an answer that cannot be rebuilt here fails its job only
                ok, value = False, RuntimeError(f"parse job answer unreadable: {exc!r}")
                cpu_seconds = wall_seconds = 0.0
            self._pool.spent(cpu_seconds, wall_seconds)
            if isinstance(value, ParseMemoryError):
                self.retiring = True
            if future.done():  # its task was cancelled: the answer has no taker
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def _lost(self) -> None:
        """The worker's end of the socket closed: it exited or died. The job it was running
        (the first waiting, unless it retired after answering) crashed it; the rest never
        began."""
        self.detach()
        replaced = self._pool.replace(self)
        running = not self.retiring
        self._sizes.clear()
        self.load = 0
        while self.waiting:
            future = self.waiting.popleft()
            if future.done():
                running = False
                continue
            if not replaced:
                future.set_exception(WorkersGone("a parse worker process ended"))
            elif running:
                future.set_exception(ParseCrashedError("the parse worker process died"))
            else:
                future.set_exception(_NotRun())
            running = False


def _load(channel: _Channel) -> int:
    """How much a worker has in hand: the bytes of its jobs, not their number. A job's cost
    grows with its page (a 1 MB index of 8,000 links parses ~100 times as long as an ordinary
    page), and a job queued behind a long one waits for all of it, while the other worker may
    have nothing to do. python3.11-doc, counted by jobs: a job waited 14.3 ms on average for
    its worker and ran 5.3 ms (benchmarks/README.md, fourteenth session)."""
    return channel.load


def _worker_environment() -> dict[str, str]:
    """The crawl's environment with its ``sys.path`` as PYTHONPATH: a worker imports crawlspace,
    and the modules a job's function lives in, from where the crawl does."""
    paths = [os.path.abspath(p or os.curdir) for p in sys.path]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}


class ParsePool:
    """``workers`` parse processes (started now: a new interpreter takes a second or more to
    import the parser on a busy machine, time the crawl spends on robots.txt), each sent
    ``discovery`` (the link admission it runs) and each job's CPU budget in seconds (0: none;
    parse_jobs.py) as its first frame. With ``most`` above ``workers``, one more is started
    whenever the running ones are nearly always busy, up to ``most`` (parse_demand.py)."""

    def __init__(
        self,
        workers: int,
        discovery: Discovery | None,
        limits: ParseLimits | None = None,
        *,
        most: int = 0,
    ) -> None:
        self.gone = False
        self._demand = ParseDemand(most) if most > workers else None
        self.replaced = 0  # workers started again after one died
        self._processes: list[subprocess.Popen[bytes]] = []
        self._channels: list[_Channel] = []
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the channels are read on
        self._setup = pickle.dumps(
            (discovery, limits or ParseLimits()), protocol=pickle.HIGHEST_PROTOCOL
        )
        self._environment = _worker_environment()
        for _ in range(workers):
            process, channel = self._start()
            self._processes.append(process)
            self._channels.append(channel)

    def _start(self) -> tuple[subprocess.Popen[bytes], _Channel]:
        ours, theirs = socket.socketpair()
        with theirs:  # the worker's copy is its own: our end's close is its EOF
            process = subprocess.Popen(
                [sys.executable, "-m", "crawlspace.crawl.parse_worker", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                env=self._environment,
            )
        # A small frame, sent before the channel goes non-blocking: the socket's buffer
        # holds it until the worker reads it. A worker already gone shows as its socket's
        # end, as any dead worker does, not as a crawl that cannot start.
        with contextlib.suppress(OSError):
            ours.sendall(FRAME.pack(len(self._setup)) + self._setup)
        channel = _Channel(ours, self)
        if self._loop is not None and not self._loop.is_closed():
            channel.attach(self._loop)  # read at once: it says when it is ready
        return process, channel

    def replace(self, channel: _Channel) -> bool:
        """Start a new worker in the place of ``channel``'s, which ended; False (and the pool
        takes no more jobs) when it ended without ever answering: it could not start."""
        index = self._channels.index(channel)
        dead = self._processes[index]
        if dead.poll() is None:  # closed its socket but still running: a worker gone wrong
            dead.kill()
        dead.wait()
        channel.sock.close()
        if not channel.answered or self.gone:
            self.gone = True
            return False
        self._processes[index], self._channels[index] = self._start()
        self.replaced += 1
        log.warning("a parse worker process ended (exit %s); started another", dead.returncode)
        return True

    def spent(self, cpu_seconds: float, wall_seconds: float) -> None:
        """A worker answered a job it spent ``cpu_seconds`` of CPU on, in ``wall_seconds``."""
        if self._demand is not None:
            self._demand.spent(cpu_seconds, wall_seconds)

    def _grow(self) -> None:
        """One more worker when the running ones are nearly always busy (parse_demand.py)."""
        assert self._demand is not None
        if self._demand.grow(time.monotonic(), len(self._channels)):
            process, channel = self._start()
            self._processes.append(process)
            self._channels.append(channel)
            log.info("parsing is busy: started parse worker %d", len(self._channels))

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self._processes]

    async def run(self, job: Callable[[], T]) -> T:
        """``job()`` on the least loaded worker that is ready (on the least loaded of all while
        none is: a job waits in a starting worker's socket), ``job`` and its answer picklable."""
        data = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # every worker read on this loop, ready or not
            self._loop = loop
            for each in self._channels:
                each.attach(loop)
        if self._demand is not None and not self.gone:
            self._grow()
        for _ in range(RESENDS):
            if self.gone:
                break
            ready = [c for c in self._channels if c.ready] or self._channels
            channel = min(ready, key=_load)
            channel.attach(loop)
            future: asyncio.Future[T] = loop.create_future()
            channel.hold(future, len(data))
            channel.send(data)
            try:
                return await future
            except _NotRun:
                continue  # its worker ended before it began: on another one
        raise WorkersGone("the parse worker processes have ended")

    def close(self) -> None:
        """End every worker: each sees its socket's end after its current job and exits."""
        self.gone = True  # a worker ending now is not replaced
        for channel in self._channels:
            channel.detach()
            with contextlib.suppress(OSError):
                channel.sock.shutdown(socket.SHUT_WR)
        for process in self._processes:
            try:
                process.wait(EXIT_WAIT_SECONDS)
            except subprocess.TimeoutExpired:  # a job still running: a hostile page, say
                process.terminate()
                try:
                    process.wait(EXIT_WAIT_SECONDS)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        for channel in self._channels:
            channel.sock.close()
