"""kill -9 in the middle of a crawl, several times, then resume: nothing lost, nothing doubled."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlspace.config import available_cores
from crawlspace.demo.webfarm import WebFarm, html_site
from tests.webs import crawl_command, linked_pages

SITES = 5
PAGES = 30
CONFIG = """
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = 0.15
delay_factor = 2.0
concurrency = 8
scope = "any"
"""


@pytest.fixture(scope="module")
def farm() -> Iterator[WebFarm]:
    sites = {}
    for i in range(SITES):
        sites[f"s{i}"] = html_site(
            f"s{i}", linked_pages(PAGES), robots="User-agent: *\nDisallow: /p13.html\n"
        )
    with WebFarm(sites) as web:
        yield web


def resume_command(out: Path, farm: WebFarm) -> list[str]:
    seeds = [farm.url(name, "/") for name in farm.names]
    return crawl_command(out, CONFIG, seeds)


def snapshot(out: Path) -> dict[str, object]:
    db = sqlite3.connect(out / "crawl.db")
    try:
        return {
            "urls": dict(db.execute("SELECT url, state FROM urls").fetchall()),
            "fetched": {row[0] for row in db.execute("SELECT url FROM fetches")},
            "double_versions": db.execute(
                "SELECT url_id, version FROM fetches GROUP BY url_id, version HAVING COUNT(*) > 1"
            ).fetchall(),
            "fetches_per_url": dict(
                db.execute("SELECT url, COUNT(*) FROM fetches GROUP BY url").fetchall()
            ),
        }
    finally:
        db.close()


@pytest.mark.slow
def test_kill_9_and_resume_matches_an_uninterrupted_crawl(farm: WebFarm, tmp_path: Path) -> None:
    reference_dir = tmp_path / "reference"
    subprocess.run(resume_command(reference_dir, farm), check=True, timeout=120)
    reference = snapshot(reference_dir)

    seed = int(os.environ.get("CRAWLSPACE_KILL_SEED", time.time_ns() % 100_000))
    rng = random.Random(seed)
    killed_dir = tmp_path / "killed"
    kills = 0
    for _ in range(4):
        proc = subprocess.Popen(resume_command(killed_dir, farm))
        time.sleep(rng.uniform(0.9, 1.8))
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        kills += 1
    subprocess.run(resume_command(killed_dir, farm), check=True, timeout=120)
    resumed = snapshot(killed_dir)

    context = f"kill seed {seed}, {kills} kills"
    assert kills >= 2, context
    assert resumed["urls"] == reference["urls"], context
    assert resumed["fetched"] == reference["fetched"], context
    assert resumed["double_versions"] == [], context
    # Only a fetch that was in flight at the kill can be repeated, and it is then a new version.
    repeated = {u: n for u, n in resumed["fetches_per_url"].items() if n > 1}  # type: ignore[union-attr]
    assert sum(n - 1 for n in repeated.values()) <= kills * 8, context
    warcs = sorted(str(p) for p in (killed_dir / "warc").iterdir())
    assert warcs
    assert all(p.endswith(".warc.gz") for p in warcs), warcs
    subprocess.run([sys.executable, "-m", "warcio.cli", "check", *warcs], check=True)


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.update(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def _is_parse_worker(pid: int) -> bool:
    try:
        return b"crawlspace.crawl.parse_worker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _running(pid: int) -> bool:
    """Alive and not a zombie (an exited child waits for its new parent to reap it)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_parse_workers_exit_when_the_crawler_is_killed(farm: WebFarm, tmp_path: Path) -> None:
    if not Path("/proc/self/task").exists():
        pytest.skip("needs /proc")
    proc = subprocess.Popen(resume_command(tmp_path / "out", farm))
    try:
        workers: set[int] = set()
        # One parse worker at first, more only while parsing keeps it busy (parse_demand.py).
        deadline = time.monotonic() + 30
        while not workers and time.monotonic() < deadline and proc.poll() is None:
            workers = set(filter(_is_parse_worker, _children(proc.pid)))
            time.sleep(0.05)
        assert 1 <= len(workers) <= available_cores(), "the crawl's parse workers never started"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(map(_running, workers)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(map(_running, workers)), "parse workers outlived the killed crawler"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
