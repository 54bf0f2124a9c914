"""Pure trap checks: repeated path segments, query size, exclusions, URL templates, and the
discovery-ratio window."""

from __future__ import annotations

import pytest

from crawlspace.discovery.links import Discovery, EntryRules
from crawlspace.discovery.scope import Scope
from crawlspace.frontier.budgets import (
    DiscoveryWindow,
    TrapRules,
    advance_window,
    compile_excludes,
    decode_window,
    encode_window,
    max_segment_repeats,
    parent_patterns,
    trap_reason,
    url_template,
)

RULES = TrapRules(max_path_repeats=2, max_query_params=3)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://s.test/a/b/a/b/", None),
        ("https://s.test/a/b/a/b/a/b/", "path_repeat"),
        ("https://s.test/x/y/z/x/y/z/x/y/z", "path_repeat"),
        ("https://s.test/a/a/a", "path_repeat"),
        ("https://s.test/2024/01/01/post", None),
        ("https://s.test/?a=1&b=2&c=3", None),
        ("https://s.test/?a=1&b=2&c=3&d=4", "query_params"),
        ("https://s.test/?a=1&&&&&&&&&&&&&&", None),  # empty pairs are no parameters
        ("https://s.test/?a=1;b=2;c=3;d=4", "query_params"),  # ";" separates too
        ("https://s.test/?a=1;b=2&c=3", None),
    ],
)
def test_trap_reason(url: str, reason: str | None) -> None:
    assert trap_reason(url, RULES) == reason


def test_checks_can_be_turned_off() -> None:
    off = TrapRules(max_path_repeats=0, max_query_params=0)
    assert trap_reason("https://s.test/a/a/a/a?a&b&c&d&e&f&g&h&i&j&k&l", off) is None


def test_max_segment_repeats() -> None:
    assert max_segment_repeats([]) == 1
    assert max_segment_repeats(["a", "b", "a", "b", "a", "b"]) == 3
    assert max_segment_repeats(["a", "b", "c", "a", "b", "c"]) == 2


def test_exclusion_patterns_glob_and_regex_per_host() -> None:
    rules = TrapRules(
        exclude=compile_excludes(("/private/*", "*.shop.test re:[?&]sort=", "a.test /x"))
    )
    assert trap_reason("https://any.test/private/1", rules) == "excluded_pattern"
    assert trap_reason("https://www.shop.test/list?page=2&sort=asc", rules) == "excluded_pattern"
    assert trap_reason("https://other.test/list?sort=asc", rules) is None
    assert trap_reason("https://a.test/x", rules) == "excluded_pattern"
    assert trap_reason("https://b.test/x", rules) is None
    with pytest.raises(ValueError, match="bad regular expression"):
        compile_excludes(("re:(",))


def test_url_template_abstracts_digits_tokens_and_query_values() -> None:
    a = url_template("https://s.test/cal/2031/07?view=week")
    assert a == url_template("https://s.test/cal/1999/12?view=day")
    assert a == "/cal/{n}/{n}?view="  # per host: the store keys it by host id
    assert url_template("https://s.test/s/9f8e7d6c5b4a3f2e/x") == "/s/{id}/x"
    assert url_template("https://s.test/about") == "/about"
    assert url_template("https://s.test/p?b=1&a=2") == url_template("https://s.test/p?a=9&b=8")


def test_discovery_window_flags_a_ratio_that_does_not_fall() -> None:
    finite, trap = DiscoveryWindow(), DiscoveryWindow()
    for page in range(40):
        finite = advance_window(finite, 5 if page < 10 else 0, window=10, min_ratio=1.0)
        trap = advance_window(trap, 3, window=10, min_ratio=1.0)
    assert not finite.flagged
    assert trap.flagged
    assert trap.last_ratio == 3.0
    calm = trap
    for _ in range(10):
        calm = advance_window(calm, 0, window=10, min_ratio=1.0)
    assert not calm.flagged  # a host that stops inventing URLs recovers


def test_discovery_window_keeps_the_wasted_share_and_reads_old_notes() -> None:
    state = DiscoveryWindow()
    for page in range(10):
        state = advance_window(state, 1, window=10, min_ratio=1.0, wasted=page % 4 != 0)
    assert (state.pages, state.wasted, state.last_waste) == (0, 0, 0.7)
    state = advance_window(state, 0, window=10, min_ratio=1.0, wasted=True)
    assert decode_window(encode_window(state)) == state
    assert decode_window("3 41 2.5 1") == DiscoveryWindow(3, 41, 2.5, True)  # before the waste


def test_discovery_admission_applies_trap_rules() -> None:
    discovery = Discovery(
        EntryRules(traps=TrapRules(max_query_params=1)), Scope("host", ["https://s.test/"])
    )
    admission = discovery.admit_links(
        [("/a/b/a/b/a/b/", False), ("/q?x=1&y=2", False), ("/ok", False)],
        base_url="https://s.test/",
        parent_depth=0,
        page_nofollow=False,
    )
    assert [c.url for c in admission.candidates] == ["https://s.test/ok"]
    assert admission.rejections == {"path_repeat": 1, "query_params": 1}


def test_include_patterns_keep_links_inside_them_and_let_seeds_through() -> None:
    rules = TrapRules(include=compile_excludes(("docs.example re:^/guide/", "*.png"), "include"))
    assert trap_reason("https://docs.example/guide/a.html", rules) is None
    assert trap_reason("https://docs.example/guide/", rules) is None
    assert trap_reason("https://cdn.example/x/logo.png", rules) is None  # any host: *.png
    assert trap_reason("https://docs.example/other.html", rules) == "not_included"
    assert trap_reason("https://www.example/guide/a.html", rules) == "not_included"
    assert trap_reason("https://docs.example/other.html", rules, seed=True) is None
    # Exclusion wins over inclusion; no include patterns: everything is included.
    both = TrapRules(exclude=compile_excludes(("*/draft*",)), include=rules.include)
    assert trap_reason("https://docs.example/guide/draft-1", both) == "excluded_pattern"
    assert trap_reason("https://docs.example/other.html", TrapRules()) is None


def test_parent_patterns_are_the_seeds_directories() -> None:
    patterns = parent_patterns(
        [
            "https://Docs.Example/guide/intro.html",
            "https://docs.example/guide/",
            "http://h.example:8080/a+b (1)/x",
            "http://root.example",
        ]
    )
    assert patterns == (
        "docs.example re:^/guide/",
        "h.example re:^/a\\+b%20\\(1\\)/",
        "root.example re:^/",
    )
    rules = TrapRules(include=compile_excludes(patterns, "include"))
    assert trap_reason("https://docs.example/guide/deeper/page", rules) is None
    assert trap_reason("https://docs.example/guidebook", rules) == "not_included"
    assert trap_reason("http://h.example:8080/a+b%20(1)/y?q=1", rules) is None
    assert trap_reason("http://h.example:8080/a+b/", rules) == "not_included"
    assert trap_reason("http://root.example/anything", rules) is None
