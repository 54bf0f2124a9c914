"""The pure priority rules: the score policy's points, AOPIC's cash arithmetic and a simulated
crawl showing that AOPIC starves a trap, and path-ascending parents."""

from __future__ import annotations

import heapq
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawlspace.config import CrawlConfig
from crawlspace.discovery.links import Admission, Discovery, EntryRules, parent_directories
from crawlspace.discovery.scope import Scope
from crawlspace.errors import ConfigError
from crawlspace.frontier.aopic import NO_CASH_PRIORITY, cash_priority, split_cash
from crawlspace.frontier.priority import (
    PriorityRules,
    compile_priority_patterns,
    lastmod_age_days,
    url_priority,
)
from crawlspace.records import UrlCandidate


def test_depth_dominates_and_sitemap_priority_orders_within_a_depth() -> None:
    assert url_priority(0) < url_priority(1) < url_priority(2)
    assert url_priority(1, 1.0) < url_priority(1) < url_priority(1, 0.0) <= url_priority(2, 1.0)
    assert url_priority(1, float("nan")) == url_priority(1, 0.0)


def test_pattern_points_move_urls_and_never_reach_the_revisit_band() -> None:
    rules = PriorityRules(patterns=compile_priority_patterns(("20 /product/*", "-30 re:/old/")))
    discovery = Discovery(EntryRules(priority=rules), Scope("any", []))
    product = discovery.priority("http://shop.test/product/1", 2)
    plain = discovery.priority("http://shop.test/about", 2)
    old = discovery.priority("http://shop.test/old/x", 2)
    assert product == plain - 20
    assert old == plain + 30
    assert discovery.priority("http://shop.test/product/1", 0) == 0  # clamped, not negative


def test_host_glob_limits_a_pattern_to_some_hosts() -> None:
    rules = PriorityRules(patterns=compile_priority_patterns(("15 *.shop.test /deals*",)))
    discovery = Discovery(EntryRules(priority=rules), Scope("any", []))
    assert discovery.priority("http://www.shop.test/deals", 1) == url_priority(1) - 15
    assert discovery.priority("http://blog.test/deals", 1) == url_priority(1)


@pytest.mark.parametrize("text", ["/product/*", "x /a", "20"])
def test_bad_priority_patterns_are_config_errors(text: str) -> None:
    with pytest.raises(ConfigError, match="priority pattern"):
        CrawlConfig(priority_patterns=(text,))


def test_unknown_policy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="priority_policy"):
        CrawlConfig(priority_policy="pagerank")  # type: ignore[arg-type]


def test_recent_sitemap_lastmod_earns_points() -> None:
    now = 1_900_000_000.0  # 2030-03-17
    assert lastmod_age_days("2030-03-16", now) == pytest.approx(1.74, abs=0.01)
    assert lastmod_age_days("2030-03-16T12:00:00Z", now) is not None
    assert lastmod_age_days("yesterday", now) is None
    fresh = url_priority(1, None, lastmod_age=lastmod_age_days("2030-03-16", now))
    stale = url_priority(1, None, lastmod_age=lastmod_age_days("2020-01-01", now))
    assert fresh < stale == url_priority(1)


# -- AOPIC ---------------------------------------------------------------------------------


@given(st.floats(min_value=1e-300, max_value=1e15), st.floats(min_value=1e-300, max_value=1e15))
def test_cash_priority_is_monotone_and_non_negative(a: float, b: float) -> None:
    if a < b:
        assert cash_priority(a) >= cash_priority(b) >= 0
    assert cash_priority(a) < NO_CASH_PRIORITY
    assert cash_priority(0.0) == NO_CASH_PRIORITY


@given(st.floats(min_value=0.0, max_value=1e6), st.integers(0, 1000), st.floats(0.01, 0.99))
def test_split_cash_conserves_cash(cash: float, links: int, tax: float) -> None:
    share, to_lambda = split_cash(cash, links, tax)
    assert share >= 0.0
    assert to_lambda >= 0.0
    assert math.isclose(share * links + to_lambda, cash, rel_tol=1e-9, abs_tol=1e-12)


SECTIONS, ARTICLES, RELATED, TRAP_FANOUT = 8, 10, 3, 4
NORMAL = 1 + SECTIONS * (1 + ARTICLES)


def _outlinks(url: str) -> list[str]:
    """A documentation-like site: a navigation bar of sections on every page, each section
    listing its articles, each article linking to related ones; the home page also links into a
    trap whose every page links to TRAP_FANOUT fresh trap pages (tests/integration serves the
    same shape over HTTP)."""
    nav = [f"s{j}" for j in range(SECTIONS)]
    if url.startswith("trap"):
        return nav + [f"{url}.{k}" for k in range(TRAP_FANOUT)]
    if url == "home":
        return [*nav, "trap"]
    if url.startswith("s"):
        return nav + [f"a{url[1:]}_{k}" for k in range(ARTICLES)]
    section, k = map(int, url[1:].split("_"))
    related = [f"a{section}_{(k + r) % ARTICLES}" for r in range(1, RELATED + 1)]
    return [*nav, *related, f"a{(section + 1) % SECTIONS}_{k}"]


def _simulate_aopic(fetches: int) -> tuple[list[str], float]:
    """One host queue leasing its richest URL first. Returns the fetch order and the cash left
    in the system (pages plus Lambda)."""
    cash: dict[str, float] = {"home": 1.0}
    order = {"home": 0}
    fetched: list[str] = []
    done: set[str] = set()
    to_lambda = 0.0
    while len(fetched) < fetches:
        queued = [u for u in cash if u not in done]
        url = min(queued, key=lambda u: (cash_priority(cash[u]), order[u]))
        fetched.append(url)
        done.add(url)
        targets = list(dict.fromkeys(_outlinks(url)))
        share, tax = split_cash(cash[url], len(targets), 0.1)
        to_lambda += tax
        cash[url] = 0.0
        for target in targets:
            if target not in cash:
                cash[target], order[target] = 0.0, len(order)
            cash[target] += share
    return fetched, sum(cash.values()) + to_lambda


def test_aopic_trap_share_falls_over_time_and_cash_is_conserved() -> None:
    fetched, total = _simulate_aopic(NORMAL)
    assert math.isclose(total, 1.0)
    third = NORMAL // 3
    trap = [
        sum(u.startswith("trap") for u in fetched[i * third : (i + 1) * third]) for i in (0, 1, 2)
    ]
    assert trap[0] > trap[1] >= trap[2]
    assert trap[2] == 0
    # Every page of the real site is fetched before the trap's third level.
    assert not any(u.count(".") >= 2 for u in fetched)


def test_heap_order_of_cash_priorities_matches_cash_order() -> None:
    cash = [0.5, 1e-9, 3.0, 0.25, 0.0]
    heap = [(cash_priority(c), i) for i, c in enumerate(cash)]
    heapq.heapify(heap)
    order = [heapq.heappop(heap)[1] for _ in cash]
    assert [cash[i] for i in order] == sorted(cash, reverse=True)


# -- path-ascending discovery --------------------------------------------------------------


def test_parent_directories_nearest_first() -> None:
    assert parent_directories("http://h.test/a/b/page.html?x=1") == [
        "http://h.test/a/b/",
        "http://h.test/a/",
        "http://h.test/",
    ]
    assert parent_directories("http://h.test/a/b/") == ["http://h.test/a/", "http://h.test/"]
    assert parent_directories("http://h.test/") == []


def test_admit_ascending_adds_in_scope_parents_once() -> None:
    discovery = Discovery(EntryRules(), Scope("host", ["http://h.test/"]))
    admission = Admission()
    first, _ = discovery.admit_one("http://h.test/a/", depth=2, source="link")
    assert first is not None
    admission.candidates.append(first)
    discovery.admit_ascending("http://h.test/a/b/c.html", parent_depth=1, into=admission)
    urls = [c.url for c in admission.candidates]
    assert urls == ["http://h.test/a/", "http://h.test/a/b/", "http://h.test/"]
    assert {c.source for c in admission.candidates[1:]} == {"ascend"}


def test_a_candidate_at_another_priority_keeps_every_other_field() -> None:
    # at_priority lists the fields itself (it is on the crawl loop's path): a field added to
    # UrlCandidate and not to it would be lost here.
    candidate = UrlCandidate(
        "http://a.test/x", "http://a.test", 3, 40, 2, "sitemap", "2026-01-01", "daily", 0.8, 9.5
    )
    assert candidate.at_priority(7) == candidate._replace(priority=7)
    assert all(candidate)  # every field set, so none can be lost unnoticed
