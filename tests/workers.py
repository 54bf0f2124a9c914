"""Run `crawlspace seed` and worker processes on a shared frontier, as a user would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "crawlspace.cli", *args]


def crawl_with_workers(
    frontier: str,
    namespace: str,
    buckets: int,
    config: Path,
    *,
    seeds: Sequence[str],
    outs: Sequence[Path],
    timeout: float = 60.0,
) -> None:
    """Seed the frontier, start one worker per output directory together, and wait until every
    one has exited by itself, successfully."""
    shared = ["--frontier", frontier, "--namespace", namespace, "--buckets", str(buckets)]
    seed = [*cli("seed", *shared), "--config", str(config), "-q", *seeds]
    subprocess.run(seed, check=True, timeout=timeout, stdout=subprocess.DEVNULL)
    workers = [
        subprocess.Popen(
            [*cli("worker", *shared), "--config", str(config), "--out", str(out), "-q"],
            stdout=subprocess.DEVNULL,
        )
        for out in outs
    ]
    for worker in workers:
        assert worker.wait(timeout=timeout) == 0


def wait_all(procs: Sequence[subprocess.Popen[bytes]], timeout: float) -> list[float]:
    """Wait for every process to exit by itself (bounded: those still running are killed, and
    that fails); return each one's peak RSS in MB."""
    deadline = time.monotonic() + timeout
    rss = [0.0] * len(procs)
    pending = set(range(len(procs)))
    try:
        while pending and time.monotonic() < deadline:
            for i in list(pending):
                pid, status, usage = os.wait4(procs[i].pid, os.WNOHANG)
                if pid:
                    procs[i].returncode = os.waitstatus_to_exitcode(status)
                    rss[i] = usage.ru_maxrss / 1024
                    pending.discard(i)
            time.sleep(0.05)
    finally:
        for i in pending:
            procs[i].kill()
            procs[i].wait(timeout=10)
    assert not pending, f"processes {sorted(pending)} still running after {timeout} s"
    return rss


def crawl_urls(
    out: Path, config_toml: str, seeds: Sequence[str], timeout: float
) -> dict[str, dict[str, Any]]:
    """`crawlspace crawl` in a subprocess until it ends by itself (exit 0); its URL records."""
    from crawlspace.ops.export import iter_records
    from tests.webs import crawl_command

    log = out.parent / f"{out.name}.stderr"
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            crawl_command(out, config_toml, seeds), stdout=subprocess.DEVNULL, stderr=stderr
        )
    wait_all([proc], timeout)
    assert proc.returncode == 0, log.read_text()
    return {r["url"]: r for r in iter_records(out, "urls")}


def workers_urls(
    frontier: str,
    namespace: str,
    buckets: int,
    config_toml: str,
    *,
    seeds: Sequence[str],
    tmp: Path,
    workers: int,
    timeout: float,
) -> dict[str, dict[str, Any]]:
    """Seed, then ``workers`` worker processes (directories ``tmp/wN``) until each ends by itself
    (exit 0; their stderr in the failure); the shared frontier's URL records, nothing left."""
    from crawlspace.store.redis.frontier import RedisFrontier, connect
    from crawlspace.store.redis.views import iter_frontier_records

    config = tmp / "crawl.toml"
    config.write_text(config_toml)
    shared = ["--frontier", frontier, "--namespace", namespace, "--buckets", str(buckets)]
    seed = [*cli("seed", *shared), "--config", str(config), "-q", *seeds]
    subprocess.run(seed, check=True, timeout=30, stdout=subprocess.DEVNULL)
    procs, logs = [], [tmp / f"w{i}.stderr" for i in range(workers)]
    for i, log in enumerate(logs):
        args = [*cli("worker", *shared), "--config", str(config), "--out", str(tmp / f"w{i}")]
        with log.open("wb") as sink:
            procs.append(subprocess.Popen([*args, "-q"], stdout=subprocess.DEVNULL, stderr=sink))
    wait_all(procs, timeout)
    stderr = "".join(log.read_text() for log in logs)
    assert [p.returncode for p in procs] == [0] * workers, stderr
    view = RedisFrontier(connect(frontier), namespace=namespace, buckets=buckets, epoch=0)
    try:
        assert view.queued() == 0
        assert view.in_flight() == 0
        return {u["url"]: u for u in iter_frontier_records(view, "urls")}
    finally:
        view.close()


def kill_9_once(command: Sequence[str], ready: Callable[[], bool], timeout: float = 60.0) -> None:
    """Start ``command``, wait until ``ready()`` says it is mid-way (at most ``timeout``
    seconds), then kill it with SIGKILL and reap it."""
    process = subprocess.Popen(list(command))
    deadline = time.monotonic() + timeout
    while not ready() and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
