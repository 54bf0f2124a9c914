"""README.md's "Using it from Python" example runs as written: as a script of its own (no
`__main__` guard, its processor defined in the script), against a loopback site, with only its
seed and its network settings swapped (example.org is not on loopback, and a test waits 2 s a
page for nothing)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from crawlspace.demo.sites import Response, html_site
from crawlspace.demo.webfarm import WebFarm

README = Path(__file__).resolve().parents[2] / "README.md"
SEED = '"https://example.org/"'
CONFIG = "CrawlConfig(max_pages=100, min_delay=2.0)"


def readme_example() -> str:
    section = README.read_text().split("## Using it from Python", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, "README.md has no Python example under 'Using it from Python'"
    return found.group(1)


def test_the_readme_python_example_runs_as_written(tmp_path: Path) -> None:
    code = readme_example()
    assert (code.count(SEED), code.count(CONFIG)) == (1, 1)  # what this test swaps is there
    pages = {
        "/": '<html><body><a href="/notes.txt">notes</a> <a href="/b.html">b</a></body></html>',
        "/b.html": "<html><body>the second page</body></html>",
    }
    notes = Response(200, {"Content-Type": "text/plain"}, b"plain words, no links\n")
    with WebFarm({"site": html_site("site", pages, extra={"/notes.txt": notes})}) as farm:
        script = tmp_path / "example.py"
        script.write_text(
            code.replace(SEED, repr(farm.url("site", "/"))).replace(
                CONFIG, 'CrawlConfig(max_pages=100, min_delay=0.0, allow_nets=["127.0.0.0/8"])'
            )
        )
        result = subprocess.run(
            [sys.executable, str(script)],
            check=False,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        fetched = {r.path_qs for r in farm.requests_for("site") if r.status == 200}
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert result.stdout.strip().endswith(": 3 pages")
    assert {"/", "/notes.txt", "/b.html"} <= fetched
    assert (tmp_path / "out" / "crawl.db").exists()


def test_the_summary_counts_what_the_run_did(tmp_path: Path) -> None:
    from crawlspace import CrawlConfig, Crawler

    pages = {"/": '<a href="/b.html">b</a>', "/b.html": "<p>b</p>"}
    with WebFarm({"a": html_site("a", pages), "b": html_site("b", pages)}) as farm:
        config = CrawlConfig(min_delay=0.0, allow_nets=["127.0.0.0/8"], progress=False)
        crawler = Crawler(config, tmp_path / "out")
        crawler.add_seeds([farm.url("a", "/"), farm.url("b", "/")])
        summary = crawler.run()
        crawler.close()
    assert (summary.stop_reason, summary.pages, summary.robots_fetches) == ("done", 4, 2)
    assert summary.counts["bytes"] > 0
    assert set(summary.counts) == {"bytes", "leases_too_late", "address_waits"}
