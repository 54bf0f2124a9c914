"""The payloads a crawl remembers to write repeats as revisit records (archive/captures.py), and
the check that a revisit is written only for the very payload (archive/records.py)."""

from __future__ import annotations

import gzip

from crawlspace.archive.captures import MIN_PAYLOAD_BYTES, Capture, Captures
from crawlspace.archive.records import EarlierCapture, Exchange, RecordBuilder, payload_digest
from crawlspace.archive.warc import WarcLocation


def body(n: int) -> bytes:
    return f"page {n} ".encode() * (MIN_PAYLOAD_BYTES // 6)


def capture(n: int) -> Capture:
    location = WarcLocation("f.warc.gz", n * 100, 90, "s", payload_digest(body(n)))
    return Capture(f"http://h/{n}", 1000.0 + n, location)


def test_a_repeat_finds_its_first_capture() -> None:
    captures = Captures(10)
    first = captures.lookup(body(1))
    assert first.earlier is None
    captures.remember(first, capture(1))
    again = captures.lookup(body(1))
    assert again.earlier == capture(1)
    assert again.earlier_capture() == EarlierCapture(payload_digest(body(1)), "http://h/1", 1001.0)
    assert captures.lookup(body(2)).earlier is None


def test_small_or_cut_payloads_are_always_written_in_full() -> None:
    captures = Captures(10)
    for payload, cut in ((b"x" * (MIN_PAYLOAD_BYTES - 1), False), (body(1), True)):
        lookup = captures.lookup(payload, cut=cut)
        assert lookup.key is None
        captures.remember(lookup, capture(1))
        assert captures.lookup(payload, cut=cut).earlier is None
    assert captures.lookup(body(1)).earlier is None


def test_the_least_recently_used_is_forgotten_first() -> None:
    captures = Captures(2)
    for n in (1, 2):
        captures.remember(captures.lookup(body(n)), capture(n))
    assert captures.lookup(body(1)).earlier is not None  # used: now the most recent
    captures.remember(captures.lookup(body(3)), capture(3))
    assert captures.lookup(body(2)).earlier is None
    assert captures.lookup(body(1)).earlier == capture(1)
    assert captures.lookup(body(3)).earlier == capture(3)


def test_a_window_of_zero_remembers_nothing() -> None:
    captures = Captures(0)
    captures.remember(captures.lookup(body(1)), capture(1))
    assert captures.lookup(body(1)).earlier is None


def exchange(payload: bytes) -> Exchange:
    return Exchange("http://h/x", [], 200, "OK", [("Content-Type", "text/html")], payload, 5.0)


def test_a_revisit_is_written_only_for_the_same_payload() -> None:
    builder = RecordBuilder()
    earlier = EarlierCapture(payload_digest(body(1)), "http://h/1", 1001.0)
    same = builder.capture(exchange(body(1)), earlier)
    assert same.revisit
    assert b"WARC-Type: revisit" in gzip.decompress(same.response_member)
    # A payload the lookup's fast hash took for another (a collision) is written in full.
    other = builder.capture(exchange(body(2)), earlier)
    assert not other.revisit
    assert other.payload_digest == payload_digest(body(2))
    assert not builder.capture(exchange(body(1)), None).revisit


def test_shared_captures_are_told_once_and_the_others_learned() -> None:
    from crawlspace.records import StoredCapture

    captures = Captures(3)
    first = captures.lookup(body(1))
    captures.remember(first, capture(1))
    assert captures.fresh() == []  # not shared: nothing kept to tell
    captures.share()
    second = captures.lookup(body(2))
    captures.remember(second, capture(2))
    told = captures.fresh()
    assert [(c.key, c.url, c.warc_offset) for c in told] == [(second.key, "http://h/2", 200)]
    assert captures.fresh() == []  # each told once
    # Another worker's capture of body 3, and its copy of body 2, which this one holds itself.
    assert second.key is not None
    theirs = captures.lookup(body(3)).key
    assert theirs is not None
    captures.learn(
        [
            StoredCapture(theirs, "http://other/3", 5.0, "", 0, 0, payload_digest(body(3))),
            StoredCapture(second.key, "http://other/2", 6.0, "", 0, 0, "sha1:X"),
        ]
    )
    learned = captures.lookup(body(3)).earlier
    assert learned is not None
    assert (learned.url, learned.location.file) == ("http://other/3", "")
    assert captures.lookup(body(2)).earlier == capture(2)  # its own record kept
    assert captures.fresh() == []  # what it learned is not told again


def test_what_is_kept_to_tell_is_bounded_by_the_window() -> None:
    captures = Captures(2)
    captures.share()
    for n in range(5):
        captures.remember(captures.lookup(body(n)), capture(n))
    assert [c.url for c in captures.fresh()] == ["http://h/3", "http://h/4"]
