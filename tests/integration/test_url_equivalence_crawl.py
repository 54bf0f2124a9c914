"""Query parameter order, judged by the servers' logs: a catalog links each of its 40 listing
pages with its parameters in two orders (/products?category=shoes&page=2 from "next",
/products?page=2&category=shoes from the window of page numbers); a search host answers with
its query string as written, so there order does change the page.

By default the seen set ignores order (urls.py seen_key): every listing page and every search
is fetched once, in the order first linked, and no other order costs a fetch. With
``query_order = "learned"`` orders are kept apart until two catalog pages confirm that order
changes nothing, and on the search host, where pages contradict it, both orders are always
fetched. `crawlspace crawl`, and four `crawlspace worker` processes on a cluster."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import Response, Site, WebFarm, html
from crawlspace.ops.export import iter_records
from tests.redis_servers import RedisDeployment
from tests.trapweb import WORDS
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

PAGES = 40
SEARCHES = 6
CONFIG = (
    "[crawl]\nallow_nets = ['127.0.0.0/8']\nscope = 'any'\nmin_delay = 0.0\n"
    "delay_factor = 0.0\nconcurrency = 8\nmax_depth = 50\n"
)


def _anchor(href: str) -> str:
    return f'<a href="{href}">{href.rpartition("=")[2]}</a> '


def _product(n: int) -> str:
    """A product's name and blurb: words of its own, as a real listing shows."""
    picks = [WORDS[(n * k + k * k) % len(WORDS)] for k in range(1, 7)]
    return f"{picks[0].title()} {picks[1]} model {n}: {' '.join(picks[2:])}."


def catalog() -> Site:
    routes: dict[str, Response] = {"/robots.txt": html("", 404)}
    for page in range(1, PAGES + 1):
        links = _anchor(f"/products?category=shoes&page={page + 1}") if page < PAGES else ""
        # A window of page numbers around this one, written in the other order.
        window = [n for n in range(page - 2, page + 3) if 1 <= n <= PAGES and n != page]
        links += "".join(_anchor(f"/products?page={n}&category=shoes") for n in window)
        names = " ".join(_product(page * 5 + i) for i in range(5))
        text = f"<h1>Shoes, page {page}</h1><p>{names}</p>"
        page_html = html(f"<html><body>{text}{links}</body></html>")
        # The page is the same in either order: the server reads its parameters by name.
        routes[f"/products?category=shoes&page={page}"] = page_html
        routes[f"/products?page={page}&category=shoes"] = page_html
    routes["/"] = html(f"<html><body>{_anchor('/products?category=shoes&page=1')}</body></html>")
    return Site("catalog", routes)


def search() -> Site:
    """Order matters here: the server answers with its query string as written."""

    def answer(path_qs: str) -> Response | None:
        return html(f"<html><body><p>Results for {path_qs}</p></body></html>")

    links = "".join(
        _anchor(f"/s?q={i}&sort=new") + _anchor(f"/s?sort=new&q={i}") for i in range(SEARCHES)
    )
    routes = {"/robots.txt": html("", 404), "/": html(f"<html><body>{links}</body></html>")}
    return Site("search", routes, answer)


def _key(path_qs: str) -> str:
    path, _, query = path_qs.partition("?")
    return path + "?" + "&".join(sorted(query.split("&"), key=lambda p: p.partition("=")[0]))


def assert_each_fetched_once(farm: WebFarm) -> None:
    fetched = [r.path_qs for r in farm.requests_for("catalog") if r.path_qs.startswith("/prod")]
    assert {_key(p) for p in fetched} == {
        f"/products?category=shoes&page={n}" for n in range(1, PAGES + 1)
    }
    assert len(fetched) == PAGES, sorted(fetched)  # no page in a second order
    searched = [r.path_qs for r in farm.requests_for("search") if r.path_qs.startswith("/s?")]
    assert len({_key(p) for p in searched}) == len(searched) == SEARCHES


def assert_learned(farm: WebFarm) -> None:
    fetched = [r.path_qs for r in farm.requests_for("catalog") if r.path_qs.startswith("/prod")]
    sorted_form = {f"/products?category=shoes&page={n}" for n in range(1, PAGES + 1)}
    assert sorted_form <= set(fetched)  # every listing page, in its sorted form
    assert len(fetched) == len(set(fetched))
    other = [p for p in fetched if p not in sorted_form]
    assert 2 <= len(other) <= 7, other  # the confirmations and what was in flight
    searched = {r.path_qs for r in farm.requests_for("search") if r.path_qs.startswith("/s?")}
    assert len(searched) == 2 * SEARCHES  # both orders, every time


def _crawl(tmp_path: Path, config_text: str) -> tuple[WebFarm, Path]:
    config = tmp_path / "crawl.toml"
    config.write_text(config_text)
    out = tmp_path / "out"
    farm = WebFarm({"catalog": catalog(), "search": search()})
    with farm:
        command = cli("crawl", "--out", str(out), "--config", str(config), "-q")
        seeds = [farm.url("catalog"), farm.url("search")]
        subprocess.run([*command, *seeds], check=True, timeout=120)
        assert farm.wait_idle()
    return farm, out


def test_a_single_crawl_fetches_each_parameter_order_once(tmp_path: Path) -> None:
    farm, out = _crawl(tmp_path, CONFIG)
    assert_each_fetched_once(farm)
    pages = [r for r in iter_records(out, "urls") if "page=" in r["url"]]
    assert len(pages) == PAGES  # the other orders were seen, not stored as exclusions


def test_a_single_crawl_learns_parameter_order_when_asked(tmp_path: Path) -> None:
    farm, out = _crawl(tmp_path, CONFIG + "query_order = 'learned'\n")
    assert_learned(farm)
    reasons = {r["reason"] for r in iter_records(out, "urls") if "page=" in r["url"]}
    assert "equivalent_url" in reasons


def test_four_workers_fetch_each_parameter_order_once(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    with WebFarm({"catalog": catalog(), "search": search()}) as farm:
        outs = [tmp_path / f"w{i}" for i in range(4)]
        seeds = [farm.url("catalog"), farm.url("search")]
        crawl_with_workers(cluster.url, "dust", 16, config, seeds=seeds, outs=outs)
        assert farm.wait_idle()
        assert_each_fetched_once(farm)
