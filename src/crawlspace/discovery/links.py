"""The entry to the frontier: raw links in, normalized candidates and counted rejections out. Pure.

Every URL that reaches the store passes here (seeds, links, redirect targets, sitemap entries), so
normalization, scope, depth, length and user filters are applied exactly once and the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

from crawlspace.discovery.policy_normalize import UrlPolicy
from crawlspace.discovery.scope import Scope
from crawlspace.frontier.budgets import TrapRules, trap_reason
from crawlspace.frontier.priority import PriorityRules, url_priority
from crawlspace.pickling import by_fields
from crawlspace.records import LinkRecord, UrlCandidate
from crawlspace.urls import host_key, normalize_with_reason

# A URL filter answers None to keep a URL or a short reason slug to drop it (counted by reason).
UrlFilter = Callable[[str], str | None]


@dataclass(frozen=True, slots=True)
class EntryRules:
    max_depth: int = 10
    max_url_length: int = 2048
    follow_nofollow: bool = False
    # Applied after safe normalization (discovery/policy_normalize.py).
    policy: UrlPolicy = field(default_factory=UrlPolicy)
    # Stateless crawler-trap checks (frontier/budgets.py): path repeats, query size, exclusions.
    traps: TrapRules = field(default_factory=TrapRules)
    # Pattern points and the priority policy (frontier/priority.py).
    priority: PriorityRules = field(default_factory=PriorityRules)
    # Page requisites admitted per page, at most (page_requisites; past it: requisite_budget).
    max_requisites_per_page: int = 100


@by_fields
@dataclass(slots=True)
class Admission:
    """What one page's links turned into."""

    candidates: list[UrlCandidate] = field(default_factory=list)
    excluded: list[tuple[str, str]] = field(default_factory=list)
    links: list[LinkRecord] = field(default_factory=list)
    rejections: Counter[str] = field(default_factory=Counter)
    # dedup.links_* counters: how many duplicates normalization removed (see admit_links).
    counters: Counter[str] = field(default_factory=Counter)


@by_fields
@dataclass(frozen=True, slots=True)
class PreLinks:
    """A page's links after the per-href half of admission, which needs nothing but the page
    (so it runs in the parse worker): each distinct safe-normalized URL once, in document
    order, as (URL, occurrences, every occurrence nofollow); refusals counted by reason; and,
    when asked for, each URL's distinct anchor texts (the index feed's outlinks)."""

    urls: list[tuple[str, int, bool]]
    total: int  # hrefs that normalized
    distinct_raw: int  # distinct hrefs as written, among those
    invalid: dict[str, int]
    anchors: list[list[str]] | None = None  # parallel to ``urls``

    def without_anchors(self) -> PreLinks:
        """This, without the anchor texts (what admission needs, to travel back)."""
        return PreLinks(self.urls, self.total, self.distinct_raw, self.invalid)


# A link's anchor texts kept for the feed: menus repeat a URL under the same few labels.
MAX_ANCHORS_PER_URL = 4


def prenormalize(
    links: Iterable[tuple[str, bool]], base_url: str, anchors: Sequence[str] | None = None
) -> PreLinks:
    """Real pages repeat links (menus, "#section" anchors: ~800 hrefs per page in the Python
    docs, ~100 distinct), so each distinct href is normalized once. ``anchors``, parallel to
    ``links``, gives each URL its distinct non-empty anchor texts."""
    by_href: dict[str, tuple[str | None, str | None]] = {}
    found: dict[str, tuple[int, bool]] = {}
    labels: dict[str, list[str]] | None = None if anchors is None else {}
    invalid: Counter[str] = Counter()
    raw_seen: set[str] = set()
    total = 0
    for index, (href, nofollow) in enumerate(links):
        # The fragment never reaches the server: hrefs differing only there are one URL.
        key = href.partition("#")[0]
        normalized = by_href.get(key)
        if normalized is None:
            normalized = by_href[key] = normalize_with_reason(key, base_url)
        safe, reason = normalized
        if safe is None:
            invalid[reason or "invalid_url"] += 1
            continue
        total += 1
        raw_seen.add(href)
        previous = found.get(safe)
        found[safe] = (
            (1, nofollow) if previous is None else (previous[0] + 1, previous[1] and nofollow)
        )
        if labels is not None and (label := anchors[index]):  # type: ignore[index]
            texts = labels.get(safe)
            if texts is None:
                labels[safe] = [label]
            elif len(texts) < MAX_ANCHORS_PER_URL and label not in texts:
                texts.append(label)
    return PreLinks(
        [(url, n, nofollow) for url, (n, nofollow) in found.items()],
        total,
        len(raw_seen),
        dict(invalid),
        None if labels is None else [labels.get(url, []) for url in found],
    )


# The source of a URL a page embeds (page_requisites).
REQUISITE: Final = "requisite"


def parent_directories(url: str) -> list[str]:
    """``http://h/a/b/page.html?q`` -> ``http://h/a/b/``, ``http://h/a/``, ``http://h/``."""
    parts = urlsplit(url)
    path = parts.path[:-1] if parts.path.endswith("/") else parts.path
    out = []
    while "/" in path:
        path = path[: path.rfind("/")]
        out.append(f"{parts.scheme}://{parts.netloc}{path}/")
    return out


class Discovery:
    def __init__(self, rules: EntryRules, scope: Scope, filters: Sequence[UrlFilter] = ()) -> None:
        self.rules = rules
        self.scope = scope
        self.filters = list(filters)

    def priority(
        self,
        url: str,
        depth: int,
        sitemap_priority: float | None = None,
        lastmod_age: float | None = None,
    ) -> int:
        """The score-policy priority of an admitted URL (frontier/priority.py)."""
        points = 0
        if self.rules.priority.patterns:
            parts = urlsplit(url)
            path_qs = parts.path + ("?" + parts.query if parts.query else "")
            points = self.rules.priority.pattern_points(parts.hostname or "", path_qs)
        return url_priority(depth, sitemap_priority, pattern_points=points, lastmod_age=lastmod_age)

    def admit_one(
        self, url: str, *, depth: int, source: str, redirect_hops: int = 0, base: str | None = None
    ) -> tuple[UrlCandidate | None, str | None]:
        """Normalize and check one URL; returns (candidate, None) or (None, reason)."""
        normalized, reason = normalize_with_reason(url, base)
        if normalized is None:
            return None, reason or "invalid_url"
        return self._admit_normalized(normalized, depth, source, redirect_hops)

    def _admit_normalized(
        self, safe: str, depth: int, source: str, redirect_hops: int
    ) -> tuple[UrlCandidate | None, str | None]:
        normalized = self.rules.policy.apply(safe)
        if len(normalized) > self.rules.max_url_length:
            return None, "url_length"
        reason = self.scope.reason(normalized)
        if reason is None and depth > self.rules.max_depth:
            reason = "depth"
        if reason is None:
            reason = trap_reason(normalized, self.rules.traps, seed=source == "seed")
        if reason is None:
            for url_filter in self.filters:
                reason = url_filter(normalized)
                if reason is not None:
                    break
        if reason is not None:
            return UrlCandidate(normalized, host_key(normalized), depth, source=source), reason
        return (
            UrlCandidate(
                normalized,
                host_key(normalized),
                depth,
                priority=self.priority(normalized, depth),
                redirect_hops=redirect_hops,
                source=source,
            ),
            None,
        )

    def admit_ascending(self, url: str, *, parent_depth: int, into: Admission) -> None:
        """Path-ascending discovery (Cho, Garcia-Molina & Page 1998 call it "path-ascending
        crawling"): the directories above a fetched URL, which often list pages no link points
        to. They join ``into`` as candidates (source "ascend") unless already there."""
        have = {c.url for c in into.candidates}
        for parent in parent_directories(url):
            candidate, reason = self.admit_one(parent, depth=parent_depth + 1, source="ascend")
            if candidate is None or reason is not None:
                into.rejections[reason or "invalid_url"] += 1
            elif candidate.url not in have:
                have.add(candidate.url)
                into.candidates.append(candidate)

    def admit_requisites(self, pre: PreLinks, *, parent_depth: int, into: Admission) -> None:
        """What a page embeds (page_requisites) joins ``into`` as candidates of source
        "requisite" at the page's own depth (an embed is part of its page, not a step away
        from it; wget and Heritrix count them so too), each checked like any URL (policy,
        scope, traps, filters; robots.txt and the address guard when fetched). A page's
        nofollow does not apply: it is about links. At most ``max_requisites_per_page``."""
        have = {c.url for c in into.candidates}
        cap = self.rules.max_requisites_per_page
        into.rejections.update(pre.invalid)
        admitted = 0
        for safe, occurrences, _ in pre.urls:
            candidate, reason = self._admit_normalized(safe, parent_depth, REQUISITE, 0)
            if candidate is not None and reason is None and admitted >= cap:
                reason = "requisite_budget"
            if candidate is None or reason is not None:
                into.rejections[reason or "invalid_url"] += occurrences
                if candidate is not None and reason is not None:
                    into.excluded.append((candidate.url, reason))
                continue
            admitted += 1
            if candidate.url not in have:
                have.add(candidate.url)
                into.candidates.append(candidate)

    def admit_links(
        self,
        links: Iterable[tuple[str, bool]],
        *,
        base_url: str,
        parent_depth: int,
        page_nofollow: bool,
    ) -> Admission:
        """``links`` are (raw href, nofollow) pairs in document order."""
        return self.admit_prenormalized(
            prenormalize(links, base_url), parent_depth=parent_depth, page_nofollow=page_nofollow
        )

    def admit_prenormalized(
        self, pre: PreLinks, *, parent_depth: int, page_nofollow: bool
    ) -> Admission:
        """The per-URL half of admission (policy, scope, depth, traps, filters) over a page's
        distinct safe-normalized URLs; a URL is followed if any of its occurrences may be."""
        out = Admission()
        out.rejections.update(pre.invalid)
        # candidate URL -> (candidate, exclusion reason, every occurrence nofollow), in order
        found: dict[str, tuple[UrlCandidate, str | None, bool]] = {}
        depth = parent_depth + 1
        for safe, occurrences, all_nofollow in pre.urls:
            candidate, reason = self._admit_normalized(safe, depth, "link", 0)
            if candidate is None:
                out.rejections[reason or "invalid_url"] += occurrences
                continue
            marked = all_nofollow or page_nofollow
            previous = found.get(candidate.url)
            if previous is None or (previous[2] and not marked):
                found[candidate.url] = (candidate, reason, marked)
        for candidate, reason, marked in found.values():
            out.links.append(LinkRecord(candidate.url, marked))
            if marked and not self.rules.follow_nofollow:
                out.rejections["nofollow"] += 1
            elif reason is not None:
                out.rejections[reason] += 1
                out.excluded.append((candidate.url, reason))
            else:
                out.candidates.append(candidate)
        # Duplicate rate before/after normalization, summed over pages: 1 - distinct / total,
        # distinct counted per page on the href as written, after RFC 3986 safe normalization,
        # and after the policy (tracking parameters, sorting, folding).
        out.counters["dedup.links_total"] = pre.total
        out.counters["dedup.links_distinct_raw"] = pre.distinct_raw
        out.counters["dedup.links_distinct_normalized"] = len(pre.urls)
        out.counters["dedup.links_distinct_policy"] = len(found)
        return out
