"""Admission on the shared frontier: enqueue-if-new with its budgets and in-links
(lua/add.lua), and the links refused at admission remembered with their reasons
(lua/exclude.lua). A completion's plan gives each link's budget keys; the scripts only count
and compare."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from crawlspace.plans import CompletionPlan
from crawlspace.records import UrlCandidate
from crawlspace.store.base import AddResult, FrontierLimits
from crawlspace.store.redis.codec import ADD_CHUNK, num
from crawlspace.store.redis.index import BucketIndex
from crawlspace.urls import host_key

__all__ = ["Admission", "Admitting", "admit", "exclusion_calls"]


class Admission(NamedTuple):
    """What an admission did: its result, the ids and URLs it queued on the page's host, and
    the flat (id, cash) pairs of known URLs whose cash grew (AOPIC: to be priced,
    store/redis/cash.py)."""

    result: AddResult
    ids: list[str]
    urls: list[str]
    grown: list[object]


class Admitting(Protocol):
    """What admission uses of its frontier (store/redis/frontier.py): the limits, the scripts
    and the bucket index."""

    limits: FrontierLimits
    index: BucketIndex
    namespace: str
    client: Any

    def bucket(self, host_key: str) -> int: ...

    def fingerprint(self, url: str) -> bytes: ...

    def run_many(self, name: str, calls: Sequence[tuple[int, Sequence[object]]]) -> list[Any]: ...

    def run_mixed(self, calls: Sequence[tuple[str, int, Sequence[object]]]) -> list[Any]: ...


Calls = Sequence[tuple[int, Sequence[object]]]  # (bucket, a script's arguments) per call


def admit(
    frontier: Admitting,
    candidates: Sequence[UrlCandidate],
    now: float,
    plan: CompletionPlan,
    *,
    page_host: str | None = None,
    cash: tuple[float, float, int] | None = None,
    exclusions: Calls = (),
    via: int | None = None,
) -> Admission:
    """Enqueue-if-new with the per-host cap and the plan's keyed budgets (each candidate's keys
    are the plan's; the script only counts and compares). A fetched
    page's links (``page_host`` given) are its in-links too. Under AOPIC ``cash`` is
    (Lambda's per-page total, each candidate's cash, the priority that cash buys).
    ``exclusions`` (``exclusion_calls``) are written in the same round trip. ``via``: the
    URL id of the page whose completion admits them (records.py Lease.via_id)."""
    by_bucket: dict[int, list[object]] = {}
    caps = plan.caps
    priority = None if cash is None else cash[2]
    fingerprint = frontier.fingerprint
    for cand in candidates:
        fields = by_bucket.setdefault(frontier.bucket(cand.host_key), [])
        fields += (
            cand.url,
            cand.host_key,
            cand.depth,
            cand.priority if priority is None else priority,
            cand.redirect_hops,
            cand.source,
            cand.changefreq or "",
            fingerprint(cand.url),
            "" if cand.stale_before is None else num(cand.stale_before),
        )
        if caps:
            fields += plan.budget_keys(cand.url)
    # The scope of every worker starts from the seeds' hosts and ports (discovery/scope.py),
    # which their host keys carry: one entry per seed host, not per seed (a crawl seeded with
    # 200,000 URLs kept ~95 bytes per URL in this set).
    seeds = {cand.host_key for cand in candidates if cand.source == "seed"}
    if seeds and frontier.client.sadd(f"{frontier.namespace}:seeds", *seeds):
        # A new seed host: the other workers' scopes widen with it (crawl/scope_sharing.py).
        frontier.client.incr(f"{frontier.namespace}:seeds:rev")
    cap = frontier.limits.max_pages_per_host
    head = (num(now), -1 if cap is None else cap, frontier.limits.max_in_flight_per_host)
    inlinks = plan.inlinks
    weight, inlink_cap = (inlinks.points, inlinks.pages) if inlinks is not None else (0, 0)
    if page_host is None or not inlink_cap:
        weight = inlink_cap = 0
    aopic = ("", "") if cash is None else (repr(cash[0]), repr(cash[1]))
    page = page_host or ""
    link_times = int(frontier.limits.link_times)
    links = (weight, inlink_cap, page, *aopic, link_times, "" if via is None else via)
    budget_args = [arg for reason_cap in caps for arg in reason_cap]
    calls: list[tuple[int, Sequence[object]]] = []
    width = 9 + len(caps)
    for bucket, fields in by_bucket.items():
        step = width * ADD_CHUNK
        for i in range(0, len(fields), step):
            calls.append(
                (
                    bucket,
                    (
                        *head,
                        *links,
                        len(caps),
                        *budget_args,
                        *fields[i : i + step],
                    ),
                )
            )
    mixed = [("add", b, args) for b, args in calls]
    mixed += [("exclude", b, args) for b, args in exclusions]
    replies = frontier.run_mixed(mixed)[: len(calls)]
    added = seen = 0
    rejected: dict[str, int] = {}
    focus: list[str] = []
    grown: list[object] = []
    reasons = ["budget_host", *(reason for reason, _ in caps)]
    for reply in frontier.index.apply_replies((b for b, _ in calls), replies):
        added, seen = added + int(reply[0]), seen + int(reply[1])
        counts = reply[2 : 2 + len(reasons)]
        for reason, n in zip(reasons, counts, strict=True):
            if int(n):
                rejected[reason] = rejected.get(reason, 0) + int(n)
        start = 3 + len(reasons)
        end = start + int(reply[2 + len(reasons)])
        focus += [str(i) for i in reply[start:end]]
        grown += reply[end:]
    return Admission(AddResult(added, seen, rejected), focus[0::2], focus[1::2], grown)


def exclusion_calls(
    frontier: Admitting, excluded: Sequence[tuple[str, str]], depth: int, now: float
) -> Calls:
    """lua/exclude.lua's calls that remember ``excluded`` (URL, reason) at ``depth``."""
    by_bucket: dict[int, list[object]] = {}
    for url, reason in excluded:
        host = host_key(url)
        by_bucket.setdefault(frontier.bucket(host), []).extend(
            (url, host, depth, reason, frontier.fingerprint(url))
        )
    step = 5 * ADD_CHUNK
    return [
        (bucket, (num(now), *fields[i : i + step]))
        for bucket, fields in by_bucket.items()
        for i in range(0, len(fields), step)
    ]
