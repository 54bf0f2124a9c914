"""Crawler-trap defenses that need no state: pure checks on one normalized URL, the keyed budgets
whose counters a store keeps per host (URLs per URL template), the per-day page budget's
calendar, and the per-host discovery-ratio window.

Some URL spaces are infinite (calendars, session ids, faceted search, servers that answer any
path); only budgets stop a crawler inside them (Heydon & Najork, "Mercator", 1999, §3.5; Olston &
Najork, "Web Crawling", 2010, §6). Each rejection has a reason slug that is counted in
``counters`` (``rejected.<reason>``) like every other admission refusal.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from crawlspace.frontier.revisit import DAY
from crawlspace.urls import normalize

__all__ = [
    "DAY",
    "WINDOW_NOTE",
    "DiscoveryWindow",
    "ExcludeRule",
    "KeyedBudget",
    "TrapRules",
    "advance_window",
    "compile_excludes",
    "day_budget",
    "decode_window",
    "encode_window",
    "keyed_budgets",
    "max_segment_repeats",
    "parent_patterns",
    "trap_reason",
    "url_template",
]

# Longest run of path segments looked for when detecting /a/b/c/a/b/c repetition.
MAX_REPEAT_UNIT = 4


@dataclass(frozen=True, slots=True)
class ExcludeRule:
    """``[HOST_GLOB ]PATTERN``: PATTERN is a glob over path+query, or a regex after ``re:``
    (searched, not anchored); HOST_GLOB (default every host) is matched on the hostname."""

    host: str
    pattern: re.Pattern[str]
    text: str

    def matches(self, hostname: str, path_qs: str) -> bool:
        return fnmatch.fnmatchcase(hostname, self.host) and bool(self.pattern.search(path_qs))


def compile_excludes(
    patterns: tuple[str, ...], setting: str = "exclude"
) -> tuple[ExcludeRule, ...]:
    rules = []
    for text in patterns:
        parts = text.split(None, 1)
        host, pattern = ("*", parts[0]) if len(parts) == 1 else (parts[0].lower(), parts[1])
        if pattern.startswith("re:"):
            try:
                compiled = re.compile(pattern[3:])
            except re.error as exc:
                raise ValueError(f"{setting} {text!r}: bad regular expression ({exc})") from None
        else:
            compiled = re.compile(fnmatch.translate(pattern))
        rules.append(ExcludeRule(host, compiled, text))
    return tuple(rules)


@dataclass(frozen=True, slots=True)
class TrapRules:
    # A run of path segments repeated consecutively more than this many times (/a/b/a/b/a/b is
    # "a/b" three times) is a relative-link loop. 0 turns the check off.
    max_path_repeats: int = 2
    # More query parameters than this is combinatorial faceted navigation. 0: off.
    max_query_params: int = 10
    exclude: tuple[ExcludeRule, ...] = ()
    # When given, a discovered URL must match one of these (same syntax), or it is refused as
    # not_included; seeds are always admitted.
    include: tuple[ExcludeRule, ...] = ()


def max_segment_repeats(segments: list[str], max_unit: int = MAX_REPEAT_UNIT) -> int:
    """The largest number of consecutive repetitions of any run of 1..max_unit segments."""
    best = 1
    n = len(segments)
    for unit in range(1, min(max_unit, n // 2) + 1):
        for start in range(n - unit):
            count = 1
            pos = start + unit
            while pos + unit <= n and segments[pos : pos + unit] == segments[start : start + unit]:
                count += 1
                pos += unit
            best = max(best, count)
    return best


def parent_patterns(urls: Iterable[str]) -> tuple[str, ...]:
    """``include`` patterns that keep a crawl below its seeds' directories (wget's
    --no-parent): ``http://h/docs/guide/`` and ``http://h/docs/guide/a.html`` give every URL of
    host h under /docs/guide/."""
    patterns = []
    for url in urls:
        parts = urlsplit(normalize(url) or url)  # as admission compares them: normalized
        directory = parts.path[: parts.path.rfind("/") + 1] or "/"
        patterns.append(f"{parts.hostname or '*'} re:^{re.escape(directory)}")
    return tuple(dict.fromkeys(patterns))


def trap_reason(url: str, rules: TrapRules, *, seed: bool = False) -> str | None:
    """None to keep ``url``, else the reason slug it is dropped for (``seed``: a seed, which
    the include patterns do not restrict)."""
    parts = urlsplit(url)
    if rules.exclude or (rules.include and not seed):
        path_qs = parts.path + ("?" + parts.query if parts.query else "")
        hostname = parts.hostname or ""
        if any(rule.matches(hostname, path_qs) for rule in rules.exclude):
            return "excluded_pattern"
        included = not rules.include or seed
        if not included and not any(rule.matches(hostname, path_qs) for rule in rules.include):
            return "not_included"
    if rules.max_query_params and _query_params(parts.query) > rules.max_query_params:
        return "query_params"
    if rules.max_path_repeats:
        segments = [s for s in parts.path.split("/") if s]
        if len(segments) > rules.max_path_repeats and (
            max_segment_repeats(segments) > rules.max_path_repeats
        ):
            return "path_repeat"
    return None


_PARAM_SEPARATORS = re.compile(r"[&;]")


def _query_params(query: str) -> int:
    """Parameters in a query: pairs split on "&" or ";" (HTML 4's alternative separator, which
    would otherwise hide an explosion), empty pairs ("a=1&&&") not counted."""
    if not query:
        return 0
    return sum(1 for pair in _PARAM_SEPARATORS.split(query) if pair)


_DIGITS = re.compile(r"\d+")
# Opaque tokens (session ids, hashes): long runs of letters and digits mixed.
_TOKEN = re.compile(r"^(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{12,}$")


def _segment_template(segment: str) -> str:
    if _TOKEN.match(segment):
        return "{id}"
    return _DIGITS.sub("{n}", segment)


def url_template(url: str) -> str:
    """The URL with its variable parts abstracted: digit runs and opaque tokens in the path, and
    every query value (parameter names kept, sorted). URLs that differ only there share a key:
    ``/cal/2031/07?view=week`` and ``/cal/1999/12?view=day`` are both ``/cal/{n}/{n}?view=``."""
    parts = urlsplit(url)
    path = "/".join(_segment_template(s) for s in parts.path.split("/"))
    names = sorted({p.split("=", 1)[0] for p in parts.query.split("&") if p}) if parts.query else []
    query = "&".join(f"{name}=" for name in names)
    return f"{path}?{query}" if query else path


@dataclass(frozen=True, slots=True)
class KeyedBudget:
    """At most ``cap`` URLs admitted per host and key ``key_of(url)``; a URL whose counter is
    full is excluded with ``reason``. The policy is the key function and the cap; every store
    (memory, SQLite, Redis) only keeps one counter per (host, key) and compares it with the cap
    atomically with the seen test, so the budget means the same on every engine. A counter
    moves only when its URL is admitted. Keys of different budgets share the host's counters,
    so they must not collide (URL templates start with "/")."""

    reason: str
    cap: int
    key_of: Callable[[str], str]


def keyed_budgets(max_urls_per_template: int | None) -> tuple[KeyedBudget, ...]:
    """The keyed budgets a crawl applies to the links its pages discover."""
    if not max_urls_per_template:
        return ()
    return (KeyedBudget("budget_template", max_urls_per_template, url_template),)


def day_budget(now: float) -> tuple[int, float]:
    """The per-day page budget counts pages per UTC day: (today's number, when the next day
    starts, which is how long a host whose budget is spent waits)."""
    day = int(now // DAY)
    return day, (day + 1) * DAY


@dataclass(frozen=True, slots=True)
class DiscoveryWindow:
    """A host's discovery ratio (new URLs admitted per page fetched) over tumbling windows of
    ``window`` pages. A finite site's ratio trends to 0 as its pages are found; a trap keeps
    inventing URLs, so its ratio does not fall from one window to the next."""

    pages: int = 0  # pages fetched in the current window
    new_urls: int = 0  # URLs first admitted from them
    last_ratio: float | None = None  # the previous complete window's ratio
    flagged: bool = False
    # Of those pages, the wasted ones (an error status, or a duplicate's content), and the
    # previous complete window's share of them: the host's allowance (frontier/allowance.py).
    wasted: int = 0
    last_waste: float | None = None


# The host note that keeps a host's discovery window (crawl/host_rules.py reads it with the
# host's other notes; the engines write it with the page's completion).
WINDOW_NOTE = "discovery"


def encode_window(state: DiscoveryWindow) -> str:
    """The window as its host note: "PAGES NEW_URLS LAST_RATIO FLAGGED WASTED LAST_WASTE"
    ("-": no complete window yet)."""
    ratio = "-" if state.last_ratio is None else repr(state.last_ratio)
    waste = "-" if state.last_waste is None else repr(state.last_waste)
    flagged = int(state.flagged)
    return f"{state.pages} {state.new_urls} {ratio} {flagged} {state.wasted} {waste}"


def decode_window(text: str | None) -> DiscoveryWindow:
    """A host's window from its note; a missing or unreadable note is an empty window (a note
    written before the waste was counted has four fields)."""
    if not text:
        return DiscoveryWindow()
    try:
        pages, new, ratio, flagged, *rest = text.split()
        wasted, waste = rest if rest else ("0", "-")
        return DiscoveryWindow(
            int(pages),
            int(new),
            None if ratio == "-" else float(ratio),
            flagged == "1",
            int(wasted),
            None if waste == "-" else float(waste),
        )
    except ValueError:
        return DiscoveryWindow()


def advance_window(
    state: DiscoveryWindow,
    new_urls: int,
    *,
    window: int,
    min_ratio: float,
    wasted: bool = False,
) -> DiscoveryWindow:
    """Account one fetched page that admitted ``new_urls`` (``wasted``: an error or a
    duplicate). At each window's end the host is flagged when its ratio is at least
    ``min_ratio`` and did not fall below 90% of the previous window's (unflagged otherwise, so
    a host that calms down recovers), and its wasted share is kept."""
    pages, found, waste = state.pages + 1, state.new_urls + new_urls, state.wasted + int(wasted)
    if pages < window:
        return DiscoveryWindow(
            pages, found, state.last_ratio, state.flagged, waste, state.last_waste
        )
    ratio = found / pages
    flagged = (
        state.last_ratio is not None and ratio >= min_ratio and ratio >= 0.9 * state.last_ratio
    )
    return DiscoveryWindow(0, 0, ratio, flagged, 0, waste / pages)
