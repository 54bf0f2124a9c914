"""Which pages go to the rendering tier (frontier/render_entry.py) and the app-shell signal it
reads (parse/app_shell.py), on a virtual clock: no browser, no I/O."""

from __future__ import annotations

import pytest
from selectolax.lexbor import LexborHTMLParser

from crawlspace.frontier.render_entry import (
    CrawlRenders,
    HostRenders,
    PageSignals,
    RenderPolicy,
    after_render,
    host_note,
    read_host,
    should_render,
)
from crawlspace.limits import RenderBudget
from crawlspace.parse.app_shell import app_shell

HOST = "https://app.example"
SHELL = PageSignals(html=True, text_chars=0, links=0, app_shell=True)
THIN = PageSignals(html=True, text_chars=40, links=0)
FULL = PageSignals(html=True, text_chars=5000, links=30)
NONE = HostRenders()
CRAWL = CrawlRenders()


def decide(policy: RenderPolicy, page: PageSignals, host: HostRenders = NONE) -> tuple[bool, str]:
    decision = should_render(policy, HOST, page, host, CRAWL)
    return decision.render, decision.reason


def test_never_renders_nothing_and_auto_renders_only_what_needs_it() -> None:
    assert decide(RenderPolicy(), SHELL) == (False, "off")
    auto = RenderPolicy(mode="auto")
    assert decide(auto, SHELL) == (True, "app_shell")
    assert decide(auto, THIN) == (True, "thin")
    assert decide(auto, FULL) == (False, "not_needed")
    assert decide(auto, PageSignals(html=False, text_chars=0, links=0)) == (False, "off")
    opted = RenderPolicy(mode="auto", opted_out=frozenset({HOST}))
    assert decide(opted, SHELL) == (False, "opted_out")


def test_always_renders_its_hosts_pages_only() -> None:
    assert decide(RenderPolicy(mode="always"), FULL) == (True, "always")
    chosen = RenderPolicy(mode="always", hosts=frozenset({"https://other.example"}))
    assert decide(chosen, FULL) == (False, "off")


@pytest.mark.parametrize(
    ("policy", "host", "crawl", "reason"),
    [
        (RenderPolicy(mode="auto", max_pages_per_host=2), HostRenders(2, 1.0), CRAWL, "host_pages"),
        (
            RenderPolicy(mode="auto", max_seconds_per_host=5),
            HostRenders(1, 5.0),
            CRAWL,
            "host_seconds",
        ),
        (
            RenderPolicy(mode="auto", crawl=RenderBudget(max_pages=10)),
            NONE,
            CrawlRenders(10, 1.0),
            "crawl_pages",
        ),
        (
            RenderPolicy(mode="auto", crawl=RenderBudget(max_seconds=60)),
            NONE,
            CrawlRenders(3, 60.0),
            "crawl_seconds",
        ),
    ],
)
def test_budgets_stop_renders(
    policy: RenderPolicy, host: HostRenders, crawl: CrawlRenders, reason: str
) -> None:
    decision = should_render(policy, HOST, SHELL, host, crawl)
    assert (decision.render, decision.reason) == (False, reason)
    # One below each budget still renders.
    assert should_render(policy, HOST, SHELL, NONE, CRAWL).render


def test_a_host_whose_renders_add_nothing_stops_being_rendered() -> None:
    policy = RenderPolicy(mode="auto", give_up_after=3)
    host = NONE
    for _ in range(2):
        host = after_render(policy, host, 1.5, THIN, THIN)  # the browser found nothing more
    assert (host.pages, host.seconds, host.useless, host.stopped) == (2, 3.0, 2, None)
    host = after_render(policy, host, 1.0, THIN, FULL)  # this one found the content
    assert (host.useless, host.stopped) == (0, None)
    for _ in range(3):
        host = after_render(policy, host, 1.0, THIN, THIN)
    assert host.stopped == "adds_nothing"
    assert decide(policy, SHELL, host) == (False, "adds_nothing")
    # The reason stays with the host, even if a later render (of a page in flight) adds.
    assert after_render(policy, host, 1.0, THIN, FULL).stopped == "adds_nothing"


def test_the_hosts_note_round_trips() -> None:
    for host in (NONE, HostRenders(3, 4.25, 1), HostRenders(7, 12.5, 3, "adds_nothing")):
        assert read_host(host_note(host)) == host
    assert read_host(None) == read_host("") == NONE


@pytest.mark.parametrize(
    ("body", "shell"),
    [
        ('<div id="app"></div><script src="/app.js"></script>', True),
        ('<div id="root"><div class="spinner"></div></div><script src="/b.js"></script>', True),
        ("<app-root></app-root><script src=main.js></script>", True),
        (
            "<noscript>You need to enable JavaScript to run this app.</noscript><script></script>",
            True,
        ),
        ('<div id="app"><p>Real text</p></div><script src="/app.js"></script>', False),
        ('<div id="app"><a href="/next">next</a></div><script></script>', False),
        ('<div id="app"></div>', False),  # no script: nothing would fill it
        ('<noscript><img src="/pixel.gif"></noscript><script></script>', False),
        ("<main><h1>Docs</h1><p>Text.</p></main><script src=/analytics.js></script>", False),
    ],
)
def test_app_shells_are_told_from_pages(body: str, shell: bool) -> None:
    tree = LexborHTMLParser(f"<html><head><title>t</title></head><body>{body}</body></html>")
    assert app_shell(tree) is shell


def test_the_settings_make_the_policy() -> None:
    from crawlspace.config import CrawlConfig
    from crawlspace.crawl.setup import render_policy

    policy = render_policy(
        CrawlConfig(
            render="always",
            render_hosts=("app.example:8080",),
            render_max_pages_per_host=7,
            render_max_seconds_per_host=90.0,
            render_max_pages=40,
            render_max_seconds=600.0,
        )
    )
    assert policy.mode == "always"
    assert policy.hosts == {"http://app.example:8080", "https://app.example:8080"}
    assert (policy.max_pages_per_host, policy.max_seconds_per_host) == (7, 90.0)
    assert policy.crawl == RenderBudget(max_pages=40, max_seconds=600.0)
    assert not render_policy(CrawlConfig(render="auto")).crawl.active
    assert render_policy(CrawlConfig()).mode == "never"
    auto = render_policy(
        CrawlConfig(
            render="auto",
            render_skip_hosts=("https://big.example",),
            render_min_text=50,
            render_min_links=3,
        )
    )
    assert auto.opted_out == {"https://big.example"}
    assert (auto.min_text_chars, auto.min_links) == (50, 3)
    thin = PageSignals(html=True, text_chars=60, links=2)
    assert should_render(auto, "https://app.example", thin, NONE, CRAWL).reason == "thin"
    assert should_render(auto, "https://big.example", thin, NONE, CRAWL).reason == "opted_out"
