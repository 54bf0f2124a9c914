"""Sitemaps as a URL source: declared sitemap URLs and fetched sitemaps in, candidates out.

Everything goes through :meth:`Discovery.admit_one`, so sitemap URLs get the same normalization,
scope, depth, length and filter checks as links, and the store's seen set deduplicates them.

Sources and depths:

* a sitemap document (named in robots.txt, given with ``--sitemap``, or listed in a sitemap
  index) has source ``"sitemap"``; those from robots.txt and ``--sitemap`` are at depth 0, each
  index level adds 1, and a child deeper than ``max_sitemap_depth`` is refused
  (``sitemap_depth``). sitemaps.org forbids nesting indexes; the limit also stops loops;
* a page listed in a ``<urlset>`` (or a text sitemap) has source ``"sitemap_entry"`` and the
  sitemap's own depth: the site declares it as part of its inventory, so it counts like a seed,
  which is how an orphan page no link reaches gets crawled. Its ``lastmod``, ``changefreq`` and
  ``priority`` travel with it into ``urls``, and the priority orders it (frontier/priority.py).
  A ``lastmod`` later than a known URL's last visit makes it due again now
  (frontier/revisit.py ``stale_before``; a crawl revisits with ``--continuous``).

sitemaps.org also says a sitemap should only list URLs under its own directory; real sites
(and Google) ignore that, so the crawl scope is the only host check here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from crawlspace.discovery.links import Admission, Discovery
from crawlspace.frontier.priority import lastmod_age_days, url_priority
from crawlspace.frontier.revisit import stale_before
from crawlspace.parse.sitemap import Sitemap, SitemapError, parse_sitemap
from crawlspace.records import LinkRecord, UrlCandidate

__all__ = [
    "SITEMAP_ENTRY_SOURCE",
    "SITEMAP_SOURCE",
    "admit_declared_sitemaps",
    "admit_parsed_sitemap",
    "admit_sitemap_doc",
    "is_sitemap_response",
    "read_sitemap",
]

log = logging.getLogger("crawlspace.sitemaps")

SITEMAP_SOURCE = "sitemap"
SITEMAP_ENTRY_SOURCE = "sitemap_entry"
# A sitemap document is leased before the pages of its host at the same depth; the documents
# an index lists move back one point each, so a long index is interleaved with the host's
# pages instead of going before all of them (issue #31).
_SITEMAP_DOC_PRIORITY = 1.0


def admit_sitemap_doc(
    discovery: Discovery,
    url: str,
    depth: int,
    base: str | None,
    *,
    redirect_hops: int = 0,
    position: int = 0,
) -> tuple[UrlCandidate | None, str | None]:
    """A sitemap document's URL: read as a sitemap when fetched, leased early on its host
    (``position``: its place in the index that lists it, one priority point each). Also the
    target of a sitemap's redirect (http to https, say), which is still a sitemap."""
    candidate, reason = discovery.admit_one(
        url, depth=depth, source=SITEMAP_SOURCE, redirect_hops=redirect_hops, base=base
    )
    if candidate is not None and reason is None:
        priority = url_priority(depth, _SITEMAP_DOC_PRIORITY) + position
        candidate = candidate._replace(priority=priority)
    return candidate, reason


def admit_declared_sitemaps(discovery: Discovery, urls: Iterable[str]) -> Admission:
    """Sitemap URLs named by robots.txt Sitemap lines or ``--sitemap``: depth 0."""
    out = Admission()
    for url in urls:
        candidate, reason = admit_sitemap_doc(discovery, url.strip(), 0, None)
        if candidate is None or reason is not None:
            out.rejections[reason or "invalid_url"] += 1
            continue
        out.candidates.append(candidate)
    return out


def read_sitemap(body: bytes) -> Sitemap | SitemapError:
    """``parse_sitemap``, with a refusal as a value: what ``admit_parsed_sitemap`` takes (the
    crawl reads a sitemap on a parse thread, a 50 MiB one takes a while)."""
    try:
        return parse_sitemap(body)
    except SitemapError as exc:
        return exc


def admit_parsed_sitemap(
    discovery: Discovery,
    parsed: Sitemap | SitemapError,
    *,
    url: str,
    depth: int,
    max_sitemap_depth: int,
    cut_in_transfer: bool = False,
    now: float | None = None,
) -> tuple[Admission, str | None]:
    """Admit what a fetched sitemap lists (``read_sitemap``'s result); returns (admission,
    reason or None).

    The reason is ``"sitemap_invalid"`` when the body was refused (the admission is empty then).
    ``cut_in_transfer``: the fetch stopped at its byte limit (MAX_SITEMAP_BYTES on the wire).
    ``now`` dates ``<lastmod>`` for the priority's freshness points (None: no such points).
    """
    out = Admission()
    if cut_in_transfer:
        out.rejections["sitemap_truncated"] += 1
    if isinstance(parsed, SitemapError):
        log.warning("sitemap %s refused: %s", url, parsed)
        out.rejections["sitemap_invalid"] += 1
        return out, "sitemap_invalid"
    sitemap = parsed
    if sitemap.truncated and not cut_in_transfer:
        # sitemaps.org: 50,000 URLs and 50 MiB per file; the rest of the file is not read.
        log.warning("sitemap %s exceeds the protocol's limits, cut: %s", url, sitemap.warnings)
        out.rejections["sitemap_truncated"] += 1
    if sitemap.warnings["malformed"]:
        out.rejections["sitemap_malformed"] += 1
    _admit_entries(
        discovery,
        sitemap,
        out,
        url=url,
        depth=depth,
        max_sitemap_depth=max_sitemap_depth,
        now=now,
    )
    return out, None


def _admit_entries(
    discovery: Discovery,
    sitemap: Sitemap,
    out: Admission,
    *,
    url: str,
    depth: int,
    max_sitemap_depth: int,
    now: float | None,
) -> None:
    seen: set[str] = set()
    index = sitemap.kind == "sitemapindex"
    for entry in sitemap.entries:
        if index:
            child_depth = depth + 1
            candidate, reason = admit_sitemap_doc(
                discovery, entry.loc, child_depth, url, position=len(seen)
            )
            if reason is None and child_depth > max_sitemap_depth:
                reason = "sitemap_depth"
        else:
            candidate, reason = discovery.admit_one(
                entry.loc, depth=depth, source=SITEMAP_ENTRY_SOURCE, base=url
            )
        if candidate is None:
            out.rejections[reason or "invalid_url"] += 1
            continue
        if candidate.url in seen:
            continue
        seen.add(candidate.url)
        out.links.append(LinkRecord(candidate.url, False))
        if reason is not None:
            out.rejections[reason] += 1
            out.excluded.append((candidate.url, reason))
            continue
        if not index:
            age = None if now is None else lastmod_age_days(entry.lastmod, now)
            candidate = candidate._replace(
                priority=discovery.priority(candidate.url, depth, entry.priority, age),
                lastmod=entry.lastmod,
                changefreq=entry.changefreq,
                sitemap_priority=entry.priority,
                stale_before=None if now is None else stale_before(age, now),
            )
        out.candidates.append(candidate)


def is_sitemap_response(source: str, content_type: str | None) -> bool:
    """A response is read as a sitemap when its URL came from a sitemap source.

    The body decides the format (gzip magic, XML root, plain text), because servers label
    sitemaps as application/xml, text/xml, application/x-gzip, application/octet-stream or
    text/plain. Only an HTML answer is read as a page: an "HTML sitemap" is a page of links.
    """
    if source != SITEMAP_SOURCE:
        return False
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    return mime not in ("text/html", "application/xhtml+xml")
