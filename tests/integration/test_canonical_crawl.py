"""rel=canonical, judged by the server's log: a news site whose every article links to a print
variant (/print/N.html) that names the article (/a/N.html) as its canonical. After two print pages
confirm the rewrite, the other variants are not fetched (excluded as canonical_variant); every
article is fetched, including one that nothing links to but a variant's canonical. The same on
`crawlspace crawl` and on four `crawlspace worker` processes on a 3-master Redis Cluster."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import Site, WebFarm, html
from crawlspace.ops.export import iter_records
from tests.redis_servers import RedisDeployment
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

ARTICLES = 30
CONFIG = (
    "[crawl]\nallow_nets = ['127.0.0.0/8']\nmin_delay = 0.0\ndelay_factor = 0.0\nconcurrency = 8\n"
)


def site() -> Site:
    routes = {"/robots.txt": html("", 404)}
    index = "".join(f'<a href="/a/{i}.html">article {i}</a> ' for i in range(ARTICLES))
    # The only way to the orphan article: its print variant's canonical.
    index += '<a href="/print/orphan.html">print</a>'
    routes["/"] = html(f"<html><body>{index}</body></html>")
    for name in [*map(str, range(ARTICLES)), "orphan"]:
        body = f"<p>Article {name}: its own story, told once.</p>"
        routes[f"/a/{name}.html"] = html(
            f'<html><body>{body}<a href="/print/{name}.html">print</a></body></html>'
        )
        routes[f"/print/{name}.html"] = html(
            f'<html><head><link rel="canonical" href="/a/{name}.html"></head>'
            f"<body>{body}</body></html>"
        )
    return Site("news", routes)


def assert_variants_skipped(paths: list[str]) -> None:
    articles = {p for p in paths if p.startswith("/a/")}
    assert articles == {f"/a/{n}.html" for n in [*map(str, range(ARTICLES)), "orphan"]}
    prints = [p for p in paths if p.startswith("/print/")]
    assert 2 <= len(prints) <= 4, prints  # the confirmations, and at most what was in flight
    assert len(paths) == len(set(paths))  # nothing fetched twice


def test_a_single_crawl_learns_the_canonical_rewrite(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    out = tmp_path / "out"
    with WebFarm({"news": site()}) as farm:
        command = cli("crawl", "--out", str(out), "--config", str(config), "-q")
        subprocess.run([*command, farm.url("news")], check=True, timeout=120)
        assert farm.wait_idle()
        paths = [r.path_qs for r in farm.requests_for("news") if r.path_qs != "/robots.txt"]
    assert_variants_skipped(paths)
    reasons = {r["url"].rsplit("/", 2)[-2]: r["reason"] for r in iter_records(out, "urls")}
    assert reasons["print"] == "canonical_variant"
    hosts = list(iter_records(out, "hosts"))
    assert hosts[0]["trap_families"] is None


def test_four_workers_learn_the_canonical_rewrite(tmp_path: Path, cluster: RedisDeployment) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    with WebFarm({"news": site()}) as farm:
        outs = [tmp_path / f"w{i}" for i in range(4)]
        crawl_with_workers(cluster.url, "canon", 16, config, seeds=[farm.url("news")], outs=outs)
        assert farm.wait_idle()
        paths = [r.path_qs for r in farm.requests_for("news") if r.path_qs != "/robots.txt"]
    assert_variants_skipped(paths)
    export = [*cli("export", "--frontier", cluster.url, "--namespace", "canon", "--what", "urls")]
    done = subprocess.run(export, check=True, capture_output=True, text=True, timeout=60)
    excluded = [rec for rec in map(json.loads, done.stdout.splitlines()) if "/print/" in rec["url"]]
    assert sum(rec["reason"] == "canonical_variant" for rec in excluded) >= ARTICLES - 3
