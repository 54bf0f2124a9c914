"""The payloads a crawl remembers to write repeats as revisit records (archive/captures.py)."""

from __future__ import annotations

from crawlspace.archive.captures import MIN_PAYLOAD_BYTES, Capture, Captures
from crawlspace.archive.warc import WarcLocation

BIG = MIN_PAYLOAD_BYTES


def capture(n: int) -> Capture:
    return Capture(f"http://h/{n}", 1000.0 + n, WarcLocation("f.warc.gz", n * 100, 90, "s"))


def test_a_repeat_finds_its_first_capture() -> None:
    captures = Captures(10)
    assert captures.earlier("sha1:A", BIG) is None
    captures.remember("sha1:A", BIG, capture(1))
    assert captures.earlier("sha1:A", BIG) == capture(1)
    assert captures.earlier("sha1:B", BIG) is None


def test_small_unknown_or_cut_payloads_are_always_written_in_full() -> None:
    captures = Captures(10)
    for digest, size in (("sha1:S", BIG - 1), (None, BIG), ("sha1:T", -1)):
        captures.remember(digest, size, capture(1))
        assert captures.earlier(digest, size) is None
        assert captures.earlier(digest, BIG) is None


def test_the_least_recently_used_is_forgotten_first() -> None:
    captures = Captures(2)
    captures.remember("sha1:1", BIG, capture(1))
    captures.remember("sha1:2", BIG, capture(2))
    assert captures.earlier("sha1:1", BIG) is not None  # used: now the most recent
    captures.remember("sha1:3", BIG, capture(3))
    assert captures.earlier("sha1:2", BIG) is None
    assert captures.earlier("sha1:1", BIG) == capture(1)
    assert captures.earlier("sha1:3", BIG) == capture(3)


def test_a_window_of_zero_remembers_nothing() -> None:
    captures = Captures(0)
    captures.remember("sha1:A", BIG, capture(1))
    assert captures.earlier("sha1:A", BIG) is None
