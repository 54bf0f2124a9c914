"""Trap detection by yield (frontier/trap_yield.py): pure, on made-up fingerprints."""

from __future__ import annotations

import random

import pytest

from crawlspace.dedup.simhash import simhash_and_sketch
from crawlspace.dedup.sketch import Sketch
from crawlspace.frontier.trap_yield import (
    FamilyYield,
    YieldRules,
    decode,
    encode,
    observe,
    url_family,
)

RULES = YieldRules(sample=10, sibling_share=0.7, sibling_new_pairs=8, minting_share=0.5)
WORDS = [f"w{i}" for i in range(500)]
TEMPLATE = " ".join(WORDS[:60])


def sketch(text: str) -> Sketch:
    return simhash_and_sketch(text)[1]


def near(i: int) -> Sketch:
    """A page of the template with a date of its own: two words differ."""
    return sketch(f"{TEMPLATE} day {i} of the month")


def far(i: int) -> Sketch:
    """A page with text of its own: forty words drawn for it, on the same template."""
    rng = random.Random(i)
    return sketch(TEMPLATE[:100] + " " + " ".join(rng.choice(WORDS) for _ in range(40)))


def run(
    family: str, pages: list[tuple[str, Sketch, int]], rules: YieldRules = RULES
) -> FamilyYield:
    state = FamilyYield()
    for url, page, minted in pages:
        state = observe(state, family, url=url, sketch=page, minted=minted, rules=rules)
        state = decode(encode(state))  # as a host note keeps it
    return state


@pytest.mark.parametrize(
    ("url", "family"),
    [
        ("http://h/calendar/2029/11/18", "/calendar/"),
        ("http://h/2024/05/12/post.html", "/{n}/"),
        ("http://h/2024/05/", "/{n}/"),
        ("http://h/shop?color=green&size=m", "/shop?"),
        ("http://h/products/shoes?page=2", "/products/shoes?"),
        ("http://h/docs/guide/install/", "/docs/"),
        ("http://h/about", None),
        ("http://h/", None),
    ],
)
def test_url_families(url: str, family: str | None) -> None:
    assert url_family(url) == family


def test_a_family_of_near_siblings_that_mints_itself_is_flagged() -> None:
    pages = [(f"http://h/calendar/2029/11/{d}", near(d), 2) for d in range(1, 11)]
    state = run("/calendar/", pages)
    assert state.verdict == "trap_template"
    assert state.total == 10
    # Flagged for good: more pages change nothing.
    assert run("/calendar/", pages * 2).verdict == "trap_template"


def test_the_verdict_waits_for_a_full_window() -> None:
    pages = [(f"http://h/calendar/2029/11/{d}", near(d), 2) for d in range(1, 10)]
    assert run("/calendar/", pages).verdict is None


def test_real_siblings_with_their_own_text_are_not_flagged() -> None:
    # A docs tree: every page mints children, but each has text of its own.
    pages = [(f"http://h/docs/p{i}/", far(i), 3) for i in range(40)]
    state = run("/docs/", pages)
    assert state.verdict is None
    assert (state.pages, state.total) == (0, 40)  # four windows passed, none flagged


def test_near_siblings_whose_discovery_closed_are_not_flagged() -> None:
    # A catalog's listing pages look alike (their navigation dominates) but mint nothing new
    # after the first, which found them all.
    pages = [(f"http://h/products?page={i}", near(i), 0) for i in range(30)]
    pages[0] = (pages[0][0], pages[0][1], 39)  # page 1 found all the others
    assert run("/products?", pages).verdict is None


def test_the_reason_names_the_shape() -> None:
    facets = [(f"http://h/shop?color={i}", near(i), 3) for i in range(10)]
    assert run("/shop?", facets).verdict == "trap_facets"
    loop = [("http://h/loop/" + "ab/" * (i // 2 + 1), near(i), 2) for i in range(10)]
    assert run("/loop/", loop).verdict == "trap_loop"


def test_a_share_below_the_threshold_is_not_a_trap() -> None:
    # 6 of 10 near a sibling: below 0.7.
    pages = [(f"http://h/c/{i}/", near(i) if i < 7 else far(i), 2) for i in range(10)]
    assert run("/c/", pages).verdict is None


def test_off_when_the_sample_is_zero() -> None:
    pages = [(f"http://h/calendar/{d}/x", near(d), 2) for d in range(30)]
    assert run("/calendar/", pages, YieldRules(sample=0)) == FamilyYield()


def test_notes_round_trip_and_unreadable_notes_start_afresh() -> None:
    state = FamilyYield(3, 2, 2, 1, 4, near(1), None, 33, None)
    assert decode(encode(state)) == state
    assert decode(None) == FamilyYield()
    assert decode("garbage") == FamilyYield()
    assert decode("1 2 3 4 5 x y 9 -") == FamilyYield(1, 2, 3, 4, 5, None, None, 9, None)
