"""A crawl remembers its settings: a resume uses them, a changed one needs --reconfigure (listed,
with a warning when it lowers politeness), judged from the CLI's output and the server's log."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import WebFarm, html_site
from tests.redis_servers import start_single
from tests.webs import linked_pages
from tests.workers import cli

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

PAGES = 12


def crawl(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = cli("crawl", "--out", str(out), "-q", *args)
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=60)


def served(farm: WebFarm) -> int:
    farm.wait_idle()
    return len([r for r in farm.requests_for("site") if r.path_qs != "/robots.txt"])


def test_a_resume_uses_the_stored_settings_and_changes_need_reconfigure(tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    config = tmp_path / "crawl.toml"
    config.write_text("[crawl]\nallow_nets = ['127.0.0.0/8']\nmin_delay = 0.05\n")
    with WebFarm({"site": html_site("site", linked_pages(PAGES))}) as farm:
        seed = farm.url("site", "/p0.html")
        first = crawl(out, "--config", str(config), "--max-pages", "3", "--delay-factor", "0", seed)
        assert first.returncode == 0, first.stderr
        assert served(farm) == 3

        # Without the config file: the stored allow_nets (loopback) and min_delay still hold,
        # and max_pages, a setting of one run, may differ freely.
        again = crawl(out, "--max-pages", "6")
        assert again.returncode == 0, again.stderr
        assert served(farm) == 6

        # A changed setting is refused in one line, before any request.
        faster = crawl(out, "--min-delay", "0.01")
        assert faster.returncode == 2
        lines = faster.stderr.strip().splitlines()
        assert len(lines) == 1, faster.stderr
        assert "min_delay: 0.05 -> 0.01 (lowers politeness)" in lines[0]
        assert "--reconfigure" in lines[0]
        assert served(farm) == 6

        # With --reconfigure it applies, and says what changed.
        changed = crawl(out, "--min-delay", "0.01", "--reconfigure")
        assert changed.returncode == 0, changed.stderr
        assert "min_delay: 0.05 -> 0.01 (lowers politeness)" in changed.stderr
        assert served(farm) == PAGES

        # Stored now: the same flag again is no change.
        same = crawl(out, "--min-delay", "0.01")
        assert same.returncode == 0, same.stderr
        assert "reconfigure" not in same.stderr


def test_workers_share_the_settings_the_shared_crawl_started_with(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(
        "[crawl]\nallow_nets = ['127.0.0.0/8']\nmin_delay = 0.05\ndelay_factor = 0.0\n"
    )
    redis = start_single(tmp_path / "redis")
    try:
        shared = ["--frontier", redis.url, "--namespace", "settings", "--buckets", "8", "-q"]
        with WebFarm({"site": html_site("site", linked_pages(PAGES))}) as farm:
            seed = cli("seed", *shared, "--config", str(config), farm.url("site", "/p0.html"))
            subprocess.run(seed, check=True, timeout=60, capture_output=True)

            # A worker given a faster delay is refused in one line, before any request.
            fast = cli("worker", *shared, "--out", str(tmp_path / "w0"), "--min-delay", "0.01")
            refused = subprocess.run(fast, check=False, capture_output=True, text=True, timeout=60)
            assert refused.returncode == 2
            lines = refused.stderr.strip().splitlines()
            assert len(lines) == 1, refused.stderr
            assert "min_delay: 0.05 -> 0.01 (lowers politeness)" in lines[0]
            assert served(farm) == 0

            # A worker given nothing crawls with the stored settings: loopback allowed.
            plain = cli("worker", *shared, "--out", str(tmp_path / "w1"))
            done = subprocess.run(plain, check=False, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            assert served(farm) == PAGES
    finally:
        redis.stop()
