"""Which pages go to the rendering tier (issue #33), and when a host stops going there. Pure.

Plain HTTP fetching stays the first tier. A page enters the render queue only when parsing its
HTML came back (nearly) empty or shows an app shell, the site's policy allows it, and budgets
remain: a headless browser costs a hundred times a parse, and each page it renders is many
requests to its host. So:

* ``never`` (the default) renders nothing; ``always`` renders every HTML page of the hosts named
  in ``hosts`` (of every host when none is named); ``auto`` renders an HTML page whose parse
  found less than ``min_text_chars`` of visible text or fewer than ``min_links`` links, or an
  app shell (parse/app_shell.py: a ``<noscript>`` asking for JavaScript, or an empty root
  element next to scripts), on hosts not named in ``opted_out``;
* a host is rendered at most ``max_pages_per_host`` pages and ``max_seconds_per_host`` browser
  seconds, the crawl ``crawl.max_pages`` and ``crawl.max_seconds`` in all (limits.py
  RenderBudget, whose totals the store keeps for every worker; None: no such budget);
* a host whose renders add nothing (no text and no links beyond what its HTML had) in
  ``give_up_after`` renders in a row stops being rendered, and says why: rendering is for the
  hosts that need it.

A host's render state is one host note (``RENDER_NOTE``), written with the completion like every
host note, so the host's next lease on any worker reads it: ``"RENDERS SECONDS USELESS"`` and,
once the host stopped being rendered, the reason after them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from crawlspace.limits import RenderBudget

__all__ = [
    "RENDER_MODES",
    "RENDER_NOTE",
    "STOPPED",
    "CrawlRenders",
    "HostRenders",
    "PageSignals",
    "RenderDecision",
    "RenderMode",
    "RenderPolicy",
    "after_render",
    "host_note",
    "read_host",
    "should_render",
]

RENDER_NOTE: Final = "render"
RenderMode = Literal["never", "auto", "always"]
RENDER_MODES: Final = ("never", "auto", "always")

# Why a page is rendered, or why not (RenderDecision.reason; the second group is recorded per
# host when it stops the host's renders).
APP_SHELL: Final = "app_shell"
THIN: Final = "thin"
ALWAYS: Final = "always"
NOT_NEEDED: Final = "not_needed"
OFF: Final = "off"
OPTED_OUT: Final = "opted_out"
HOST_PAGES: Final = "host_pages"
HOST_SECONDS: Final = "host_seconds"
CRAWL_PAGES: Final = "crawl_pages"
CRAWL_SECONDS: Final = "crawl_seconds"
ADDS_NOTHING: Final = "adds_nothing"
# The reasons a page that would be rendered is not: counted per page ("render.skipped.<why>").
STOPPED: Final = frozenset({HOST_PAGES, HOST_SECONDS, CRAWL_PAGES, CRAWL_SECONDS, ADDS_NOTHING})


@dataclass(frozen=True, slots=True)
class RenderPolicy:
    mode: RenderMode = "never"
    hosts: frozenset[str] = frozenset()  # host keys ``always`` renders (none: every host)
    opted_out: frozenset[str] = frozenset()  # host keys ``auto`` never renders
    min_text_chars: int = 200
    min_links: int = 1
    max_pages_per_host: int | None = 500
    max_seconds_per_host: float | None = 600.0
    crawl: RenderBudget = RenderBudget()  # noqa: RUF009 - frozen, so sharing is safe
    give_up_after: int = 3


@dataclass(frozen=True, slots=True)
class PageSignals:
    """What a page's plain parse found: HTML or not, its visible text's length, its links, and
    whether it looks like an app shell (parse/app_shell.py)."""

    html: bool
    text_chars: int
    links: int
    app_shell: bool = False


@dataclass(frozen=True, slots=True)
class HostRenders:
    """A host's renders so far: how many, their browser seconds, how many in a row added
    nothing, and why the host is no longer rendered (None: it still is)."""

    pages: int = 0
    seconds: float = 0.0
    useless: int = 0
    stopped: str | None = None


@dataclass(frozen=True, slots=True)
class CrawlRenders:
    """The crawl's renders so far, every host together."""

    pages: int = 0
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class RenderDecision:
    render: bool
    reason: str


def should_render(
    policy: RenderPolicy,
    host_key: str,
    page: PageSignals,
    host: HostRenders,
    crawl: CrawlRenders,
) -> RenderDecision:
    """Whether the page just fetched and parsed goes to the rendering tier, and why."""
    if policy.mode == "never" or not page.html:
        return RenderDecision(False, OFF)
    wanted: str | None = ALWAYS
    if policy.mode == "always":
        if policy.hosts and host_key not in policy.hosts:
            return RenderDecision(False, OFF)
    elif host_key in policy.opted_out:
        return RenderDecision(False, OPTED_OUT)
    else:
        wanted = _need(policy, page)
    if wanted is None:
        return RenderDecision(False, NOT_NEEDED)
    if host.stopped is not None:
        return RenderDecision(False, host.stopped)
    over = _over_budget(policy, host, crawl)
    if over is not None:
        return RenderDecision(False, over)
    return RenderDecision(True, wanted)


def _need(policy: RenderPolicy, page: PageSignals) -> str | None:
    if page.app_shell:
        return APP_SHELL
    if page.text_chars < policy.min_text_chars or page.links < policy.min_links:
        return THIN
    return None


def _over_budget(policy: RenderPolicy, host: HostRenders, crawl: CrawlRenders) -> str | None:
    if policy.max_pages_per_host is not None and host.pages >= policy.max_pages_per_host:
        return HOST_PAGES
    if policy.max_seconds_per_host is not None and host.seconds >= policy.max_seconds_per_host:
        return HOST_SECONDS
    return policy.crawl.refusal(crawl.pages, crawl.seconds)


def after_render(
    policy: RenderPolicy,
    host: HostRenders,
    seconds: float,
    plain: PageSignals,
    rendered: PageSignals,
) -> HostRenders:
    """The host's renders after one that took ``seconds`` of browser time and turned the page's
    plain parse into ``rendered``. A render that found no more text and no more links than the
    plain parse added nothing; ``give_up_after`` of those in a row stop the host's renders
    (a render that adds something resets the count). Budgets stop a host in
    ``should_render``, not here: a bigger budget on resume renders it again."""
    added = rendered.text_chars > plain.text_chars or rendered.links > plain.links
    useless = 0 if added else host.useless + 1
    stopped = host.stopped
    if stopped is None and useless >= policy.give_up_after:
        stopped = ADDS_NOTHING
    return HostRenders(host.pages + 1, host.seconds + max(0.0, seconds), useless, stopped)


def read_host(note: str | None) -> HostRenders:
    """A host's renders from its note (absent or empty: none yet)."""
    if not note:
        return HostRenders()
    parts = note.split(" ")
    stopped = parts[3] if len(parts) > 3 and parts[3] else None
    return HostRenders(int(parts[0]), float(parts[1]), int(parts[2]), stopped)


def host_note(host: HostRenders) -> str:
    """The note ``read_host`` reads back."""
    text = f"{host.pages} {host.seconds!r} {host.useless}"
    return f"{text} {host.stopped}" if host.stopped else text
