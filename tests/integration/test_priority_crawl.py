"""Priority on a real SQLite file and against real loopback servers: in-links move a URL up its
host queue, pattern points reorder a site, AOPIC conserves cash and starves a trap, and
path-ascending discovery finds directory pages no link points to."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler
from crawlspace.demo.webfarm import Response, Site, WebFarm, html
from crawlspace.frontier.aopic import Aopic
from crawlspace.frontier.plans import CompletionPolicy, plan_completion
from crawlspace.frontier.priority import PriorityRules
from crawlspace.records import Completion, Lease, UrlCandidate
from crawlspace.store.sqlite import revisit as sqlite_revisit
from crawlspace.store.sqlite.priority import Ranking
from crawlspace.store.sqlite.store import SqliteStore
from crawlspace.urls import host_key

NO_ROBOTS = html("", 404)
NOW = 1000.0


def _candidate(url: str, depth: int = 1, source: str = "link") -> UrlCandidate:
    return UrlCandidate(url, host_key(url), depth, priority=10 * depth + 5, source=source)


def _lease_page(store: SqliteStore, host: str) -> Lease:
    """Lease ``host``'s next page; the other hosts' leases go straight back."""
    chosen = []
    for lease in store.lease(NOW, 10, 60.0):
        if lease.host_key == f"http://{host}":
            chosen.append(lease)
        else:
            assert store.release(lease, NOW)
    assert len(chosen) == 1, chosen
    assert chosen[0].kind == "page"  # robots answered in _store: pages only
    return chosen[0]


# Each store's completion policy: in-link points are planned with each completion
# (frontier/plans.py), AOPIC's tax is the store's.
_POLICIES: dict[int, CompletionPolicy] = {}


def _store(path: Path, rules: PriorityRules) -> SqliteStore:
    store = SqliteStore(path)
    aopic = rules.policy == "aopic"
    store.ranking = Ranking(store._db, Aopic(rules.aopic_tax) if aopic else None)
    weight = 0 if aopic else rules.inlink_weight
    _POLICIES[id(store)] = CompletionPolicy(inlink_weight=weight, inlink_cap=rules.inlink_cap)
    # Robots answered for both hosts, so leases go straight to pages.
    store._db.execute("UPDATE hosts SET robots_expires_at = 1e12")
    return store


def _complete(store: SqliteStore, lease: Lease, links: list[str]) -> None:
    completion = Completion("fetched", discovered=[_candidate(u, lease.depth + 1) for u in links])
    plan = plan_completion(lease, completion, {}, _POLICIES[id(store)], NOW)
    assert store.complete(lease, dataclasses.replace(completion, plan=plan), NOW)


def test_in_links_move_a_url_ahead_of_its_depth_peers(tmp_path: Path) -> None:
    store = _store(tmp_path / "crawl.db", PriorityRules(inlink_weight=3, inlink_cap=2))
    try:
        store.add([_candidate("http://a.test/", 0, "seed")], NOW)
        store.add([_candidate("http://b.test/", 0, "seed"), _candidate("http://c.test/", 0)], NOW)
        store._db.execute("UPDATE hosts SET robots_expires_at = 1e12")
        home = _lease_page(store, "a.test")
        _complete(store, home, ["http://a.test/1", "http://a.test/2", "http://a.test/3"])
        # Two other pages link to /3: it gains 2 x 3 points, capped at two further pages.
        for host in ("b.test", "c.test"):
            _complete(store, _lease_page(store, host), ["http://a.test/3"])
        order = []
        for _ in range(3):
            lease = _lease_page(store, "a.test")
            order.append(lease.url)
            _complete(store, lease, [])
        rows = dict(store._db.execute("SELECT url, inlinks FROM urls WHERE url LIKE 'http://a%'"))
    finally:
        store.close()
    assert order == ["http://a.test/3", "http://a.test/1", "http://a.test/2"]
    assert rows["http://a.test/3"] == 3
    assert rows["http://a.test/1"] == 1


def _cash_in_system(db_path: Path) -> float:
    db = sqlite3.connect(db_path)
    try:
        (lam,) = db.execute("SELECT value FROM meta WHERE key = 'aopic_lambda_per_page'").fetchone()
        (held,) = db.execute(
            "SELECT SUM(cash + MAX(0, ? - lambda_paid)) FROM urls", (float(lam),)
        ).fetchone()
        (known,) = db.execute("SELECT COUNT(*) FROM urls").fetchone()
        (top,) = db.execute("SELECT MAX(id) FROM urls").fetchone()
    finally:
        db.close()
    assert known == top  # Lambda divides by MAX(id): only exact when ids are dense
    return float(held)


def test_aopic_cash_flows_along_links_and_is_conserved(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    store = _store(path, PriorityRules(policy="aopic", aopic_tax=0.2))
    try:
        store.add([_candidate("http://a.test/", 0, "seed")], NOW)
        store.add([_candidate("http://a.test/", 0, "seed")], NOW)  # again, as on resume
        store._db.execute("UPDATE hosts SET robots_expires_at = 1e12")
        _complete(store, _lease_page(store, "a.test"), ["http://a.test/x", "http://a.test/y"])
        cash = dict(store._db.execute("SELECT url, cash FROM urls"))
        assert cash == {"http://a.test/": 0.0, "http://a.test/x": 0.4, "http://a.test/y": 0.4}
        # /x links to /y and to a fresh /z: /y, now richer, is leased before /z.
        first = _lease_page(store, "a.test")
        assert first.url == "http://a.test/x"
        _complete(store, first, ["http://a.test/y", "http://a.test/z"])
        second = _lease_page(store, "a.test")
        assert second.url == "http://a.test/y"
        _complete(store, second, [])  # no outlinks: all of its cash goes to Lambda
    finally:
        store.close()
    assert _cash_in_system(path) == pytest.approx(1.0)


# -- real crawls ---------------------------------------------------------------------------

SECTIONS, ARTICLES, TRAP_FANOUT = 6, 8, 4
NORMAL = 1 + SECTIONS * (1 + ARTICLES)


def _page(hrefs: list[str]) -> Response:
    anchors = "".join(f'<a href="{h}">{h}</a> ' for h in hrefs)
    return html(f"<html><body><p>page</p>{anchors}</body></html>")


def _docs_site() -> Site:
    """A documentation-like site (navigation on every page, sections listing articles, related
    articles) whose home page also links into /cal/, where every page links to TRAP_FANOUT new
    pages (the shape tests/unit/test_priority.py simulates)."""
    nav = [f"/s{j}/" for j in range(SECTIONS)]
    routes = {"/robots.txt": NO_ROBOTS, "/": _page([*nav, "/cal/x"])}
    for j in range(SECTIONS):
        routes[f"/s{j}/"] = _page(nav + [f"/s{j}/a{k}.html" for k in range(ARTICLES)])
        for k in range(ARTICLES):
            related = [f"/s{j}/a{(k + r) % ARTICLES}.html" for r in (1, 2, 3)]
            routes[f"/s{j}/a{k}.html"] = _page([*nav, *related, f"/s{(j + 1) % SECTIONS}/"])

    def trap(path_qs: str) -> Response | None:
        if not path_qs.startswith("/cal/"):
            return None
        return _page(nav + [f"{path_qs}-{n}" for n in range(TRAP_FANOUT)])

    return Site("docs", routes, trap)


def _crawl_site(site: Site, out: Path, **settings: object) -> list[str]:
    """Crawl ``site`` alone with zero delay; the paths it served, in order (robots.txt left out)."""
    with WebFarm({site.name: site}) as farm:
        config = CrawlConfig(
            allow_nets=("127.0.0.0/8",),
            min_delay=0.0,
            delay_factor=0.0,
            progress=False,
            **settings,  # type: ignore[arg-type]
        )
        crawler = Crawler(config, out)
        try:
            crawler.add_seeds([farm.url(site.name, "/")])
            crawler.run()
        finally:
            crawler.close()
        farm.wait_idle()
        return [p for p in farm.paths_for(site.name) if p != "/robots.txt"]


def _crawl_docs(tmp_path: Path, policy: str) -> list[str]:
    return _crawl_site(
        _docs_site(),
        tmp_path / policy,
        max_pages=NORMAL,
        priority_policy=policy,
        max_urls_per_template=None,
        discovery_trap_ratio=1e9,  # the ratio demotion is a different defense
    )


def test_aopic_trap_share_of_fetches_falls_over_time(tmp_path: Path) -> None:
    fetched = _crawl_docs(tmp_path, "aopic")
    assert len(fetched) == NORMAL
    third = NORMAL // 3
    trap = [
        sum(p.startswith("/cal/") for p in fetched[i * third : (i + 1) * third]) for i in range(3)
    ]
    assert trap[0] > trap[2]
    assert trap[2] == 0
    # Most of the real site is fetched within the same budget.
    assert sum(not p.startswith("/cal/") for p in fetched) >= NORMAL - trap[0] - trap[1]


def test_priority_patterns_reorder_a_host_queue(tmp_path: Path) -> None:
    hrefs = [f"/about{i}.html" for i in range(4)] + [f"/product/{i}.html" for i in range(4)]
    routes = {"/robots.txt": NO_ROBOTS, "/": _page(hrefs)}
    routes.update({h: _page([]) for h in hrefs})
    fetched = _crawl_site(
        Site("shop", routes), tmp_path / "out", priority_patterns=("5 /product/*",)
    )
    assert fetched[0] == "/"
    assert all(p.startswith("/product/") for p in fetched[1:5])
    assert sorted(fetched[5:]) == [f"/about{i}.html" for i in range(4)]


@pytest.mark.parametrize("ascending", [True, False])
def test_path_ascending_discovery_finds_unlinked_directories(
    tmp_path: Path, ascending: bool
) -> None:
    routes = {
        "/robots.txt": NO_ROBOTS,
        "/": _page(["/docs/guide/intro.html"]),
        "/docs/guide/intro.html": _page([]),
        "/docs/guide/": _page(["/docs/guide/hidden.html"]),
        "/docs/": _page([]),
        "/docs/guide/hidden.html": _page([]),
    }
    fetched = sorted(_crawl_site(Site("site", routes), tmp_path / "out", path_ascending=ascending))
    if ascending:
        assert fetched == sorted(set(routes) - {"/robots.txt"})
    else:
        assert fetched == ["/", "/docs/guide/intro.html"]


def test_in_links_never_push_a_new_url_into_the_revisit_band(tmp_path: Path) -> None:
    # Priority 0 (a sitemap's 1.0, say) minus in-link points would go below 0, the band of due
    # revisits (store/sqlite/revisit.py): the URL would count as a revisit.
    store = _store(tmp_path / "crawl.db", PriorityRules(inlink_weight=3, inlink_cap=5))
    try:
        others = ("b.test", "c.test", "d.test")
        store.add([_candidate(f"http://{host}/", 0, "seed") for host in others], NOW)
        store.add([UrlCandidate("http://a.test/top", "http://a.test", 1, priority=0)], NOW)
        store._db.execute("UPDATE hosts SET robots_expires_at = 1e12")
        for host in others:  # three in-links, each worth 3 points
            _complete(store, _lease_page(store, host), ["http://a.test/top"])
        (priority,) = store._db.execute(
            "SELECT priority FROM urls WHERE url = 'http://a.test/top'"
        ).fetchone()
        revisits = sqlite_revisit.any_queued_revisit(store._db)
    finally:
        store.close()
    assert priority == 0
    assert not revisits
