"""The parse workers' objects pickle as their fields (crawlspace/pickling.py): each comes back
equal, through its constructor, and a class that could not be rebuilt that way is refused."""

from __future__ import annotations

import pickle
from collections import Counter
from dataclasses import dataclass, field

import pytest

from crawlspace.archive.records import ExchangeRecords
from crawlspace.crawl.parse_jobs import ParsedPage
from crawlspace.dedup.sketch import Sketch
from crawlspace.discovery.links import Admission, PreLinks
from crawlspace.parse.processors import ProcessedContent
from crawlspace.pickling import by_fields
from crawlspace.records import LinkRecord, UrlCandidate


def _page() -> ParsedPage:
    candidate = UrlCandidate(
        "http://a.test/x", "a.test:80", 3, priority=-7, source="sitemap", lastmod="2026-01-01"
    )
    admission = Admission(
        candidates=[candidate, UrlCandidate("http://a.test/y", "a.test:80", 1)],
        excluded=[("http://a.test/z", "depth")],
        links=[LinkRecord("http://a.test/x", True)],
        rejections=Counter(scope=2),
        counters=Counter({"dedup.links_raw": 5}),
    )
    content = ProcessedContent(
        "http://a.test/",
        text_sha256="ab" * 32,
        simhash=(1 << 64) - 1,
        sketch=Sketch((1, 2, 3), 9),
        noindex=True,
    )
    records = ExchangeRecords(b"\x1f\x8b req", b"\x1f\x8b resp", "cd" * 32, "sha1:XYZ")
    return ParsedPage(content, None, admission, records)


def test_every_worker_object_comes_back_equal() -> None:
    page = _page()
    assert pickle.loads(pickle.dumps(page, protocol=5)) == page
    prelinks = PreLinks([("http://a.test/x", 2, False)], 3, 2, {"bad_scheme": 1})
    assert pickle.loads(pickle.dumps(prelinks)) == prelinks


def test_they_pickle_as_their_fields() -> None:
    sketch = Sketch((1, 2, 3), 9)
    assert sketch.__reduce__() == (Sketch, ((1, 2, 3), 9))


def test_candidates_and_links_come_back_as_their_tuples_without_a_constructor() -> None:
    """A page's candidates and links are rebuilt by ``tuple.__new__`` (records.py): one C call
    each, and still of their own class."""
    candidate = UrlCandidate("http://a.test/x", "a.test:80", 3)
    rebuild, (cls, values) = candidate.__reduce__()
    assert (rebuild, cls) == (tuple.__new__, UrlCandidate)
    assert values == ("http://a.test/x", "a.test:80", 3, 0, 0, "link", None, None, None, None)
    for record in (candidate, LinkRecord("http://a.test/x", True)):
        again = pickle.loads(pickle.dumps(record, protocol=5))
        assert (type(again), again) == (type(record), record)


def test_a_field_outside_init_is_refused() -> None:
    @dataclass(frozen=True, slots=True)
    class Derived:
        base: int
        doubled: int = field(init=False, default=0)

    with pytest.raises(TypeError, match="__init__ parameter"):
        by_fields(Derived)
