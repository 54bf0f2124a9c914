"""One typed configuration object, built once (defaults <- TOML file <- CLI flags:
config_sources.py) and checked as it is built (config_checks.py): values only, no policy objects
(crawl/setup.py builds those)."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, fields
from typing import Any

from crawlspace.config_checks import Scope, check_config, hints_of, is_tuple, type_error
from crawlspace.discovery.policy_normalize import DEFAULT_STRIP_PARAMS
from crawlspace.fetch.settings import ResolveOverride
from crawlspace.frontier.priority import PriorityPolicy
from crawlspace.urls import QueryOrder
from crawlspace.version import __version__

PROJECT_URL = "https://github.com/crawlspace/crawlspace"
DEFAULT_USER_AGENT = f"CrawlspaceBot/{__version__} (+{PROJECT_URL})"

KIB = 1024
MIB = 1024 * KIB


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity: taskset, a container's cpuset)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no sched_getaffinity off Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class CrawlConfig:
    user_agent: str = DEFAULT_USER_AGENT
    scope: Scope = "domain"
    allow_hosts: tuple[str, ...] = ()
    max_pages: int | None = None
    max_depth: int = 10
    max_pages_per_host: int | None = None
    max_url_length: int = 2048
    min_delay: float = 1.0
    delay_factor: float = 10.0
    max_in_flight_per_host: int = 1
    # Per server address (limits.py): requests in flight to one IP, whatever host
    # names it serves, and the seconds between the end of one and the start of the next.
    max_in_flight_per_ip: int = 4
    min_delay_per_ip: float = 0.0
    # Requests started per second in all, on every worker of a shared crawl together (limits.py
    # RateCap); None: no cap beyond politeness.
    max_rate: float | None = None
    concurrency: int = 32
    # Parse worker processes (crawl/stages.py): one per core this process may run on.
    parse_workers: int = dataclasses.field(default_factory=available_cores)
    # CPU seconds one page's parse may use in a parse worker (0: no limit); past it the page is
    # kept as fetched without text or links (reason parse_budget), not fetched again.
    parse_cpu_seconds: float = 30.0
    # Megabytes of memory one page's parse may use in a parse worker beyond the worker's own (0:
    # no limit); past it the page is kept as fetched without text or links (parse_memory), and
    # the worker is replaced.
    parse_memory_mb: int = 2048
    # Times a page whose parse failed (parse_budget, parse_memory, parse_crashed) is parsed again
    # from its WARC record in a parse worker, before it is kept without text or links; never
    # fetched again for it (crawl/visit.py). 0: not parsed again.
    parse_retries: int = 1
    # "asyncio" (the stdlib loop) or "uvloop" (libuv; pip install 'crawlspace[uvloop]').
    event_loop: str = "asyncio"
    duration: float | None = None
    allow_nets: tuple[str, ...] = ()
    resolve: tuple[ResolveOverride, ...] = ()
    # Request headers added to every request ("Name: value"), to one host's only ("HOST[:PORT]
    # Name: value": a cookie, say), and HTTP Basic credentials per host ("HOST[:PORT]
    # USER:PASSWORD"); fetch/request_headers.py.
    headers: tuple[str, ...] = ()
    host_headers: tuple[str, ...] = ()
    auth: tuple[str, ...] = ()
    # Every request through this HTTP proxy, http://[USER:PASSWORD@]HOST:PORT (https URLs by
    # CONNECT); fetch/aiohttp_transport.py. Of this run only: never stored with the crawl.
    proxy: str | None = None
    # Fetch limits against untrusted servers.
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    # Headers and body together: a server that drips a byte a second is cut here.
    total_timeout: float = 30.0
    max_body_bytes: int = 10 * MIB
    max_decompressed_bytes: int = 50 * MIB
    max_redirects: int = 5
    max_attempts: int = 3
    # A 429 (or 503 with Retry-After) is the server asking us to wait, not a failure: the URL is
    # tried again after the wait, up to this many tries in all (then it fails as "throttled").
    max_throttled_attempts: int = 10
    # ...and while its host has asked us to wait for less than this long in a row (answers that
    # all said "wait"): a server that throttles for hours is given up on, saying so.
    max_throttled_seconds: float = 6 * 3600.0
    # A lease lives total_timeout + this long before it expires; a visit that has not sent its
    # request within this long of the grant gives the lease back unfetched (crawl/visit_parts.py).
    lease_grace: float = 60.0
    # Backoff (frontier/backoff.py): 429/503 without Retry-After, and failures, whose waits
    # double per failure of the host in a row from retry_delay.
    backoff_base: float = 5.0
    max_backoff: float = 3600.0  # also caps Retry-After
    retry_delay: float = 2.0
    # A host that stops answering is probed, its URLs kept, for this long (frontier/outage.py);
    # then its queued URLs fail as host_down.
    max_outage_seconds: float = 600.0
    # Distinct sitemap documents (robots.txt Sitemap lines, sitemap index entries) a host may
    # cost (frontier/sitemap_budget.py); --sitemap ones are not counted.
    max_sitemaps_per_host: int = 50
    follow_nofollow: bool = False
    # robots.txt (RFC 9309).
    robots_max_bytes: int = 512 * KIB
    # A robots.txt answer (2xx rules, 4xx allow all) is kept for its HTTP freshness lifetime
    # (Cache-Control max-age, Expires; RFC 9111), this long when its response has none, and
    # never longer (RFC 9309 §2.4: at most 24 hours).
    robots_cache_seconds: float = 24 * 3600.0
    # ...and never shorter than this, whatever no-cache or max-age=0 say. Not a few seconds:
    # many sites send no-cache on every generated response, 404 pages included, and an
    # expired record puts robots.txt before the host's next page, so at a 1-2 s politeness gap
    # a 5 s floor spends up to a third of such a host's requests on robots.txt. 30 s keeps that
    # near 1 in 20 while a changed robots.txt is still seen within half a minute, not a day.
    robots_min_cache_seconds: float = 30.0
    robots_retry_delay: float = 60.0
    robots_max_attempts: int = 4
    max_crawl_delay: float = 30.0
    # DNS cache: getaddrinfo exposes no TTL, so positive answers live this long (see fetch/dns.py).
    dns_cache_seconds: float = 300.0
    dns_negative_seconds: float = 30.0
    # Output.
    warc_max_bytes: int = 1024 * MIB
    # gzip level of each WARC record (1 fastest: ~4x less CPU, ~50% larger files on HTML).
    warc_gzip_level: int = 6
    # Each WARC file's warcinfo record (WARC 1.1 annex C): who ran the crawl ("name, contact"),
    # and the collection it belongs to (None: the crawl directory's name).
    warc_operator: str | None = None
    warc_is_part_of: str | None = None
    # A payload archived again within this many distinct payloads is written as a revisit record
    # of the earlier capture (archive/captures.py; ~350 bytes of memory each; 0: every payload in
    # full).
    warc_revisit_window: int = 20_000
    # The index feed (docs/feed.md): a record per page version that an index should add or
    # delete, with up to feed_text_chars characters of each page's text.
    feed: bool = True
    feed_text_chars: int = 65_536
    # On a shared frontier the feed is also a Redis stream per bucket (store/redis/feed_stream.py)
    # that keeps about this many records, all buckets together (0: no stream).
    feed_stream_entries: int = 100_000
    progress: bool = True
    # Telemetry: the samples time series in crawl.db, and a Prometheus endpoint on 127.0.0.1.
    sample_seconds: float = 5.0
    metrics_port: int | None = None
    # Sitemaps (discovery/sitemaps.py): extra sitemap URLs (--sitemap), and how deep sitemap
    # indexes may nest (0: only the named sitemaps; sitemaps.org allows one index level).
    sitemaps: tuple[str, ...] = ()
    max_sitemap_depth: int = 2
    # URL policy normalization (discovery/policy_normalize.py): query parameters dropped (a
    # trailing * is a prefix), hosts whose query parameters are sorted (".example.com" = domain),
    # "/dir/index.html" -> "/dir/", "/dir/" -> "/dir".
    strip_params: tuple[str, ...] = DEFAULT_STRIP_PARAMS
    sort_query_hosts: tuple[str, ...] = ()
    # Query parameter order (urls.py seen_key): "ignored" counts a URL linked with its
    # parameters in another order as seen (the request keeps the order first linked);
    # "learned" keeps orders apart until a host's pages show order changes nothing
    # (frontier/url_equivalence.py), for sites whose servers read parameters in order.
    query_order: QueryOrder = "ignored"
    fold_index_html: bool = False
    fold_trailing_slash: bool = False
    # Seen-set Bloom accelerator (dedup/seen.py), sized for this many URLs at this false-positive
    # rate (~1.2 MB per million URLs at 1%); 0 turns it off. Content dedup: simhash Hamming
    # distance for near-duplicates (Manku et al. 2007 use 3 of 64 bits).
    bloom_expected_urls: int = 1_000_000
    bloom_fp_rate: float = 0.01
    near_duplicate_bits: int = 3
    # Fingerprints the near-duplicate index holds in memory (~32 bytes each; resume reloads
    # them): past it, new pages are compared with the stored ones but not stored themselves.
    near_duplicate_max_pages: int = 4_000_000
    # Trap budgets (frontier/budgets.py; each refusal counted as rejected.<reason>): pages
    # fetched per host per UTC day (the host then waits for the next day), total bytes downloaded
    # (the crawl stops leasing), consecutive repeats of a path-segment run, query parameters,
    # URLs admitted per URL template per host ("/cal/{n}/{n}"), and exclusion patterns
    # "[HOST_GLOB ]GLOB" or "[HOST_GLOB ]re:REGEX" over path+query. 0 / None: off.
    max_pages_per_host_per_day: int | None = None
    max_bytes: int | None = None
    max_path_repeats: int = 2
    max_query_params: int = 10
    max_urls_per_template: int | None = 1000
    exclude: tuple[str, ...] = ()
    include: tuple[str, ...] = ()  # given: links must match one (seeds need not)
    # Discovery ratio (new URLs per fetched page) per host over windows of this many pages: a
    # host at >= discovery_trap_ratio whose ratio does not fall is flagged a likely trap and its
    # new URLs sink trap_priority_penalty points (10 = one depth level) in its queue.
    discovery_window: int = 20
    discovery_trap_ratio: float = 1.0
    trap_priority_penalty: int = 100
    # Traps by yield (frontier/trap_yield.py): a URL family whose pages, over a window of
    # trap_sample pages (0: off), are at least trap_sibling_share near a sibling (at most
    # trap_sibling_new_pairs word pairs of their own) and keep queuing new members of the
    # family is a trap: its links are refused and its queued URLs excluded (trap_template,
    # trap_facets, trap_loop).
    trap_sample: int = 20
    trap_sibling_share: float = 0.7
    trap_sibling_new_pairs: int = 8
    # URL equivalences learned per host from content (frontier/url_equivalence.py): parameter
    # order that changes nothing, parameters that change nothing. Off: URLs stay as linked.
    learn_url_equivalence: bool = True
    # Recrawl (frontier/revisit.py): --continuous keeps the crawl running and revisits each
    # fetched URL at its adaptive interval in [revisit_min_interval, revisit_max_interval];
    # revisit_share of the leases go to due revisits when a host has both kinds of work.
    continuous: bool = False
    revisit_min_interval: float = 86400.0
    revisit_max_interval: float = 30 * 86400.0
    revisit_initial_interval: float = 7 * 86400.0
    revisit_gone_interval: float = 30 * 86400.0
    revisit_missing_interval: float = 7 * 86400.0
    revisit_error_interval: float = 86400.0
    revisit_failed_interval: float = 86400.0
    # Value scales each revisit's wait (frontier/revisit.py): priority points per doubling.
    revisit_value_points: float = 10.0
    # A URL no page or sitemap linked for this many passes of revisit_max_interval is retired
    # at its next revisit (frontier/retirement.py): not fetched again, deleted from the feed.
    retire_after_passes: int = 3
    # Host allowances (frontier/allowance.py): a host whose last discovery window of pages
    # wasted a share s (errors, duplicates) waits its politeness gap / (1 - s) after an
    # ordinary page, at most max_host_slowdown times it; never less than politeness. 1: off.
    max_host_slowdown: float = 4.0
    revisit_share: float = 0.5
    # Priority (frontier/priority.py): "score" (depth, sitemap priority and lastmod, pattern
    # points "POINTS [HOST_GLOB ]PATTERN", in-links, host demotions) or "aopic" (cash, see
    # frontier/aopic.py). Path-ascending discovery: a fetched /a/b/page also enqueues /a/b/,
    # /a/ and / (Cho et al.; finds unlinked directory pages), off by default.
    priority_policy: PriorityPolicy = "score"
    priority_patterns: tuple[str, ...] = ()
    inlink_weight: int = 1
    inlink_cap: int = 10
    aopic_tax: float = 0.1
    path_ascending: bool = False
    # Page requisites (wget -p, Heritrix's embeds): the stylesheets, scripts, images, media and
    # fonts a page embeds are fetched too (same politeness, robots.txt, scope and address guard),
    # at the page's own depth, so an archived page replays as it looked; at most
    # max_requisites_per_page of them a page.
    page_requisites: bool = False
    max_requisites_per_page: int = 100
    # The extraction hook, "module:function" (parse/extract.py): run on every parsed page in the
    # parse workers; what it returns is stored as items (`crawlspace export --what items`).
    extract: str | None = None
    # The rendering tier (frontier/render_entry.py, render/browser.py): "never"; "auto" (a page
    # whose plain parse found little text or no links, or an app shell); "always" (every HTML
    # page of render_hosts, or of every host when none is named). Needs Playwright and the
    # system's Chromium. A render may take render_timeout seconds; render_resources: renders
    # fetch images, media and fonts too.
    render: str = "never"
    render_hosts: tuple[str, ...] = ()
    render_timeout: float = 30.0
    render_resources: bool = False
    # The whole browser's private memory (every Chromium process, MB): past it the render
    # fails and the browser is restarted.
    render_memory_mb: int = 1024
    # Pages and browser seconds of one host rendered at most (its host note counts them on
    # every engine); of the whole crawl, every worker together (the store counts them; None:
    # no such budget).
    render_max_pages_per_host: int | None = 500
    render_max_seconds_per_host: float | None = 600.0
    render_max_pages: int | None = None
    render_max_seconds: float | None = None
    # What "auto" calls a page that needs rendering: visible text shorter than this, or fewer
    # links (an app shell always); hosts it never renders (HOST[:PORT]).
    render_min_text: int = 200
    render_min_links: int = 1
    render_skip_hosts: tuple[str, ...] = ()
    # Across hosts (bands.py, frontier/front_queues.py): a ready host whose best queued URL is in
    # a better band (one link depth, or one halving of AOPIC cash) goes first; each
    # host_priority_aging seconds a host has waited ready count as one band, so none is starved
    # (0: oldest first).
    host_priority_aging: float = 60.0

    @property
    def product_token(self) -> str:
        """RFC 9309 §2.2.1: the robots product token is the User-Agent up to the first '/'."""
        return self.user_agent.split("/", 1)[0].split()[0] if self.user_agent.strip() else "*"

    @property
    def lease_seconds(self) -> float:
        """A lease must outlive the longest fetch, or a slow fetch would let a second one start;
        with rendering on, the fetch and then the page's render."""
        render = self.render_timeout + self.total_timeout if self.render != "never" else 0.0
        return self.total_timeout + self.lease_grace + render

    def __post_init__(self) -> None:
        # A list where a tuple is kept (allow_nets=["127.0.0.0/8"] from Python, as a TOML list
        # gives it) is the same setting: kept as a tuple, so the config stays hashable.
        hints = hints_of(type(self))
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, list) and is_tuple(hints[f.name]):
                object.__setattr__(self, f.name, tuple(value))
        check_config(self)

    def replace(self, **changes: Any) -> CrawlConfig:
        return dataclasses.replace(self, **changes)


__all__ = [
    "DEFAULT_USER_AGENT",
    "KIB",
    "MIB",
    "CrawlConfig",
    "Scope",
    "check_config",
    "type_error",
]
