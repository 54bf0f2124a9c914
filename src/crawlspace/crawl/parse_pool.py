"""Parse worker processes that the event loop feeds and reads itself, one socket pair each.

Why not ``concurrent.futures.ProcessPoolExecutor``: there a job crossed three threads of the
crawl process on its way out (the loop, the pool's manager thread, its queue feeder thread) and
two on its way back, each hop waiting for the GIL behind the others. An ordinary page's 0.3 ms
parse came back after ~5 ms, and its host waited all that time for its next request
(benchmarks/README.md, "the parse round trip"). Here the loop writes a job to a worker's socket
and reads the answer when the socket is readable: no thread in between, one pickle each way.

A worker runs its jobs one at a time in the order they were sent, so its answers come back in
that order (a queue of futures per worker, no job ids). A worker that dies, or a pool whose
workers could not start, fails the jobs it holds with ``WorkersGone``, and the pool takes no
more.

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
import os
import pickle
import socket
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from crawlspace.crawl.parse_jobs import FRAME
from crawlspace.discovery.links import Discovery

T = TypeVar("T")

READ_BYTES = 256 * 1024  # per read of a worker's socket (as asyncio's transports read)
# How long close() waits for a worker to finish its job and exit before it is terminated.
EXIT_WAIT_SECONDS = 5.0


class WorkersGone(Exception):
    """A parse worker process died or never started: its jobs have no answer."""


class _Channel:
    """The crawl's end of one worker's socket, read and written by the event loop's selector
    (no asyncio transport: the pool outlives the loop in tests and scripts, and a transport
    left on a closed loop cannot be closed cleanly): frames out, answers in, in order."""

    def __init__(self, sock: socket.socket, pool: ParsePool) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.waiting: deque[asyncio.Future[Any]] = deque()
        self._pool = pool
        self._loop: asyncio.AbstractEventLoop | None = None
        self._received = bytearray()
        self._unsent = bytearray()

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
            assert self._loop is not None
            self._loop.add_writer(self.sock.fileno(), self._writable)
        self._unsent += head[sent:]
        self._unsent += memoryview(data)[max(0, sent - len(head)) :]

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
            future = self.waiting.popleft()
            try:
                ok, value = pickle.loads(frame)
            except Exception as exc:  # an answer that cannot be rebuilt here fails its job only
                ok, value = False, RuntimeError(f"parse job answer unreadable: {exc!r}")
            if future.done():  # its task was cancelled: the answer has no taker
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def _lost(self) -> None:
        self.detach()
        self._pool.gone = True
        while self.waiting:
            future = self.waiting.popleft()
            if not future.done():
                future.set_exception(WorkersGone("a parse worker process ended"))


def _worker_environment() -> dict[str, str]:
    """The crawl's environment with its ``sys.path`` as PYTHONPATH: a worker imports crawlspace,
    and the modules a job's function lives in, from where the crawl does."""
    paths = [os.path.abspath(p or os.curdir) for p in sys.path]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}


class ParsePool:
    """``workers`` parse processes (started now: a new interpreter takes a second or more to
    import the parser on a busy machine, time the crawl spends on robots.txt), each sent
    ``discovery`` (the link admission it runs) and each job's CPU budget in seconds (0: none;
    parse_jobs.py) as its first frame."""

    def __init__(self, workers: int, discovery: Discovery | None, cpu_seconds: float = 0.0) -> None:
        self.gone = False
        self._processes: list[subprocess.Popen[bytes]] = []
        self._channels: list[_Channel] = []
        setup = pickle.dumps((discovery, cpu_seconds), protocol=pickle.HIGHEST_PROTOCOL)
        environment = _worker_environment()
        for _ in range(workers):
            ours, theirs = socket.socketpair()
            with theirs:  # the worker's copy is its own: our end's close is its EOF
                process = subprocess.Popen(
                    [sys.executable, "-m", "crawlspace.crawl.parse_worker", str(theirs.fileno())],
                    pass_fds=(theirs.fileno(),),
                    stdin=subprocess.DEVNULL,
                    env=environment,
                )
            # A small frame, sent before the channel goes non-blocking: the socket's buffer
            # holds it until the worker reads it. A worker already gone shows as its socket's
            # end, as any dead worker does (WorkersGone), not as a crawl that cannot start.
            with contextlib.suppress(OSError):
                ours.sendall(FRAME.pack(len(setup)) + setup)
            self._processes.append(process)
            self._channels.append(_Channel(ours, self))

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self._processes]

    async def run(self, job: Callable[[], T]) -> T:
        """``job()`` on the least busy worker (``job`` and its answer picklable)."""
        if self.gone:
            raise WorkersGone("the parse worker processes have ended")
        loop = asyncio.get_running_loop()
        channel = min(self._channels, key=lambda c: len(c.waiting))
        channel.attach(loop)
        data = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        future: asyncio.Future[T] = loop.create_future()
        channel.waiting.append(future)
        channel.send(data)
        return await future

    def close(self) -> None:
        """End every worker: each sees its socket's end after its current job and exits."""
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
