"""``--no-parent``, ``--include`` and ``--exclude`` from the command line, judged from the site's
own request log: the crawl stays below the seed's directory and away from excluded paths, and
records the rest as excluded with the reason."""

from __future__ import annotations

import subprocess
from pathlib import Path

from crawlspace.demo.webfarm import WebFarm, html_site
from crawlspace.ops.export import iter_records
from tests.workers import cli

LINKS = ["/docs/a.html", "/docs/skip/b.html", "/docs/sub/c.html", "/other.html", "/docsx.html"]
PAGES = {
    "/docs/": "<html><body>" + "".join(f'<a href="{p}">x</a>' for p in LINKS) + "</body></html>",
    **dict.fromkeys(LINKS, '<html><body><a href="/">home</a></body></html>'),
    "/": "<html><body>home</body></html>",
}
CONFIG = """
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = 0.0
delay_factor = 0.0
"""


def test_no_parent_and_exclude_keep_the_crawl_where_asked(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    out = tmp_path / "crawl"
    with WebFarm({"site": html_site("site", PAGES)}) as farm:
        seed = farm.url("site", "/docs/")
        command = cli("crawl", seed, "--out", str(out), "--config", str(config), "-q")
        command += ["--no-parent", "--exclude", "/docs/skip/*"]
        subprocess.run(command, check=True, timeout=120)
        assert farm.wait_idle()
        served = sorted(farm.paths_for("site"))
    assert served == ["/docs/", "/docs/a.html", "/docs/sub/c.html", "/robots.txt"]
    states = {r["url"]: (r["state"], r["reason"]) for r in iter_records(out, "urls")}
    assert states[farm.url("site", "/other.html")] == ("excluded", "not_included")
    assert states[farm.url("site", "/docsx.html")] == ("excluded", "not_included")
    assert states[farm.url("site", "/")] == ("excluded", "not_included")
    assert states[farm.url("site", "/docs/skip/b.html")] == ("excluded", "excluded_pattern")
