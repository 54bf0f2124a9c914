"""Request headers a user adds (issue #32): `--header` / `headers` on every request, a host's own
headers (a cookie) and its Basic credentials on that host's requests only, robots.txt included,
as the servers' request logs show; a header the crawl owns is refused in one line before
anything is written."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

from crawlspace.demo.webfarm import WebFarm, html_site
from tests.workers import cli

SETTINGS = """
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = 0.0
delay_factor = 0.0
host_headers = ["{a} Cookie: session=abc"]
auth = ["{b} reader:s3cret"]
"""


def test_headers_reach_every_host_and_a_hosts_own_reach_it_alone(tmp_path: Path) -> None:
    sites = {
        "a": html_site("a", {"/": "<html><body><a href='/1'>1</a></body></html>", "/1": "x"}),
        "b": html_site("b", {"/": "<html><body><a href='/2'>2</a></body></html>", "/2": "y"}),
    }
    with WebFarm(sites) as farm:
        hosts = {name: farm.url(name, "/").split("//")[1].rstrip("/") for name in ("a", "b")}
        config = tmp_path / "crawl.toml"
        config.write_text(SETTINGS.format(**hosts))
        command = [
            *cli("crawl", farm.url("a", "/"), farm.url("b", "/")),
            *("--out", str(tmp_path / "out"), "--config", str(config), "-q"),
            *("--header", "X-Crawl-Run: 7", "--header", "Accept-Language: de"),
        ]
        subprocess.run(command, check=True, timeout=120, stdout=subprocess.DEVNULL)
        assert farm.wait_idle()
        logged = {name: farm.requests_for(name) for name in ("a", "b")}
    basic = "Basic " + base64.b64encode(b"reader:s3cret").decode()
    for name, requests in logged.items():
        assert {r.path_qs for r in requests} >= {"/robots.txt", "/"}
        for request in requests:  # robots.txt too
            assert request.headers["x-crawl-run"] == "7"
            assert request.headers["accept-language"] == "de"
            assert request.headers["user-agent"].startswith("CrawlspaceBot/")
            assert ("cookie" in request.headers) == (name == "a")
            assert request.headers.get("authorization") == (basic if name == "b" else None)


def test_a_header_the_crawl_owns_is_refused_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [*cli("crawl", "http://127.0.0.1:9/"), "--out", str(out), "--header", "User-Agent: x"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert "User-Agent cannot be set here: set user_agent instead" in done.stderr
    assert not out.exists()
