"""A page completion's plan: every decision the engines apply with it, made here once. Pure.

From the lease, its completion, the host's notes read for the lease (crawl/host_rules.py) and the
clock, ``plan_completion`` decides the per-day page count (frontier/budgets.py day_budget), the
keyed budgets the page's links are admitted under, what its links are worth as in-links
(frontier/priority.py), the content verdict and the duplicate penalty (frontier/duplicates.py),
the host's discovery window with its trap penalty (frontier/budgets.py advance_window) and the
page's index feed record (frontier/feed.py). The engines apply the plan (plans.py says how); the
steps that need what only the engine's atomic operation learns are the plan's continuations,
``judge``, ``after_links`` and ``feed_entry``, still decided here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from crawlspace.frontier.budgets import (
    WINDOW_NOTE,
    DiscoveryWindow,
    KeyedBudget,
    advance_window,
    day_budget,
    decode_window,
    encode_window,
)
from crawlspace.frontier.duplicates import classify, duplicate_penalty
from crawlspace.frontier.feed import FeedSource, feed_entry
from crawlspace.plans import (
    CompletionPlan,
    ContentIndex,
    ContentVerdict,
    DayCount,
    FeedEntry,
    InlinkStep,
    Judgement,
    LinkEffects,
)
from crawlspace.records import Completion, FetchRecord, Lease

__all__ = ["CompletionPolicy", "PagePlan", "plan_completion"]

_NOT_JUDGED = Judgement()
_NO_EFFECTS = LinkEffects()


@dataclass(frozen=True, slots=True)
class CompletionPolicy:
    """The crawl's settings for what a page's completion decides (crawl/setup.py builds it)."""

    budgets: tuple[KeyedBudget, ...] = ()
    max_pages_per_host_per_day: int | None = None
    # In-link points (frontier/priority.py; off under AOPIC, whose cash plays that part).
    inlink_weight: int = 1
    inlink_cap: int = 10
    # The discovery-ratio window (frontier/budgets.py; 0 turns it off) and the priority points
    # a flagged host's new URLs sink.
    discovery_window: int = 20
    discovery_trap_ratio: float = 1.0
    trap_priority_penalty: int = 100
    # The index feed (frontier/feed.py).
    feed: bool = True


@dataclass(frozen=True, slots=True)
class PagePlan:
    """One completion's decisions (implements plans.py CompletionPlan)."""

    day: DayCount | None
    caps: Sequence[tuple[str, int]]
    budgets: tuple[KeyedBudget, ...]
    inlinks: InlinkStep | None
    # The page whose content is judged (None: not judged), and whether this is its URL's
    # first visit (a revisit is only checked for exact duplicates).
    content: FetchRecord | None
    first_visit: bool
    # The host's discovery window before this page (None: the page is not counted in it).
    window: DiscoveryWindow | None
    policy: CompletionPolicy
    # What the page's feed record is made of (None: it has none): the lease and completion
    # themselves, so not compared (a lease's id and URL id are the engine's).
    feed: FeedSource | None = field(default=None, compare=False)

    def budget_keys(self, url: str) -> Sequence[str]:
        return tuple(budget.key_of(url) for budget in self.budgets)

    def judge(self, content: ContentIndex, owner: int, duplicates: int, fetched: int) -> Judgement:
        if self.content is None:
            return _NOT_JUDGED
        verdict = classify(content, self.content, owner, first_visit=self.first_visit)
        # This page counts among its host's pages, and among its duplicates if it is one.
        sink = duplicate_penalty(duplicates + int(verdict.duplicate), fetched + 1)
        return Judgement(verdict, sink)

    def after_links(self, found: int, *, duplicate: bool = False) -> LinkEffects:
        """A fetched page advances its host's discovery window, wasted when it was an error
        or a duplicate (frontier/allowance.py); a host flagged as a likely trap sinks this
        page's new links on it."""
        if self.window is None:
            return _NO_EFFECTS
        policy = self.policy
        error = self.content is not None and self.content.status >= 400
        state = advance_window(
            self.window,
            found,
            window=policy.discovery_window,
            min_ratio=policy.discovery_trap_ratio,
            wasted=duplicate or error,
        )
        sink = policy.trap_priority_penalty if state.flagged else 0
        return LinkEffects({WINDOW_NOTE: encode_window(state)}, sink)

    def feed_entry(self, verdict: ContentVerdict) -> FeedEntry | None:
        return None if self.feed is None else feed_entry(self.feed, verdict)


def plan_completion(
    lease: Lease,
    completion: Completion,
    notes: Mapping[str, str],
    policy: CompletionPolicy,
    now: float,
) -> CompletionPlan:
    """The decisions ``completion`` of ``lease`` takes to the store, given the host's notes
    read for the lease (``WINDOW_NOTE`` among them) and the time of the commit."""
    fetch = completion.fetch
    terminal = completion.state != "queued"  # a retried attempt: no page, only its links
    day = None
    cap = policy.max_pages_per_host_per_day
    if cap and terminal and fetch is not None:
        today, tomorrow = day_budget(now)
        day = DayCount(today, cap, tomorrow)
    judged = fetch if terminal and completion.state != "not_modified" else None
    counted = fetch is not None and completion.state == "fetched" and policy.discovery_window
    step = None
    if terminal and policy.inlink_weight and policy.inlink_cap:
        step = InlinkStep(policy.inlink_weight, policy.inlink_cap)
    return PagePlan(
        day=day,
        caps=tuple((budget.reason, budget.cap) for budget in policy.budgets),
        budgets=policy.budgets,
        inlinks=step,
        content=judged,
        first_visit=lease.version == 1,
        window=decode_window(notes.get(WINDOW_NOTE)) if counted else None,
        policy=policy,
        feed=FeedSource(lease, completion, now) if policy.feed and terminal else None,
    )
