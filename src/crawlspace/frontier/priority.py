"""The frontier priority of a URL (lower is leased first within its host). Pure.

Two policies, chosen with ``priority_policy``:

``score`` (the default) is a small sum of points computed at enqueue, 10 points = one link depth:

    priority = 10 * depth                      breadth first
             + round(10 * (1 - p))             p: sitemap <priority>, 0.5 for a plain link
             - pattern points                  priority_patterns, e.g. "20 /product/*"
             - lastmod points                  a sitemap lastmod within FRESH_LASTMOD_DAYS
             - in-link points                  +weight per further page linking to it, capped
             + host demotions                  duplicates (store/sqlite_dedup), traps (sqlite_traps)

  The in-link term is applied as links arrive (a completion's plan: plans.py InlinkStep); the others
  when the URL is admitted. Without patterns, in-links and demotions, a shallower URL is never
  behind a deeper one (the sitemap term spans 0..10 and a tie goes to the URL found first), and
  sitemaps.org's "priority is relative within one site" is exactly the scope of a host queue.

``aopic`` orders each host's queue by cash (frontier/aopic.py, Abiteboul et al. 2003).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, get_args

from crawlspace.frontier.budgets import ExcludeRule, compile_excludes

__all__ = [
    "DEFAULT_SITEMAP_PRIORITY",
    "PatternBonus",
    "PriorityPolicy",
    "PriorityRules",
    "compile_priority_patterns",
    "lastmod_age_days",
    "url_priority",
]

DEFAULT_SITEMAP_PRIORITY = 0.5  # sitemaps.org: "The default priority of a page is 0.5."
DEPTH_WEIGHT = 10
# A sitemap entry whose <lastmod> is this recent is fetched a half depth level earlier: a page
# its site says changed lately is more likely to be new to the index.
FRESH_LASTMOD_DAYS = 7.0
FRESH_LASTMOD_POINTS = 5

PriorityPolicy = Literal["score", "aopic"]


@dataclass(frozen=True, slots=True)
class PatternBonus:
    """``POINTS [HOST_GLOB ]PATTERN``: URLs matching PATTERN (a glob over path+query, or a regex
    after ``re:``, as for ``exclude``) gain POINTS (negative POINTS push them back)."""

    points: int
    rule: ExcludeRule


def compile_priority_patterns(texts: tuple[str, ...]) -> tuple[PatternBonus, ...]:
    out = []
    for text in texts:
        parts = text.split(None, 1)
        try:
            points = int(parts[0])
        except (ValueError, IndexError):
            raise ValueError(
                f"priority pattern {text!r}: expected 'POINTS [HOST_GLOB ]PATTERN', "
                "e.g. '20 /product/*'"
            ) from None
        if len(parts) < 2:
            raise ValueError(f"priority pattern {text!r}: a pattern must follow the points")
        (rule,) = compile_excludes((parts[1],))
        out.append(PatternBonus(points, rule))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class PriorityRules:
    policy: PriorityPolicy = "score"
    patterns: tuple[PatternBonus, ...] = ()
    # Points per page linking to a queued URL beyond the first, up to inlink_cap pages (the
    # default cap is one depth level, so links reorder a level but never jump two).
    inlink_weight: int = 1
    inlink_cap: int = 10
    # AOPIC: the share of a fetched page's cash that goes to the virtual Lambda page.
    aopic_tax: float = 0.1

    def __post_init__(self) -> None:
        if self.policy not in get_args(PriorityPolicy):
            raise ValueError(f"priority_policy must be score or aopic (got {self.policy!r})")
        if self.inlink_weight < 0 or self.inlink_cap < 0:
            raise ValueError("inlink_weight and inlink_cap must be >= 0")
        if not 0.0 < self.aopic_tax < 1.0:
            raise ValueError(f"aopic_tax must be in (0, 1) (got {self.aopic_tax})")

    def pattern_points(self, hostname: str, path_qs: str) -> int:
        return sum(p.points for p in self.patterns if p.rule.matches(hostname, path_qs))


def lastmod_age_days(lastmod: str | None, now: float) -> float | None:
    """Days since a sitemap ``<lastmod>`` (W3C datetime; a date alone is midnight UTC)."""
    if not lastmod:
        return None
    text = lastmod.strip().replace("Z", "+00:00")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (now - when.timestamp()) / 86400.0


def url_priority(
    depth: int,
    sitemap_priority: float | None = None,
    *,
    pattern_points: int = 0,
    lastmod_age: float | None = None,
) -> int:
    p = DEFAULT_SITEMAP_PRIORITY if sitemap_priority is None else sitemap_priority
    p = 0.0 if math.isnan(p) else min(max(p, 0.0), 1.0)
    priority = DEPTH_WEIGHT * depth + round(DEPTH_WEIGHT * (1.0 - p)) - pattern_points
    if lastmod_age is not None and lastmod_age <= FRESH_LASTMOD_DAYS:
        priority -= FRESH_LASTMOD_POINTS
    # Negative priorities are the revisit band of a host queue (store/sqlite/revisit.py).
    return max(priority, 0)
