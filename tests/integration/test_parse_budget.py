"""A page that would take a parse worker minutes is cut at its CPU budget (issue #30): parsed
once more from its WARC record, then kept as fetched, archived, without its links, never fetched
again, and the crawl goes on; on `crawlspace crawl` and on workers of a shared frontier. A page
whose worker was killed under it is parsed again from its record and loses nothing. Judged from
the site's request log and the crawl's own records."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import WebFarm, html_site
from crawlspace.ops.export import iter_records
from tests.redis_servers import RedisDeployment
from tests.workers import cli, workers_urls

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

# ~4 MB of links: the walk over them and their admission take a worker seconds of CPU.
BOMB = "<html><body>" + "".join(f'<a href="/x{i}">x</a>' for i in range(200_000)) + "</body></html>"
PAGES = {
    "/": '<html><body><a href="/bomb.html">b</a> <a href="/a.html">a</a></body></html>',
    "/bomb.html": BOMB,
    "/a.html": "<html><body>fine</body></html>",
}
CONFIG = """
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = 0.0
delay_factor = 0.0
parse_cpu_seconds = 0.3
"""


def test_a_page_past_its_parse_budget_is_kept_without_links_and_not_refetched(
    tmp_path: Path,
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    out = tmp_path / "crawl"
    with WebFarm({"site": html_site("site", PAGES)}) as farm:
        command = cli("crawl", farm.url("site", "/"), "--out", str(out), "--config", str(config))
        subprocess.run([*command, "-q"], check=True, timeout=180)
        assert farm.wait_idle()
        served = farm.paths_for("site")
    assert sorted(served) == ["/", "/a.html", "/bomb.html", "/robots.txt"]  # the bomb once
    states = {r["url"]: (r["state"], r["reason"]) for r in iter_records(out, "urls")}
    assert states[farm.url("site", "/bomb.html")] == ("fetched", "parse_budget")
    assert states[farm.url("site", "/a.html")] == ("fetched", None)
    assert not any("/x" in url for url in states)  # none of its links admitted
    fetches = {r["url"]: r for r in iter_records(out, "fetches")}
    bomb = fetches[farm.url("site", "/bomb.html")]
    assert bomb["warc_file"] is not None  # archived all the same
    assert bomb["bytes"] == len(BOMB)
    assert _parse_counters(out) == {"parse.retried": 1}  # once more, from its WARC record


def _parse_counters(out: Path) -> dict[str, int]:
    with sqlite3.connect(out / "crawl.db") as db:
        return dict(db.execute("SELECT name, value FROM counters WHERE name LIKE 'parse.%'"))


def test_on_workers_a_page_past_its_parse_budget_is_kept_and_the_crawl_goes_on(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    pages = {**PAGES, "/a.html": '<html><body><a href="/b.html">b</a></body></html>'}
    pages["/b.html"] = "<html><body>found after the bomb's site went on</body></html>"
    with WebFarm({"site": html_site("site", pages)}) as farm:
        urls = workers_urls(
            cluster.url,
            "parse-budget",
            16,
            CONFIG,
            seeds=[farm.url("site", "/")],
            tmp=tmp_path,
            workers=4,
            timeout=180,
        )
        assert farm.wait_idle()
        served = farm.paths_for("site")
    assert sorted(served) == ["/", "/a.html", "/b.html", "/bomb.html", "/robots.txt"]
    states = {url: (r["state"], r["reason"]) for url, r in urls.items()}
    assert states[farm.url("site", "/bomb.html")] == ("fetched", "parse_budget")
    assert states[farm.url("site", "/b.html")] == ("fetched", None)
    assert not any("/x" in url for url in states)
    retried = [_parse_counters(tmp_path / f"w{i}").get("parse.retried", 0) for i in range(4)]
    assert sum(retried) == 1


# ~9 MB of paragraphs: lexbor's tree for it takes hundreds of MB, past a 64 MB limit.
MEMORY_BOMB = "<html><body>" + "<p class=a id=b>x</p>" * 450_000 + "</body></html>"


def test_a_page_past_its_parse_memory_is_kept_and_the_worker_replaced(tmp_path: Path) -> None:
    pages = {
        "/": '<html><body><a href="/bomb.html">b</a> <a href="/a.html">a</a></body></html>',
        "/bomb.html": MEMORY_BOMB,
        "/a.html": '<html><body><a href="/b.html">next</a></body></html>',
        "/b.html": '<html><body><a href="/c.html">next</a></body></html>',
        "/c.html": "<html><body>the end</body></html>",
    }
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG.replace("parse_cpu_seconds = 0.3", "parse_memory_mb = 64"))
    config.write_text(config.read_text() + "parse_workers = 1\nconcurrency = 1\n")
    out = tmp_path / "crawl"
    with WebFarm({"site": html_site("site", pages)}) as farm:
        command = cli("crawl", farm.url("site", "/"), "--out", str(out), "--config", str(config))
        done = subprocess.run([*command], check=True, timeout=180, capture_output=True, text=True)
        served = farm.paths_for("site")
    assert served.count("/bomb.html") == 1
    assert served.index("/bomb.html") < served.index("/c.html")  # c: found after the bomb
    states = {r["url"]: (r["state"], r["reason"]) for r in iter_records(out, "urls")}
    assert states[farm.url("site", "/bomb.html")] == ("fetched", "parse_memory")
    # The pages after it were parsed (each found only through the one before) in a new worker
    # process, not in the crawl's threads.
    for path in ("/a.html", "/b.html", "/c.html"):
        assert states[farm.url("site", path)] == ("fetched", None)
    assert "started another" in done.stderr
    assert _parse_counters(out) == {"parse.retried": 1}
    assert "parsing in threads" not in done.stderr


# A crawl as a library user runs one, with a processor that kills its parse worker the first time
# it meets the marked page (tests/parse_faults.py).
SCRIPT = """
import functools
from crawlspace import CrawlConfig, Crawler
from tests.parse_faults import killed_once

if __name__ == "__main__":
    config = CrawlConfig(
        allow_nets=("127.0.0.0/8",), min_delay=0.0, delay_factor=0.0, parse_workers=1,
        parse_retries={retries},
    )
    crawler = Crawler(config, {out!r})
    crawler.processors.register("text/html", functools.partial(killed_once, marks={marks!r}))
    crawler.add_seeds([{seed!r}])
    print(crawler.run().pages)
"""


def _crawl_killing_a_worker(tmp_path: Path, retries: int) -> tuple[Path, list[str], str, str]:
    """The crawl of a site whose /killer.html kills the parse worker the first time it is
    parsed: the crawl's directory, the paths the site served, its base URL and stderr."""
    from tests.parse_faults import KILL_MARK

    pages = {
        "/": '<html><body><a href="/killer.html">k</a></body></html>',
        "/killer.html": f'<html><body>{KILL_MARK.decode()} <a href="/after.html">on</a></body>',
        "/after.html": "<html><body>found only through the page that killed a worker</body>",
    }
    out, marks = tmp_path / "crawl", tmp_path / "marks"
    marks.mkdir()
    root = Path(__file__).resolve().parents[2]
    with WebFarm({"site": html_site("site", pages)}) as farm:
        script = tmp_path / "crawl.py"
        code = SCRIPT.format(
            retries=retries, out=str(out), marks=str(marks), seed=farm.url("site", "/")
        )
        script.write_text(code)
        env = {**os.environ, "PYTHONPATH": str(root)}  # its parse workers import tests/
        done = subprocess.run(
            [sys.executable, str(script)],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert farm.wait_idle()
        served = farm.paths_for("site")
        base = farm.url("site", "/").removesuffix("/")
    return out, served, base, done.stderr


def test_a_page_whose_parse_worker_died_is_parsed_again_from_its_warc_record(
    tmp_path: Path,
) -> None:
    """A parse worker killed under a page (by the kernel, say) loses nothing: the page is parsed
    again from its WARC record in a new worker, not fetched again, and its link is followed."""
    out, served, base, stderr = _crawl_killing_a_worker(tmp_path, retries=1)
    assert sorted(served) == ["/", "/after.html", "/killer.html", "/robots.txt"]  # each once
    states = {r["url"]: (r["state"], r["reason"]) for r in iter_records(out, "urls")}
    assert states[base + "/killer.html"] == ("fetched", None)
    assert states[base + "/after.html"] == ("fetched", None)
    fetches = {r["url"]: r for r in iter_records(out, "fetches")}
    assert fetches[base + "/killer.html"]["text_sha256"] is not None  # its text, from the WARC
    assert "killer.html: parsed again from its WARC record" in stderr
    assert _parse_counters(out) == {"parse.retried": 1}


def test_without_parse_retries_the_page_is_kept_without_its_links(tmp_path: Path) -> None:
    out, served, base, stderr = _crawl_killing_a_worker(tmp_path, retries=0)
    assert sorted(served) == ["/", "/killer.html", "/robots.txt"]
    states = {r["url"]: (r["state"], r["reason"]) for r in iter_records(out, "urls")}
    assert states[base + "/killer.html"] == ("fetched", "parse_crashed")
    assert "kept without its text and links (parse_crashed)" in stderr
