"""SIGTERM stops a crawl gracefully; a second signal abandons in-flight fetches at once."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from crawlspace.demo.webfarm import WebFarm, html_site
from tests.webs import crawl_command, linked_pages, slow_site

CONFIG = """
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = 0.05
delay_factor = 0.0
scope = "any"
total_timeout = 30.0
"""


def states(out: Path) -> dict[str, str]:
    db = sqlite3.connect(out / "crawl.db")
    try:
        return dict(db.execute("SELECT url, state FROM urls"))
    finally:
        db.close()


def test_a_second_sigterm_abandons_slow_fetches_and_releases_their_leases(tmp_path: Path) -> None:
    sites = {"fast": html_site("fast", linked_pages(6)), "slow": slow_site("slow", 3, 20.0)}
    with WebFarm(sites) as farm:
        out = tmp_path / "crawl"
        command = crawl_command(out, CONFIG, [farm.url("fast", "/"), farm.url("slow", "/")])
        proc = subprocess.Popen(command)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (
            farm.in_flight("slow") == 0 or len(farm.requests_for("fast")) < 3
        ):
            time.sleep(0.05)
        assert farm.in_flight("slow") == 1, "the slow host's robots.txt fetch is in flight"
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert proc.poll() is None, "a first signal waits for in-flight fetches"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0, "a second signal abandons them"
        left = states(out)
        assert "leased" not in left.values(), "abandoned leases were given back"
        fast = [state for url, state in left.items() if str(farm.port("fast")) in url]
        assert fast
        assert "fetched" in fast
