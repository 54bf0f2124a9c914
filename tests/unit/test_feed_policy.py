"""Which completions reach the index feed and as what (frontier/feed.py), on plain records, and
the page part built where a page is parsed (crawl/parse_jobs.py page_document)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from crawlspace.crawl.parse_jobs import ParsedPage, parse_and_admit
from crawlspace.discovery.links import prenormalize
from crawlspace.feed_codec import unpack
from crawlspace.feed_format import DELETE, UPSERT, document_id
from crawlspace.frontier.feed import FeedSource, feed_entry
from crawlspace.frontier.plans import CompletionPolicy, plan_completion
from crawlspace.parse.processors import process_html
from crawlspace.plans import ContentVerdict
from crawlspace.records import Completion, FetchRecord, Lease, LeaseKind

URL = "http://h.test/page"
NOW = 1_800_000_000.25
UNIQUE = ContentVerdict()


def lease(version: int = 1) -> Lease:
    return Lease(LeaseKind.PAGE, "l1", "http://h.test", URL, 7, version, 1, 0, 0, NOW + 60)


def fetch(status: int = 200, **changes: object) -> FetchRecord:
    record = FetchRecord(
        URL, URL, status, NOW - 1, 12.0, "text/html", 100, False, "c" * 64, "f.warc.gz", 10, 90
    )
    defaults: dict[str, object] = {"document": b"packed", "text_sha256": "t" * 64}
    return dataclasses.replace(record, **{**defaults, **changes})  # type: ignore[arg-type]


def entry(completion: Completion, verdict: ContentVerdict = UNIQUE, version: int = 1):  # type: ignore[no-untyped-def]
    return feed_entry(FeedSource(lease(version), completion, NOW), verdict)


def test_a_parsed_page_is_an_upsert_of_its_document() -> None:
    found = entry(Completion("fetched", fetch=fetch(simhash=0xABC)))
    assert found is not None
    assert found.kind == UPSERT
    assert found.document == b"packed"
    meta = json.loads(found.meta)
    assert found.doc_id == meta["id"] == document_id(URL)
    assert meta["version"] == 1_800_000_000_250_000  # the completion time, in µs
    assert meta["url_version"] == 1
    assert meta["simhash"] == "0000000000000abc"
    assert meta["warc"] == {"file": "f.warc.gz", "offset": 10, "length": 90}


def test_a_page_naming_a_canonical_is_that_document() -> None:
    found = entry(Completion("fetched", fetch=fetch(canonical="/main#x")))
    assert found is not None
    assert found.doc_id == document_id("http://h.test/main")
    assert json.loads(found.meta)["canonical"] == "http://h.test/main"


@pytest.mark.parametrize(
    ("completion", "verdict", "reason"),
    [
        (Completion("fetched", reason="gone", fetch=fetch(410)), UNIQUE, "gone"),
        (Completion("fetched", reason="gone", fetch=fetch(404)), UNIQUE, "gone"),
        (Completion("redirected", fetch=fetch(301, redirect_to=URL + "2")), UNIQUE, "redirected"),
        (Completion("redirected", reason="redirect_limit"), UNIQUE, "redirected"),
        (Completion("fetched", fetch=fetch(noindex=True)), UNIQUE, "noindex"),
        (Completion("fetched", fetch=fetch()), ContentVerdict(exact_of=3), "duplicate"),
        (Completion("fetched", fetch=fetch()), ContentVerdict(near_of=3), "near_duplicate"),
    ],
)
def test_what_an_index_must_drop_is_a_delete_of_the_urls_own_id(
    completion: Completion, verdict: ContentVerdict, reason: str
) -> None:
    completion = dataclasses.replace(
        completion,
        fetch=None
        if completion.fetch is None
        else dataclasses.replace(completion.fetch, canonical="/other"),
    )
    found = entry(completion, verdict)
    assert found is not None
    assert found.kind == DELETE
    assert found.document is None
    meta = json.loads(found.meta)
    assert found.doc_id == meta["id"] == document_id(URL)  # never the canonical's
    assert meta["reason"] == reason


def test_a_redirects_delete_says_where_it_went() -> None:
    found = entry(Completion("redirected", fetch=fetch(301, redirect_to=URL + "2")))
    assert found is not None
    assert json.loads(found.meta)["redirect_to"] == URL + "2"


@pytest.mark.parametrize(
    "completion",
    [
        Completion("queued", fetch=fetch(503)),  # a retry
        Completion("failed", reason="connect_error"),  # may be back later
        Completion("excluded", reason="robots"),
        Completion("not_modified", fetch=fetch(304)),  # the document held is current
        Completion("fetched", fetch=fetch(document=None)),  # nothing parsed: an image
        Completion("fetched", fetch=fetch(204, document=None)),
        Completion("fetched", reason="parse_budget", fetch=fetch(document=None)),
    ],
)
def test_a_visit_that_says_nothing_new_gives_no_record(completion: Completion) -> None:
    assert entry(completion) is None


def test_the_plan_carries_the_record_and_the_setting_turns_it_off() -> None:
    completion = Completion("fetched", fetch=fetch())
    plan = plan_completion(lease(), completion, {}, CompletionPolicy(), NOW)
    assert plan.feed_entry(UNIQUE) is not None
    assert plan.feed_entry(ContentVerdict(exact_of=1)).kind == DELETE  # type: ignore[union-attr]
    off = plan_completion(lease(), completion, {}, CompletionPolicy(feed=False), NOW)
    assert off.feed_entry(UNIQUE) is None
    retry = plan_completion(lease(), Completion("queued"), {}, CompletionPolicy(), NOW)
    assert retry.feed_entry(UNIQUE) is None


def test_versions_grow_with_time_whichever_url_they_came_from() -> None:
    first = feed_entry(FeedSource(lease(1), Completion("fetched", fetch=fetch()), NOW), UNIQUE)
    later = feed_entry(
        FeedSource(lease(2), Completion("fetched", reason="gone", fetch=fetch(410)), NOW + 1e-6),
        UNIQUE,
    )
    assert first is not None
    assert later is not None
    assert json.loads(later.meta)["version"] > json.loads(first.meta)["version"]


def parsed(body: bytes, document_chars: int | None = None) -> ParsedPage:
    return parse_and_admit(
        process_html,
        body,
        url=URL,
        content_type="text/html",
        product_token="bot",
        parent_depth=0,
        header_nofollow=False,
        document_chars=document_chars,
    )


def test_the_page_part_is_built_where_the_page_is_parsed() -> None:
    body = (
        b'<html lang="fr"><title>Le titre</title><body><p>Bonjour tout le monde</p>'
        b'<a href="/a">Premier <i>lien</i></a><a href="/a#x">encore</a><a href="/a">encore</a>'
        b'<a href="/b" rel="nofollow"></a><a href="mailto:x@y">mail</a></body></html>'
    )
    page = parsed(body, document_chars=10)
    content = page.content
    assert content.text is None
    assert content.anchors is None
    assert content.document is not None
    document = unpack(content.document)
    assert document == {
        "title": "Le titre",
        "lang": "fr",
        "text": "Bonjour to",
        "text_truncated": True,
        "outlinks": [
            {"url": "http://h.test/a", "anchors": ["Premier lien", "encore"], "nofollow": False},
            {"url": "http://h.test/b", "anchors": [], "nofollow": True},
        ],
    }
    assert page.prelinks is not None
    assert page.prelinks.anchors is None
    unasked = parsed(body)
    assert unasked.content.document is None
    assert unasked.content.text is None


def test_anchor_texts_per_url_are_distinct_and_few() -> None:
    links = [("/x", False)] * 10
    texts = ["one", "two", "one", "", "three", "four", "five", "six", "seven", "eight"]
    pre = prenormalize(links, URL, texts)
    assert pre.anchors == [["one", "two", "three", "four"]]
    assert prenormalize(links, URL).anchors is None


def test_a_retired_url_is_deleted_and_other_exclusions_say_nothing() -> None:
    found = entry(Completion("excluded", reason="retired"), version=3)
    assert found is not None
    assert (found.kind, found.doc_id) == (DELETE, document_id(URL))
    meta = json.loads(found.meta)
    assert (meta["reason"], meta["status"], meta["url_version"]) == ("retired", None, 3)
    assert entry(Completion("excluded", reason="robots"), version=3) is None
