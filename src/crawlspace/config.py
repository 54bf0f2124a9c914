"""One typed configuration object, built once: defaults <- TOML file <- CLI flags."""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from crawlspace.discovery.policy_normalize import DEFAULT_STRIP_PARAMS
from crawlspace.errors import ConfigError
from crawlspace.fetch.settings import ResolveOverride
from crawlspace.frontier.priority import PriorityPolicy
from crawlspace.version import __version__

PROJECT_URL = "https://github.com/crawlspace/crawlspace"
DEFAULT_USER_AGENT = f"CrawlspaceBot/{__version__} (+{PROJECT_URL})"

Scope = Literal["host", "domain", "any"]

KIB = 1024
MIB = 1024 * KIB


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
    concurrency: int = 32
    parse_workers: int = 2  # parse worker processes (crawl/stages.py)
    # "asyncio" (the stdlib loop) or "uvloop" (libuv; pip install 'crawlspace[uvloop]').
    event_loop: str = "asyncio"
    duration: float | None = None
    allow_nets: tuple[str, ...] = ()
    resolve: tuple[ResolveOverride, ...] = ()
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
    # Backoff (frontier/backoff.py): 429/503 without Retry-After, failure retries, host pauses.
    backoff_base: float = 5.0
    max_backoff: float = 3600.0  # also caps Retry-After
    retry_delay: float = 2.0
    host_pause_after: int = 5
    host_pause_seconds: float = 300.0
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
    robots_max_attempts: int = 3
    max_crawl_delay: float = 30.0
    # DNS cache: getaddrinfo exposes no TTL, so positive answers live this long (see fetch/dns.py).
    dns_cache_seconds: float = 300.0
    dns_negative_seconds: float = 30.0
    # Output.
    warc_max_bytes: int = 1024 * MIB
    # gzip level of each WARC record (1 fastest: ~4x less CPU, ~50% larger files on HTML).
    warc_gzip_level: int = 6
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
        """A lease must outlive the longest fetch, or a slow fetch would let a second one start."""
        return self.total_timeout + self.lease_grace

    def __post_init__(self) -> None:
        # Imported here: the checks read this module's types (config_checks.py imports it).
        from crawlspace.config_checks import check_config

        check_config(self)

    def replace(self, **changes: Any) -> CrawlConfig:
        return dataclasses.replace(self, **changes)


def type_error(name: str, value: Any, expected: str) -> ConfigError:
    return ConfigError(f"{name} must be {expected} (got {value!r})")


_FIELD_NAMES = {f.name for f in fields(CrawlConfig)}
_TUPLE_FIELDS = {
    "allow_hosts",
    "allow_nets",
    "resolve",
    "sitemaps",
    "strip_params",
    "sort_query_hosts",
    "exclude",
    "priority_patterns",
}


def _coerce(name: str, value: Any) -> Any:
    if name in _TUPLE_FIELDS:
        if isinstance(value, str | ResolveOverride):
            value = (value,)
        elif not isinstance(value, list | tuple):
            raise type_error(name, value, "a string or a list of strings")
    if name == "resolve":
        items = []
        for v in value:
            if not isinstance(v, str | ResolveOverride):
                raise type_error(name, v, "a HOST:PORT:ADDRESS string")
            items.append(v if isinstance(v, ResolveOverride) else ResolveOverride.parse(v))
        return tuple(items)
    if name in _TUPLE_FIELDS:
        return tuple(value)
    return value


def coerce_setting(name: str, value: Any) -> Any:
    """A setting's value as CrawlConfig holds it (tuples, parsed --resolve entries)."""
    return _coerce(name, value)


def build_config(config_file: Path | None = None, **overrides: Any) -> CrawlConfig:
    """Defaults, then the TOML file's ``[crawl]`` table (or top level), then non-None overrides."""
    values = _given_values(config_file, overrides)
    try:
        return CrawlConfig(**values)
    except TypeError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from None


def given_settings(config_file: Path | None = None, **overrides: Any) -> frozenset[str]:
    """The settings a TOML file and overrides give (crawl/settings.py: a resume keeps the
    others as the crawl stored them)."""
    return frozenset(_given_values(config_file, overrides))


def _given_values(config_file: Path | None, overrides: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if config_file is not None:
        try:
            data = tomllib.loads(config_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file {config_file} does not exist") from None
        except UnicodeDecodeError:
            raise ConfigError(f"config file {config_file} is not UTF-8 text") from None
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {config_file} is not valid TOML: {exc}") from None
        table = data.get("crawl", data)
        if not isinstance(table, dict):
            raise ConfigError(f"config file {config_file}: [crawl] must be a table")
        for key, value in table.items():
            name = key.replace("-", "_")
            if name not in _FIELD_NAMES:
                raise ConfigError(f"config file {config_file}: unknown setting {key!r}")
            values[name] = _coerce(name, value)
    for name, value in overrides.items():
        if name not in _FIELD_NAMES:
            raise ConfigError(f"unknown setting {name!r}")
        if value is None or (name in _TUPLE_FIELDS and value == ()):
            continue
        if name in _TUPLE_FIELDS and name in values:
            values[name] = values[name] + _coerce(name, value)
        else:
            values[name] = _coerce(name, value)
    return values


__all__ = [
    "DEFAULT_USER_AGENT",
    "CrawlConfig",
    "ResolveOverride",
    "build_config",
    "coerce_setting",
    "given_settings",
]
