"""A crawl says what it does (issue #32): ``DIR/crawl.log`` holds one line per visit, the same
requests the site's own log shows with the same statuses, and off a terminal each line also goes
to stderr (not with -q); each WARC file's warcinfo record says who crawled it and how. The
crawler runs in a subprocess, as a user runs it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from crawlspace.demo.webfarm import Response, WebFarm, html_site
from tests.workers import cli

PAGES = {
    "/": '<html><body><a href="/a.html">a</a> <a href="/gone.html">gone</a>'
    ' <a href="/private/x.html">x</a> <a href="/old">old</a></body></html>',
    "/a.html": "<html><body>a</body></html>",
}
CONFIG = """
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = 0.0
delay_factor = 0.0
max_attempts = 1
"""


def _farm() -> WebFarm:
    extra = {
        "/gone.html": Response(410, {"Content-Type": "text/html"}, b"gone"),
        "/old": Response(301, {"Location": "/a.html"}, b""),
    }
    site = html_site("site", PAGES, robots="User-agent: *\nDisallow: /private/\n", extra=extra)
    return WebFarm({"site": site})


def _crawl(tmp_path: Path, out: Path, seed: str, *flags: str) -> str:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    command = [*cli("crawl", seed, "--out", str(out), "--config", str(config)), *flags]
    return subprocess.run(command, check=True, timeout=120, capture_output=True, text=True).stderr


def test_crawl_log_has_a_line_per_visit_as_the_server_saw_it(tmp_path: Path) -> None:
    with _farm() as farm:
        out = tmp_path / "crawl"
        stderr = _crawl(tmp_path, out, farm.url("site", "/"))
        assert farm.wait_idle()
        served = {r.path_qs: r.status for r in farm.requests_for("site")}
        quiet = _crawl(tmp_path, tmp_path / "quiet", farm.url("site", "/"), "-q")
        assert len(farm.requests_for("site")) == 2 * len(served)  # it crawled, saying nothing
    lines = (out / "crawl.log").read_text(encoding="utf-8").splitlines()
    rows = [line.split(" ") for line in lines]
    assert all(len(row) == 10 for row in rows), lines
    by_url = {row[3]: row for row in rows}
    sent = {url: row for url, row in by_url.items() if row[1] != "-"}
    # Every request the server answered is one line with its status, and no line claims more.
    assert {url.split(str(farm.port("site")), 1)[1]: int(row[1]) for url, row in sent.items()} == (
        served
    )
    home = by_url[farm.url("site", "/")]
    home_row = [home[2], farm.url("site", "/"), "S", "text/html", home[6], "fetched", "-", "-"]
    assert home[2:] == home_row
    assert int(home[2]) == len(PAGES["/"])
    assert by_url[farm.url("site", "/robots.txt")][4:] == ["P", "-", "-", "fetched", "rules", "-"]
    gone = by_url[farm.url("site", "/gone.html")]
    # An error names the page that linked it (Heritrix's "via").
    assert gone[1:2] + gone[7:] == ["410", "fetched", "gone", farm.url("site", "/")]
    assert by_url[farm.url("site", "/old")][1] == "301"
    assert by_url[farm.url("site", "/old")][7] == "redirected"
    private = by_url[farm.url("site", "/private/x.html")]
    assert private[1:3] == ["-", "-"]
    assert private[7:] == ["excluded", "robots", "-"]
    # Off a terminal, the same lines on stderr; with -q, none.
    for line in lines:
        assert line in stderr
    assert farm.url("site", "/a.html") not in quiet


def test_each_warc_file_says_who_crawled_it_and_how(tmp_path: Path) -> None:
    """The warcinfo record (WARC 1.1 annex C, as Heritrix writes it): operator, collection,
    User-Agent, robots policy, read back with warcio."""
    config = tmp_path / "crawl.toml"
    config.write_text(
        CONFIG + 'warc_operator = "Test Operator, ops@example.org"\nuser_agent = "TestBot/1.0"\n'
    )
    out = tmp_path / "my-collection"
    with _farm() as farm:
        command = cli("crawl", farm.url("site", "/"), "--out", str(out), "--config", str(config))
        subprocess.run([*command, "-q"], check=True, timeout=120)
    (path,) = (out / "warc").glob("*.warc.gz")
    with path.open("rb") as stream:
        record = next(iter(ArchiveIterator(stream)))
        assert record.rec_type == "warcinfo"
        body = record.content_stream().read().decode()
    fields = dict(line.split(": ", 1) for line in body.splitlines())
    assert fields["operator"] == "Test Operator, ops@example.org"
    assert fields["isPartOf"] == "my-collection"
    assert fields["http-header-user-agent"] == "TestBot/1.0"
    assert fields["robots"] == "obey"
    assert fields["software"].startswith("crawlspace/")
