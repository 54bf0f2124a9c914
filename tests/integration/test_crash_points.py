"""Crashes at the worst moments, a lost ack, a full disk: nothing lost, nothing doubled."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlspace.demo.webfarm import WebFarm, html_site
from crawlspace.faults import CRASH_EXIT_CODE
from tests.webs import crawl_command, linked_pages

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

CONFIG = """
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = 0.01
delay_factor = 1.0
concurrency = 4
scope = "any"
total_timeout = 1.0
lease_grace = 5.0  # a loaded CI machine must not expire a lease mid-visit
"""


@pytest.fixture(scope="module")
def farm() -> Iterator[WebFarm]:
    with WebFarm({f"h{i}": html_site(f"h{i}", linked_pages(12)) for i in range(3)}) as web:
        yield web


def crawl(
    farm: WebFarm, out: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        crawl_command(out, CONFIG, (farm.url(n, "/") for n in farm.names)),
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def summary(out: Path) -> dict[str, object]:
    db = sqlite3.connect(out / "crawl.db")
    try:
        return {
            "urls": dict(db.execute("SELECT url, state FROM urls")),
            "fetch_rows": Counter(url for (url,) in db.execute("SELECT url FROM fetches")),
            "events": Counter((u, v) for u, v in db.execute("SELECT url, version FROM events")),
        }
    finally:
        db.close()


def warc_responses(out: Path) -> Counter[str]:
    seen: Counter[str] = Counter()
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response":
                    seen[record.rec_headers.get_header("WARC-Target-URI")] += 1
    return seen


@pytest.fixture(scope="module")
def reference(farm: WebFarm, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("ref") / "crawl"
    assert crawl(farm, out).returncode == 0
    return summary(out)


def assert_same_outcome(out: Path, reference: dict[str, object]) -> None:
    got = summary(out)
    assert got["urls"] == reference["urls"]
    assert set(got["fetch_rows"]) == set(reference["fetch_rows"])  # type: ignore[arg-type]
    assert max(got["fetch_rows"].values()) == 1, "one fetch row per URL and version"  # type: ignore[union-attr]
    assert max(got["events"].values()) == 1, "one completion event per URL and version"  # type: ignore[union-attr]
    assert set(got["events"]) == {(u, 1) for u, s in got["urls"].items() if s != "queued"}  # type: ignore[union-attr]
    warcio = Path(sys.executable).with_name("warcio")
    subprocess.run([str(warcio), "check", *map(str, (out / "warc").glob("*.warc.gz"))], check=True)


@pytest.mark.parametrize("point", ["after_response", "after_warc", "before_commit", "after_commit"])
def test_crash_at_each_point_then_resume(
    point: str, farm: WebFarm, reference: dict[str, object], tmp_path: Path
) -> None:
    out = tmp_path / "crawl"
    crashed = crawl(farm, out, {"CRAWLSPACE_CRASH_AT": f"{point}:7"})
    assert crashed.returncode == CRASH_EXIT_CODE, crashed.stderr
    assert crawl(farm, out).returncode == 0
    assert_same_outcome(out, reference)
    if point in ("after_warc", "before_commit"):
        # The record written just before the crash is an orphan: its URL was fetched again and
        # archived again, but it has one fetch row and one event.
        assert max(warc_responses(out).values()) == 2
        # ... and the resumed run counted it when it recovered the torn WARC file.
        db = sqlite3.connect(out / "crawl.db")
        counted = dict(db.execute("SELECT name, value FROM counters WHERE name LIKE 'warc.%'"))
        db.close()
        assert counted["warc.recovered_files"] == 1
        assert counted["warc.unreferenced_records"] >= 1


@pytest.mark.slow
def test_lost_ack_is_completed_once_after_the_lease_expires(
    farm: WebFarm, reference: dict[str, object], tmp_path: Path
) -> None:
    out = tmp_path / "crawl"
    assert crawl(farm, out, {"CRAWLSPACE_DROP_ACK": "5"}).returncode == 0
    assert_same_outcome(out, reference)
    assert max(warc_responses(out).values()) == 2, "the URL whose ack was lost was re-fetched"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 700 KiB tmpfs: the crawl's files outgrow it mid-crawl, like a full disk."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=700k", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_full_disk_stops_cleanly_and_resumes(
    farm: WebFarm, reference: dict[str, object], small_disk: Path, tmp_path: Path
) -> None:
    out = small_disk / "crawl"
    stopped = crawl(farm, out)
    assert stopped.returncode == 3, stopped.stderr
    assert "cannot" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    partial = summary(out)
    assert 0 < sum(partial["fetch_rows"].values()) < len(reference["fetch_rows"])  # type: ignore[arg-type]
    # Move the crawl to a disk with room (as an operator would) and resume it there.
    moved = tmp_path / "moved"
    shutil.copytree(out, moved)
    assert crawl(farm, moved).returncode == 0
    assert_same_outcome(moved, reference)


def test_output_path_that_is_a_file_is_a_clear_error(farm: WebFarm, tmp_path: Path) -> None:
    out = tmp_path / "not-a-dir"
    out.write_text("x")
    result = crawl(farm, out)
    assert result.returncode == 2
    assert "cannot use output directory" in result.stderr
