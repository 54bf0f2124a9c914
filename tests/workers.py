"""Run `crawlspace seed` and worker processes on a shared frontier, as a user would."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
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
