"""AOPIC on a shared frontier: workers order a host's queue by cash exactly as `crawlspace crawl`
does, judged by the order of requests in the server's own log."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import WebFarm, html_site
from tests.redis_servers import RedisDeployment, start_single
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)


def page(title: str, links: list[str]) -> str:
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    text = f"{title} " * 40  # distinct texts: no page is a near-duplicate of another
    return f"<html><head><title>{title}</title></head><body><p>{text}</p>{anchors}</body></html>"


# The seed's cash is split over /a, /b and /c; /a hands all of its share on to /c, so /c holds
# about twice /b's cash. By depth and admission order alone /b would go before /c.
PAGES = {
    "/": page("home", ["/a", "/b", "/c"]),
    "/a": page("alpha", ["/c"]),
    "/b": page("bravo", []),
    "/c": page("charlie", []),
}
CASH_ORDER = ["/", "/a", "/c", "/b"]


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisDeployment]:
    deployment = start_single(tmp_path_factory.mktemp("redis"))
    yield deployment
    deployment.stop()


def served(farm: WebFarm) -> list[str]:
    farm.wait_idle()
    return [r.path_qs for r in farm.requests_for("hub") if r.path_qs != "/robots.txt"]


def test_workers_fetch_in_the_cash_order_of_a_single_crawl(
    tmp_path: Path, redis: RedisDeployment
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(
        "[crawl]\nallow_nets = ['127.0.0.0/8']\nmin_delay = 0.05\ndelay_factor = 0.0\n"
        "priority_policy = 'aopic'\n"
    )
    with WebFarm({"hub": html_site("hub", PAGES)}) as farm:
        seed = farm.url("hub", "/")
        command = cli("crawl", "--out", str(tmp_path / "one"), "--config", str(config), "-q")
        subprocess.run([*command, seed], check=True, timeout=60, stdout=subprocess.DEVNULL)
        single = served(farm)
    with WebFarm({"hub": html_site("hub", PAGES)}) as farm:
        outs = [tmp_path / "w0", tmp_path / "w1"]
        seeds = [farm.url("hub", "/")]
        crawl_with_workers(redis.url, "aopic", 8, config, seeds=seeds, outs=outs)
        shared = served(farm)
    assert single == CASH_ORDER
    assert shared == CASH_ORDER
