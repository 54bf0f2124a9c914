"""A page that would take a parse worker minutes is cut at its CPU budget (issue #30): kept as
fetched, archived, without its links, never fetched again, and the crawl goes on. Judged from
the site's request log and the crawl's own records."""

from __future__ import annotations

import subprocess
from pathlib import Path

from crawlspace.demo.webfarm import WebFarm, html_site
from crawlspace.ops.export import iter_records
from tests.workers import cli

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
    assert "parsing in threads" not in done.stderr
