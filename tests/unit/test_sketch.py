"""Bottom-k sketches of word pairs (dedup/sketch.py): how many word pairs a page adds."""

from __future__ import annotations

import random

from crawlspace.dedup.simhash import simhash64, simhash_and_sketch
from crawlspace.dedup.sketch import Sketch, new_pairs

WORDS = [f"w{i}" for i in range(2000)]


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def test_new_pairs_estimates_what_a_page_adds() -> None:
    rng = random.Random(1)
    base = text(rng, 300)
    same = simhash_and_sketch(base)[1]
    assert new_pairs(same, same) == 0
    # Forty new words appended: forty new word pairs (one more where they join the base).
    grown = simhash_and_sketch(base + " " + text(rng, 40))[1]
    assert 25 <= new_pairs(grown, same) <= 60
    assert new_pairs(same, grown) <= 5  # the base lacks nothing of its own
    other = simhash_and_sketch(text(rng, 300))[1]
    assert new_pairs(other, same) >= 250


def test_the_simhash_is_the_same_and_sketches_round_trip() -> None:
    words = "the quick brown fox jumps over the lazy dog " * 5
    simhash, sketch = simhash_and_sketch(words)
    assert simhash == simhash64(words)
    assert Sketch.decode(sketch.encode()) == sketch
    assert Sketch.decode("garbage") is None
    assert simhash_and_sketch("")[1] == Sketch((), 0)
