"""Link admission in the parse worker processes (crawl/stages.py, crawl/parse_jobs.py): the
same result as the crawl loop's, and the loop keeps it when the workers cannot have the current
rules."""

from __future__ import annotations

import asyncio

from crawlspace.crawl.parse_jobs import ParsedPage
from crawlspace.crawl.stages import StagePools
from crawlspace.discovery.links import Admission, Discovery, EntryRules, prenormalize
from crawlspace.discovery.scope import Scope
from crawlspace.parse.processors import process_html

PAGE = b"""<html><body>
<a href="/a">a</a> <a href="/b?utm_source=x">b</a> <a href="/a">again</a>
<a href="http://other.test/x">off-site</a> <a rel="nofollow" href="/private">p</a>
<a href="/deep/deep/deep/deep/deep/deep/page">repeats</a>
</body></html>"""
URL = "http://site.test/index.html"


def _discovery(filters: list = ()) -> Discovery:  # type: ignore[assignment,type-arg]
    return Discovery(EntryRules(max_depth=5), Scope("host", [URL]), filters)


def _parse(pools: StagePools) -> ParsedPage:
    async def go() -> ParsedPage:
        return await pools.parse_page(
            process_html,
            PAGE,
            url=URL,
            content_type="text/html",
            product_token="testbot",
            parent_depth=1,
            header_nofollow=False,
        )

    try:
        return asyncio.run(go())
    finally:
        pools.close()


def _in_loop(discovery: Discovery) -> Admission:
    content = process_html(PAGE, url=URL, content_type="text/html", product_token="testbot")
    prelinks = prenormalize(content.links, content.base_url)
    return discovery.admit_prenormalized(prelinks, parent_depth=1, page_nofollow=False)


def test_a_worker_admits_links_exactly_as_the_loop_does() -> None:
    discovery = _discovery()
    pools = StagePools(1, discovery=discovery)
    assert pools.admits_in_workers
    page = _parse(pools)
    admission = page.admission
    assert admission is not None
    assert page.prelinks is None  # only the admission travels back
    assert page.content.links == []
    expected = _in_loop(discovery)
    assert admission.candidates == expected.candidates
    assert admission.excluded == expected.excluded
    assert admission.links == expected.links
    assert admission.rejections == expected.rejections
    assert "http://site.test/a" in [c.url for c in admission.candidates]
    assert admission.rejections["scope"] == 1  # other.test
    assert admission.rejections["nofollow"] == 1


def test_a_filter_the_workers_cannot_receive_keeps_admission_in_the_loop() -> None:
    discovery = _discovery([lambda url: "no_b" if "/b" in url else None])
    pools = StagePools(1, discovery=discovery)
    assert not pools.admits_in_workers
    page = _parse(pools)
    assert page.admission is None
    assert page.prelinks is not None  # the loop admits from these
    in_loop = discovery.admit_prenormalized(page.prelinks, parent_depth=1, page_nofollow=False)
    assert in_loop.rejections["no_b"] == 1


def test_seeds_added_after_the_workers_started_are_honoured() -> None:
    discovery = _discovery()
    pools = StagePools(1, discovery=discovery)
    discovery.scope.add_seed("http://other.test/")  # widens the scope after the workers' copy
    page = _parse(pools)
    assert page.admission is None
    assert page.prelinks is not None
    in_loop = discovery.admit_prenormalized(page.prelinks, parent_depth=1, page_nofollow=False)
    assert "http://other.test/x" in [c.url for c in in_loop.candidates]
