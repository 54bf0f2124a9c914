"""robots/hop_answers.py: answers reached through another host's redirect, kept while fresh and
within a byte budget, least recently used out first."""

from __future__ import annotations

from crawlspace.robots.hop_answers import HopAnswer, HopAnswers

URL = "https://hub.example/robots.txt"


def test_an_answer_is_kept_until_it_expires() -> None:
    answers = HopAnswers()
    answers.put(URL, HopAnswer(200, b"User-agent: *\nDisallow: /no/\n", expires_at=100.0))
    kept = answers.get(URL, 99.9)
    assert kept is not None
    assert kept.status == 200
    assert answers.get(URL, 100.0) is None  # expired: dropped
    assert len(answers) == 0
    assert answers.get("https://other.example/robots.txt", 0.0) is None


def test_the_byte_budget_drops_the_least_recently_used() -> None:
    answers = HopAnswers(max_bytes=10)
    answers.put("a", HopAnswer(200, b"12345", 1e9))
    answers.put("b", HopAnswer(200, b"1234", 1e9))
    assert answers.get("a", 0.0) is not None  # a is now the most recently used
    answers.put("c", HopAnswer(404, b"xy", 1e9))  # 11 bytes: b goes
    assert answers.get("b", 0.0) is None
    assert answers.get("a", 0.0) is not None
    assert answers.get("c", 0.0) is not None
    answers.put("huge", HopAnswer(200, b"x" * 11, 1e9))  # larger than the budget: not kept
    assert answers.get("huge", 0.0) is None
    assert len(answers) == 2
    answers.put("a", HopAnswer(200, b"", 1e9))  # replaced: its old bytes are given back
    answers.put("d", HopAnswer(200, b"12345678", 1e9))
    assert answers.get("a", 0.0) is not None
