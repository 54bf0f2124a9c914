"""One parse worker process per core the crawl may run on, by default (config.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from crawlspace.config import CrawlConfig, available_cores

PRINT_WORKERS = "from crawlspace.config import CrawlConfig; print(CrawlConfig().parse_workers)"


def test_the_default_is_the_cores_this_process_may_use() -> None:
    assert CrawlConfig().parse_workers == available_cores()
    assert CrawlConfig(parse_workers=3).parse_workers == 3


def test_a_crawl_pinned_to_one_core_gets_one_worker() -> None:
    taskset = shutil.which("taskset")
    if taskset is None:
        pytest.skip("taskset (util-linux) is not installed")
    done = subprocess.run(
        [taskset, "-c", "0", sys.executable, "-c", PRINT_WORKERS],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "1"
