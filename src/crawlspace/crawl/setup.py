"""Opening a crawl: the output directory's lock, the settings it remembers, its store, its rules.

Each function builds one part the Crawler wires together from the one ``CrawlConfig``; a worker
(``crawl/worker.py``) builds the same frontier limits and rules for its shared frontier. This is
the one place settings become policy objects: ``config.py`` holds values only.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import importlib.util
import logging
import os
from collections.abc import Coroutine, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from crawlspace.archive.recovery import RecoveredFile, recover_open_files, response_offsets
from crawlspace.archive.warc import WarcWriter
from crawlspace.bands import FrontQueues
from crawlspace.config import CrawlConfig
from crawlspace.crawl.settings import (
    SettingChange,
    given_by_default,
    lifted_exclusions,
    settle,
    stored_form,
)
from crawlspace.dedup.near_index import NearDuplicateIndex
from crawlspace.dedup.seen import dedup_seen_filter
from crawlspace.discovery.links import Discovery, EntryRules, UrlFilter
from crawlspace.discovery.policy_normalize import UrlPolicy
from crawlspace.discovery.scope import Scope
from crawlspace.errors import ConfigError, OutputDirError
from crawlspace.fetch.settings import FetchSettings
from crawlspace.frontier.allowance import AllowancePolicy
from crawlspace.frontier.aopic import Aopic
from crawlspace.frontier.budgets import TrapRules, compile_excludes, keyed_budgets
from crawlspace.frontier.front_queues import front_queues
from crawlspace.frontier.outage import OutagePolicy
from crawlspace.frontier.plans import CompletionPolicy
from crawlspace.frontier.priority import PriorityRules, compile_priority_patterns
from crawlspace.frontier.render_entry import RENDER_MODES, RenderMode, RenderPolicy
from crawlspace.frontier.retirement import RetirementPolicy
from crawlspace.frontier.revisit import RevisitPolicy
from crawlspace.frontier.trap_yield import YieldRules
from crawlspace.limits import AddressPolicy, RateCap, RenderBudget
from crawlspace.render.browser import Renderer, find_chromium
from crawlspace.store.base import FrontierLimits, Store
from crawlspace.store.sqlite.readonly import read_meta
from crawlspace.store.sqlite.store import SqliteStore
from crawlspace.version import __version__

log = logging.getLogger("crawlspace.crawl")
T = TypeVar("T")
# crawl.db meta: the settings the crawl started with (crawl/settings.py).
SETTINGS_KEY = "crawl_settings"


def priority_rules(config: CrawlConfig) -> PriorityRules:
    """How a link's priority is scored within its host's queue (frontier/priority.py)."""
    return PriorityRules(
        config.priority_policy,
        compile_priority_patterns(config.priority_patterns),
        config.inlink_weight,
        config.inlink_cap,
        config.aopic_tax,
    )


def front_bands(config: CrawlConfig) -> FrontQueues:
    """Which ready host goes first (bands.py; the bands of frontier/front_queues.py)."""
    return front_queues(config.priority_policy, config.host_priority_aging)


def yield_rules(config: CrawlConfig) -> YieldRules:
    """Trap detection by yield (frontier/trap_yield.py)."""
    return YieldRules(config.trap_sample, config.trap_sibling_share, config.trap_sibling_new_pairs)


def revisit_policy(config: CrawlConfig) -> RevisitPolicy:
    """When a fetched URL is visited again (frontier/revisit.py)."""
    return RevisitPolicy(
        config.revisit_min_interval,
        config.revisit_max_interval,
        config.revisit_initial_interval,
        gone_interval=config.revisit_gone_interval,
        missing_interval=config.revisit_missing_interval,
        error_interval=config.revisit_error_interval,
        failed_interval=config.revisit_failed_interval,
        value_points=config.revisit_value_points,
    )


def outage_policy(config: CrawlConfig) -> OutagePolicy:
    """When a host that stops answering is charged, probed and given up (frontier/outage.py)."""
    return OutagePolicy(config.max_attempts, config.max_outage_seconds)


def fetch_settings(config: CrawlConfig) -> FetchSettings:
    """The part of the configuration one HTTP exchange needs (fetch/settings.py)."""
    return FetchSettings(
        user_agent=config.user_agent,
        concurrency=config.concurrency,
        connect_timeout=config.connect_timeout,
        read_timeout=config.read_timeout,
        total_timeout=config.total_timeout,
        max_body_bytes=config.max_body_bytes,
        max_decompressed_bytes=config.max_decompressed_bytes,
        allow_nets=config.allow_nets,
        resolve=config.resolve,
        dns_cache_seconds=config.dns_cache_seconds,
        dns_negative_seconds=config.dns_negative_seconds,
        proxy=config.proxy,
    )


def frontier_limits(config: CrawlConfig) -> FrontierLimits:
    """What every frontier enforces with its atomic operations, the same on every engine."""
    return FrontierLimits(
        config.max_in_flight_per_host,
        config.max_pages_per_host,
        # An expired lease may hide a request that just ended: its host keeps the minimum gap.
        lost_lease_gap=config.min_delay,
        revisit_share=config.revisit_share,
        front=front_bands(config),
        cash=Aopic(config.aopic_tax) if config.priority_policy == "aopic" else None,
        address=AddressPolicy(config.max_in_flight_per_ip, config.min_delay_per_ip),
        rate=RateCap(config.max_rate or 0.0),
        render=RenderBudget(config.render_max_pages, config.render_max_seconds),
        ignore_query_order=config.query_order == "ignored",
        link_times=retirement_policy(config).passes > 0,
    )


def allowance_policy(config: CrawlConfig) -> AllowancePolicy:
    """How far a host that wastes its visits is slowed below its politeness limit."""
    return AllowancePolicy(config.max_host_slowdown if config.discovery_window else 1.0)


def retirement_policy(config: CrawlConfig) -> RetirementPolicy:
    """When a URL no longer linked leaves the crawl: only a continuous crawl revisits."""
    passes = config.retire_after_passes if config.continuous else 0
    return RetirementPolicy(passes, config.revisit_max_interval)


def completion_policy(config: CrawlConfig) -> CompletionPolicy:
    """What a page's completion decides (frontier/plans.py), the same on every engine."""
    return CompletionPolicy(
        budgets=keyed_budgets(config.max_urls_per_template),
        max_pages_per_host_per_day=config.max_pages_per_host_per_day,
        inlink_weight=config.inlink_weight if config.priority_policy == "score" else 0,
        inlink_cap=config.inlink_cap,
        discovery_window=config.discovery_window,
        discovery_trap_ratio=config.discovery_trap_ratio,
        trap_priority_penalty=config.trap_priority_penalty,
        feed=config.feed,
    )


def open_sqlite_store(config: CrawlConfig, path: Path) -> SqliteStore:
    """The embedded engine: frontier and metadata in one crawl.db."""
    return SqliteStore(
        path,
        frontier_limits(config),
        seen_filter=dedup_seen_filter(config.bloom_expected_urls, config.bloom_fp_rate),
        near_index=NearDuplicateIndex(config.near_duplicate_bits, config.near_duplicate_max_pages),
        background_checkpoints=True,
    )


def crawl_scope(config: CrawlConfig, seeds: Iterable[str]) -> Scope:
    """The crawl's scope. ``allow_nets`` is passed too: an address only it opens is in scope on
    the seeds' host:port pairs and ``allow_hosts`` entries alone (discovery/scope.py). Built
    here for ``crawl``, ``seed`` and ``worker`` alike, so all of them admit the same URLs."""
    return Scope(config.scope, seeds, config.allow_hosts, config.allow_nets)


def link_discovery(config: CrawlConfig, scope: Scope, filters: Sequence[UrlFilter]) -> Discovery:
    """Link admission: normalization, scope, depth and length, trap shapes, priority."""
    return Discovery(
        EntryRules(
            config.max_depth,
            config.max_url_length,
            config.follow_nofollow,
            UrlPolicy(
                config.strip_params,
                config.sort_query_hosts,
                config.fold_index_html,
                config.fold_trailing_slash,
            ),
            TrapRules(
                config.max_path_repeats,
                config.max_query_params,
                compile_excludes(config.exclude),
                compile_excludes(config.include, "include"),
            ),
            priority_rules(config),
            config.max_requisites_per_page,
        ),
        scope,
        filters,
    )


def warcinfo_fields(config: CrawlConfig, out_dir: Path) -> dict[str, str]:
    """What each WARC file's warcinfo record says of the crawl beyond the writer's own fields
    (WARC 1.1 annex C; Heritrix writes the same): its operator, collection, User-Agent and
    robots.txt policy (always obeyed)."""
    fields = {
        "isPartOf": config.warc_is_part_of or out_dir.resolve().name,
        "http-header-user-agent": config.user_agent,
        "robots": "obey",
    }
    if config.warc_operator:
        fields["operator"] = config.warc_operator
    return fields


def settle_settings(
    config: CrawlConfig, db_path: Path, given: frozenset[str] | None, reconfigure: bool
) -> tuple[CrawlConfig, str | None, list[SettingChange]]:
    """The stored settings of a resumed crawl, changed only with ``reconfigure`` (each change
    logged), what to store (a new crawl's settings, or the changed ones; else None), and the
    changes."""
    stored = read_meta(db_path, SETTINGS_KEY) if db_path.exists() else None
    settled, changes = settle(
        config,
        stored,
        given_by_default(config) if given is None else given,
        reconfigure=reconfigure,
    )
    for change in changes:
        log.warning("--reconfigure: %s", change.describe())
    return settled, stored_form(settled) if changes or stored is None else None, changes


def lift_exclusions(store: Store, changes: list[SettingChange], now: float) -> None:
    """Queue again what the changed settings no longer exclude (settings.py lifted_exclusions),
    saying how much."""
    for reason in sorted(lifted_exclusions(changes)):
        queued = store.lift_exclusion(reason, now)
        log.warning("--reconfigure: %d URLs excluded as %s queued again", queued, reason)


class OutDirLock:
    """One crawl per output directory: an exclusive flock on ``DIR/.lock`` while it runs."""

    def __init__(self, out_dir: Path) -> None:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(out_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise OutputDirError(f"cannot use output directory {out_dir}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OutputDirError(
                f"{out_dir} is in use by another crawl (lock file {out_dir / '.lock'})"
            ) from None
        self._fd = fd

    def release(self) -> None:
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)


def open_warc(config: CrawlConfig, out_dir: Path, store: Store) -> WarcWriter:
    """The crawl's WARC writer, after repairing what an earlier run left open (archive/
    recovery.py)."""
    warc_dir = out_dir / "warc"
    for fixed in recover_open_files(warc_dir):
        log.info("recovered WARC file %s", fixed)
        _count_unreferenced(store, fixed)
    return WarcWriter(
        warc_dir,
        max_bytes=config.warc_max_bytes,
        software=f"crawlspace/{__version__}",
        operator_info=warcinfo_fields(config, out_dir),
        compress_level=config.warc_gzip_level,
    )


def _count_unreferenced(store: Store, fixed: RecoveredFile) -> None:
    """Responses archived by a run that died before committing them stay in the WARC (they
    are complete records, harmless to readers); count them so an operator can see them.
    Retried attempts and robots.txt fetches are also archived without a fetch row."""
    if fixed.deleted or fixed.error is not None:
        return
    referenced = store.warc_offsets(fixed.path.name)
    unreferenced = sum(1 for o in response_offsets(fixed.path) if o not in referenced)
    store.bump_counters({"warc.recovered_files": 1, "warc.unreferenced_records": unreferenced})
    if unreferenced:
        log.info("%s: %d response records without a fetch row", fixed.path.name, unreferenced)


def run_on_loop(crawl: Coroutine[Any, Any, T], event_loop: str) -> T:
    """Run ``crawl`` to its end on a new event loop: asyncio's, or uvloop's when chosen (an
    optional package: one line saying what to install when it is missing)."""
    loop_factory = None
    if event_loop == "uvloop":
        try:
            import uvloop  # optional: imported only when chosen
        except ImportError:
            crawl.close()
            raise ConfigError(
                "event_loop = uvloop needs the uvloop package: pip install 'crawlspace[uvloop]'"
            ) from None
        loop_factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(crawl)


def render_policy(config: CrawlConfig) -> RenderPolicy:
    """Which pages go to the rendering tier (frontier/render_entry.py). A host given as
    HOST[:PORT] stands for both schemes."""
    mode: RenderMode = "never"
    if config.render in RENDER_MODES:
        mode = cast("RenderMode", config.render)
    return RenderPolicy(
        mode=mode,
        hosts=_host_keys(config.render_hosts),
        opted_out=_host_keys(config.render_skip_hosts),
        min_text_chars=config.render_min_text,
        min_links=config.render_min_links,
        max_pages_per_host=config.render_max_pages_per_host,
        max_seconds_per_host=config.render_max_seconds_per_host,
        crawl=RenderBudget(config.render_max_pages, config.render_max_seconds),
    )


def _host_keys(entries: Iterable[str]) -> frozenset[str]:
    keys: set[str] = set()
    for entry in entries:
        text = entry.strip().lower().rstrip("/")
        keys.update([text] if "://" in text else [f"http://{text}", f"https://{text}"])
    return frozenset(keys)


def check_render(config: CrawlConfig) -> None:
    """A crawl that renders needs Playwright and a Chromium: refused in one line without them,
    before anything is written (never accepted and then ignored)."""
    if config.render == "never":
        return
    for package in ("playwright", "psutil"):
        if importlib.util.find_spec(package) is None:
            raise ConfigError(
                f"--render {config.render} needs {package}: pip install 'crawlspace[render]'"
            )
    if find_chromium() is None:
        raise ConfigError(
            f"--render {config.render} needs the system's Chromium: apt-get install chromium"
        )


def renderer_for(config: CrawlConfig) -> Renderer | None:
    """The crawl's browser (started on its first render), or None when it renders nothing."""
    if config.render == "never":
        return None
    return Renderer(
        user_agent=config.user_agent,
        timeout=config.render_timeout,
        memory_mb=config.render_memory_mb,
    )
