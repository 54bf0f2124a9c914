"""Run `crawlspace seed` and worker processes on a shared frontier, as a user would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path


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


def kill_9_once(command: Sequence[str], ready: Callable[[], bool], timeout: float = 60.0) -> None:
    """Start ``command``, wait until ``ready()`` says it is mid-way (at most ``timeout``
    seconds), then kill it with SIGKILL and reap it."""
    process = subprocess.Popen(list(command))
    deadline = time.monotonic() + timeout
    while not ready() and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
