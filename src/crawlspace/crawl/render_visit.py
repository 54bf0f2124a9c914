"""A fetched page rendered in the browser when the entry rule asks for it (issue #33).

After the page's plain fetch and parse (crawl/visit.py), ``render_page`` asks the entry rule
(frontier/render_entry.py) with what the parse found and the host's renders so far (its host
note). A page it picks is rendered (render/browser.py) from the response already fetched, every
request the page makes under the crawl's rules (crawl/render_requests.py), all within the
lease. The rendered DOM is archived as a WARC ``conversion`` record referring to the response,
parsed like any page, and its links join the page's own (admitted once, at the page's depth +
1). The host's note counts the render, and stops the host's renders once they add nothing; the
host's next lease waits until after the render's last request. A render that fails (past its
time, a crashed page, no browser) keeps the page as its plain fetch left it: nothing is lost.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from crawlspace.crawl.render_requests import SKIPPED_RESOURCES, RenderRequests
from crawlspace.crawl.visit_parts import VisitParts
from crawlspace.errors import ParseBudgetError
from crawlspace.fetch.transport import FetchResponse
from crawlspace.frontier.render_entry import (
    RENDER_NOTE,
    STOPPED,
    CrawlRenders,
    HostRenders,
    PageSignals,
    after_render,
    host_note,
    should_render,
)
from crawlspace.parse.directives import parse_x_robots_tag
from crawlspace.parse.processors import ProcessedContent
from crawlspace.records import Completion, Lease, LinkRecord, UrlCandidate
from crawlspace.render.browser import Answer, RenderError, RenderResult
from crawlspace.robots import RobotsTxt
from crawlspace.robots.policy import rules_for

__all__ = ["render_outcome", "render_page"]

log = logging.getLogger("crawlspace.crawl.render")
_T = TypeVar("_T")

MIN_RENDER_SECONDS = 2.0  # less left in the lease than this: the page is kept unrendered


async def render_page(
    parts: VisitParts,
    lease: Lease,
    response: FetchResponse,
    completion: Completion,
    *,
    content: ProcessedContent | None,
    rules: RobotsTxt,
    crawl_delay: float | None,
    renders: HostRenders,
    refers_to: str | None,
) -> tuple[Completion, ProcessedContent | None]:
    """``completion`` with the page's render in it, when the entry rule asks for one, and the
    page's content: the rendered DOM's when the render found more (its text is then what the
    page's hashes and feed document are made of), else the plain parse's. ``refers_to``: the
    WARC-Record-ID of the page's response record."""
    if parts.renderer is None or content is None or completion.state != "fetched":
        return completion, content
    html = "html" in (response.header("content-type") or "")
    plain = PageSignals(html, content.text_chars, len(completion.links), content.app_shell)
    decision = should_render(parts.render_policy, lease.host_key, plain, renders, parts.renders)
    if not decision.render:
        if decision.reason not in STOPPED:
            return completion, content
        return _counted(completion, _skipped(decision.reason)), content
    budget = lease.expires_at - parts.now() - parts.config.total_timeout
    if budget < MIN_RENDER_SECONDS:
        return _counted(completion, {"render.lease_short": 1}), content
    refusal = _take_render(parts)
    if refusal is not None:
        return _counted(completion, _skipped(refusal)), content
    free_at = completion.next_allowed_at or parts.now()
    requests = _requests(parts, lease, rules, crawl_delay, free_at)
    started = time.monotonic()
    document = Answer(response.status, response.headers, response.body)
    try:
        result = await parts.renderer.render(
            lease.url, document, requests, within=min(parts.config.render_timeout, budget)
        )
    except RenderError as exc:
        log.warning("%s: not rendered (%s): %s", lease.url, exc.reason, exc)
        failed = _failed(parts, renders, started, plain, exc.reason)
        return _with_render(completion, failed, requests), content
    rendered = await _parse(parts, lease, response, result)
    if rendered is None:
        failed = _failed(parts, renders, started, plain, "parse")
        return _with_render(completion, failed, requests), content
    content_after, after = rendered
    seconds = time.monotonic() - started
    signals = PageSignals(True, content_after.text_chars, len(after.links), content_after.app_shell)
    host = _host_after(parts, renders, seconds, plain, signals)
    _archive_dom(parts, lease, result, refers_to)
    log.info(
        "%s: rendered in %.1f s, %d requests, %d links (%d before)",
        lease.url,
        seconds,
        requests.sent,
        len(after.links),
        len(completion.links),
    )
    merged = _merged(completion, after)
    counters = {
        "render.pages": 1,
        "render.links": max(0, len(merged.links) - len(completion.links)),
        "render.ms": max(1, round(1000 * seconds)),
    }
    found_more = signals.text_chars > plain.text_chars or signals.links > plain.links
    kept = _rendered_content(content, content_after) if found_more else content
    return _with_render(merged, (host, counters), requests), kept


def render_outcome(completion: Completion) -> tuple[bool, str | None]:
    """Whether the page was rendered, and why its render failed (None: it did not fail, or
    none was tried), from its completion's counters."""
    failed = (name for name in completion.counters if name.startswith("render.failed."))
    reason = next(failed, None)
    return bool(completion.counters.get("render.pages")), (
        reason.removeprefix("render.failed.") if reason else None
    )


def _failed(
    parts: VisitParts, renders: HostRenders, started: float, plain: PageSignals, reason: str
) -> tuple[HostRenders, dict[str, int]]:
    """A render that failed: it counts against the host's budgets as one that added
    nothing; the page keeps its plain fetch and parse."""
    seconds = time.monotonic() - started
    host = _host_after(parts, renders, seconds, plain, plain)
    counters = {
        "render.failed": 1,
        f"render.failed.{reason}": 1,
        "render.ms": max(1, round(1000 * seconds)),
    }
    return host, counters


def _rendered_content(plain: ProcessedContent, rendered: ProcessedContent) -> ProcessedContent:
    """The rendered DOM's content, with what only the plain parse made: the extraction
    hook's items (it ran on the page as fetched) and the page's requisites; a noindex or
    nofollow either said (the response's X-Robots-Tag is in the plain one) stands."""
    return dataclasses.replace(
        rendered,
        items=plain.items,
        extract_error=plain.extract_error,
        requisites=plain.requisites,
        noindex=plain.noindex or rendered.noindex,
        nofollow=plain.nofollow or rendered.nofollow,
    )


def _requests(
    parts: VisitParts,
    lease: Lease,
    rules: RobotsTxt,
    crawl_delay: float | None,
    free_at: float,
) -> RenderRequests:
    hosts = parts.hosts
    assert hosts is not None  # a crawl that renders has its host gate (crawl/crawler.py)

    def robots_of(host: str) -> RobotsTxt | None:
        record = hosts.fresh_answer(host)
        return None if record is None else rules_for(record)

    config = parts.config
    return RenderRequests(
        lease=lease,
        rules=rules,
        user_agent=config.user_agent,
        send=parts.fetch,
        hosts=hosts,
        robots_of=robots_of,
        in_scope=lambda url: parts.discovery.scope.reason(url) is None,
        gap=lambda seconds: parts.politeness.gap(seconds, crawl_delay),
        now=parts.now,
        archive=parts.archive,
        free_at=free_at,
        total_timeout=config.total_timeout,
        skipped=frozenset() if config.render_resources else SKIPPED_RESOURCES,
    )


async def _parse(
    parts: VisitParts, lease: Lease, response: FetchResponse, result: RenderResult
) -> tuple[ProcessedContent, Completion] | None:
    """The rendered DOM parsed as a page of its own URL: its content and a completion holding
    its admitted links (None: the parse failed, the page keeps its plain parse)."""
    processor = parts.processors.for_content_type("text/html")
    if processor is None:
        return None
    # X-Robots-Tag came with the response: its nofollow holds for the rendered DOM's links too.
    headers = parse_x_robots_tag(response.header_values("x-robots-tag"), parts.config.product_token)
    try:
        page = await parts.pools.parse_page(
            processor,
            result.html.encode("utf-8"),
            url=response.url,
            content_type="text/html; charset=utf-8",
            product_token=parts.config.product_token,
            parent_depth=lease.depth,
            header_nofollow=headers.nofollow,
            document_chars=parts.config.feed_text_chars if parts.config.feed else None,
        )
    except ParseBudgetError as exc:
        log.warning("%s: its rendered DOM was not parsed: %s", lease.url, exc)
        return None
    admission = page.admit(
        parts.discovery, parent_depth=lease.depth, header_nofollow=headers.nofollow
    )
    found = Completion(
        state="fetched",
        links=admission.links,
        discovered=admission.candidates,
        excluded=admission.excluded,
        rejections=dict(admission.rejections),
    )
    return page.content, found


def _merged(plain: Completion, rendered: Completion) -> Completion:
    """The plain parse's links and the rendered DOM's new ones, each URL once."""
    links: Sequence[LinkRecord] = [
        *plain.links,
        *_new(plain.links, rendered.links, key=lambda link: link.to_url),
    ]
    discovered: Sequence[UrlCandidate] = [
        *plain.discovered,
        *_new(plain.discovered, rendered.discovered, key=lambda cand: cand.url),
    ]
    seen = {url for url, _ in plain.excluded}
    excluded = [*plain.excluded, *(e for e in rendered.excluded if e[0] not in seen)]
    rejections = dict(plain.rejections)
    for reason, n in rendered.rejections.items():
        rejections[reason] = rejections.get(reason, 0) + n
    return dataclasses.replace(
        plain,
        links=list(links),
        discovered=list(discovered),
        excluded=excluded,
        rejections=rejections,
    )


def _new(old: Sequence[_T], new: Sequence[_T], *, key: Callable[[_T], str]) -> list[_T]:
    """The items of ``new`` whose ``key`` is not one of ``old``'s."""
    known = {key(item) for item in old}
    return [item for item in new if key(item) not in known]


def _skipped(reason: str) -> dict[str, int]:
    """A page that needed a render and did not get one: counted in all and by why (as failed
    renders are), so the metrics find it by one key."""
    return {"render.skipped": 1, f"render.skipped.{reason}": 1}


def _take_render(parts: VisitParts) -> str | None:
    """One render taken from the crawl-wide budget (limits.py RenderBudget), kept by the
    store for every worker together: why not (None: taken). No budget: nothing to take."""
    if not parts.render_policy.crawl.active or parts.render_counts is None:
        return None
    refusal, pages, seconds = parts.render_counts.reserve_render()
    parts.renders = CrawlRenders(pages, seconds)
    return refusal


def _host_after(
    parts: VisitParts,
    renders: HostRenders,
    seconds: float,
    plain: PageSignals,
    rendered: PageSignals,
) -> HostRenders:
    """The host's renders after this one; its browser seconds counted crawl-wide too."""
    totals = parts.renders
    parts.renders = CrawlRenders(totals.pages, totals.seconds + seconds)
    if parts.render_policy.crawl.active and parts.render_counts is not None:
        parts.render_counts.spend_render(seconds)
    return after_render(parts.render_policy, renders, seconds, plain, rendered)


def _archive_dom(
    parts: VisitParts, lease: Lease, result: RenderResult, refers_to: str | None
) -> None:
    """The rendered DOM as a conversion record of the page's response."""
    html = result.html.encode("utf-8")
    parts.warc.append_member(parts.warc.builder.conversion(lease.url, html, parts.now(), refers_to))


def _with_render(
    completion: Completion,
    render: tuple[HostRenders, dict[str, int]],
    requests: RenderRequests,
) -> Completion:
    """The host's render note, its next start after the render's last request, and the
    render's counters."""
    host, counters = render
    notes = {**completion.notes, RENDER_NOTE: host_note(host)}
    counted = {
        **counters,
        "render.requests": requests.sent,
        "render.bytes": requests.bytes,
    }
    done = dataclasses.replace(
        completion,
        notes=notes,
        next_allowed_at=max(completion.next_allowed_at or 0.0, requests.free_at),
    )
    return _counted(done, counted)


def _counted(completion: Completion, counters: dict[str, int]) -> Completion:
    merged = dict(completion.counters)
    for name, n in counters.items():
        if n:
            merged[name] = merged.get(name, 0) + n
    return dataclasses.replace(completion, counters=merged)
