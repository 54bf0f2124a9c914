"""Dedup in a real crawl: one page under many URLs (exact duplicates), near-identical pages
(simhash), tracking parameters stripped before fetching, and the counts in `crawlspace stats`."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler
from crawlspace.demo.webfarm import Site, WebFarm, html
from crawlspace.ops.report import crawl_stats
from crawlspace.store.redis.frontier import RedisFrontier, connect
from crawlspace.store.redis.views import frontier_stats, url_record
from tests.redis_servers import RedisDeployment, start_single
from tests.webs import run_and_close, stats_json
from tests.workers import crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

VARIANTS = 12
NEAR = 4


def _article(seed: int, words: int = 500) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"w{rng.randrange(5000)}" for _ in range(3000)]
    return [rng.choice(vocab) for _ in range(words)]


def _page(words: list[str], links: str = "") -> str:
    return f"<html><body><p>{' '.join(words)}</p>{links}</body></html>"


def build_site() -> Site:
    same = _page(_article(1))
    near_base = _article(2)
    links = "".join(f'<a href="/same?id={i}">v{i}</a>' for i in range(VARIANTS))
    links += '<a href="/same?utm_source=mail&utm_medium=x">t</a><a href="/same;jsessionid=AB">s</a>'
    links += '<a href="/same">s</a>'
    links += "".join(f'<a href="/near/{i}">n{i}</a>' for i in range(NEAR))
    links += '<a href="/other">o</a><a href="/note" rel="nofollow">a note</a>'
    routes = {
        "/": html(_page(_article(3), links)),
        "/same": html(same),
        "/other": html(_page(_article(4))),
        "/robots.txt": html("", 404),
    }
    for i in range(NEAR):
        words = list(near_base)
        words[100 + i] = f"changed{i}"  # one word differs from the others
        routes[f"/near/{i}"] = html(_page(words, '<a href="/deeper">d</a>'))
    routes["/deeper"] = html(_page(_article(5)))
    return Site("dups", routes)


# With URL equivalences learned (the default), the crawl stops fetching /same?id=N once three
# spellings showed that `id` changes nothing (test_a_parameter_that_changes_nothing_is_learned);
# the tests that count exact duplicates over every spelling switch that off.
NO_LEARNING = {"learn_url_equivalence": False}


def test_duplicates_are_detected_and_reported(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with WebFarm({"dups": build_site()}) as farm:
        config = CrawlConfig(
            allow_nets=("127.0.0.0/8",),
            min_delay=0.0,
            delay_factor=0.0,
            progress=False,
            **NO_LEARNING,
        )
        crawler = Crawler(config, out)
        try:
            crawler.add_seeds([farm.url("dups", "/")])
            assert crawler.run().stop_reason == "done"
        finally:
            crawler.close()
        paths = farm.paths_for("dups")
    # Policy normalization: tracking and session parameters never reach the server.
    assert not [p for p in paths if "utm_" in p or "jsessionid" in p]
    assert paths.count("/same") == 1
    stats = crawl_stats(out)
    dedup = stats["dedup"]
    # /same plus its VARIANTS query spellings: one original, VARIANTS exact duplicates.
    assert dedup["exact_duplicates"] == VARIANTS
    assert stats["exact_duplicates"] == VARIANTS
    assert dedup["near_duplicates"] == NEAR - 1
    assert dedup["near_clusters"] == 1
    assert dedup["links_total"] > dedup["links_distinct_policy"]
    assert dedup["link_duplicate_rate_policy"] > dedup["link_duplicate_rate_normalized"]
    assert dedup["bloom_definitely_new"] >= VARIANTS
    # Near duplicates still had their links followed, and the same page is queued lower.
    assert "/deeper" in paths
    # The CLI shows the same numbers.
    shown = stats_json(out)
    assert shown["dedup"]["exact_duplicates"] == VARIANTS


def test_a_parameter_that_changes_nothing_is_learned(tmp_path: Path) -> None:
    """The default: after three spellings of /same?id=N show the same text, `id` is dropped
    from the host's URLs (frontier/url_equivalence.py); the rest are not fetched."""
    out = tmp_path / "out"
    with WebFarm({"dups": build_site()}) as farm:
        config = CrawlConfig(
            allow_nets=("127.0.0.0/8",), min_delay=0.0, delay_factor=0.0, progress=False
        )
        run_and_close(Crawler(config, out), [farm.url("dups", "/")])
        farm.wait_idle()
        spellings = [p for p in farm.paths_for("dups") if p.startswith("/same?id=")]
    assert 3 <= len(spellings) <= 5, spellings  # the confirmations, and what was in flight
    stats = crawl_stats(out)
    assert stats["dedup"]["exact_duplicates"] == len(spellings)
    assert stats["reasons"]["excluded:equivalent_url"] == VARIANTS - len(spellings)


def test_duplicate_pages_lower_their_hosts_link_priority(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with WebFarm({"dups": build_site()}) as farm:
        config = CrawlConfig(
            allow_nets=("127.0.0.0/8",), min_delay=0.0, delay_factor=0.0, progress=False
        )
        crawler = Crawler(config, out)
        try:
            crawler.add_seeds([farm.url("dups", "/")])
            crawler.run()
            rows = dict(crawler.store._db.execute("SELECT url, priority FROM urls WHERE depth = 2"))
        finally:
            crawler.close()
    # /deeper is found only on near-duplicate pages, after the host's duplicate rate rose.
    deeper = rows[farm.url("dups", "/deeper")]
    assert deeper > 2 * 10 + 5  # url_priority(2) is 25 without a penalty


def test_a_full_near_duplicate_index_stops_storing_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with WebFarm({"dups": build_site()}) as farm:
        config = CrawlConfig(
            allow_nets=("127.0.0.1/32",),
            min_delay=0.0,
            delay_factor=0.0,
            near_duplicate_max_pages=0,  # memory bound reached at once
            progress=False,
            **NO_LEARNING,
        )
        summary = run_and_close(Crawler(config, out), [farm.url("dups", "/")])
        assert summary.stop_reason == "done"
    dedup = crawl_stats(out)["dedup"]
    assert dedup["exact_duplicates"] == VARIANTS  # exact matching is in the store, unbounded
    assert dedup["near_duplicates"] == 0
    # Every page that was no exact duplicate: /, /same, /other, /deeper and the near ones.
    assert dedup["near_index_full"] == NEAR + 4


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisDeployment]:
    deployment = start_single(tmp_path_factory.mktemp("redis"))
    yield deployment
    deployment.stop()


def test_workers_find_the_same_duplicates_as_one_crawl(
    tmp_path: Path, redis: RedisDeployment
) -> None:
    """Two `crawlspace worker` processes on one shared frontier: the same exact and near
    duplicates as `crawlspace crawl` finds, counted crawl-wide, and the same link demotion."""
    config = tmp_path / "crawl.toml"
    config.write_text(
        "[crawl]\nallow_nets = ['127.0.0.0/8']\nmin_delay = 0.0\ndelay_factor = 0.0\n"
        "learn_url_equivalence = false\n"
    )
    outs = [tmp_path / "w1", tmp_path / "w2"]
    with WebFarm({"dups": build_site()}) as farm:
        crawl_with_workers(redis.url, "dups", 8, config, seeds=[farm.url("dups", "/")], outs=outs)
        deeper, host = farm.url("dups", "/deeper"), farm.host_key("dups")
    frontier = RedisFrontier(connect(redis.url), namespace="dups", buckets=8, epoch=0)
    try:
        counters = frontier.client.hgetall("dups:counters")
        shown = frontier_stats(frontier)
        record = url_record(frontier, deeper, host)
        assert record is not None
        deeper_priority = int(record["prio"])
    finally:
        frontier.close()
    assert int(counters["dedup.exact_duplicates"]) == VARIANTS
    assert int(counters["dedup.near_duplicates"]) == NEAR - 1
    # `crawlspace stats --frontier`: the crawl-wide dedup counts, and the links the workers
    # refused (the nofollow one), counted once crawl-wide as in the workers' own directories.
    assert shown["dedup"]["exact_duplicates"] == VARIANTS
    assert shown["rejections"]["nofollow"] >= 1
    refused = [crawl_stats(out)["rejections"] for out in outs]
    assert shown["rejections"]["nofollow"] == sum(r.get("nofollow", 0) for r in refused)
    local = [crawl_stats(out)["dedup"] for out in outs]
    assert sum(d["exact_duplicates"] for d in local) == VARIANTS
    assert sum(d["near_duplicates"] for d in local) == NEAR - 1
    assert deeper_priority > 2 * 10 + 5  # demoted, as in test_duplicate_pages_lower_...
