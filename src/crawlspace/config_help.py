"""Every crawl setting as a user reads it: its TOML key, its flag (if it has one), its default and
what it means. ``crawlspace config`` prints it; docs/options.md's settings table is generated
from it (a test keeps the two equal, and this table equal to ``CrawlConfig``'s fields and the crawl
command's flags). The settings themselves and their checks are config.py's."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

from crawlspace.config import CrawlConfig

__all__ = ["FLAGS", "HELP", "markdown_table", "rows", "text_table"]

# The crawl command's flags that give a setting (cli_options.py overrides), with their argument.
FLAGS: Final = {
    "user_agent": "--user-agent TEXT",
    "scope": "--scope host|domain|any",
    "allow_hosts": "--allow-host HOST[:PORT]",
    "max_pages": "--max-pages N",
    "max_depth": "--max-depth N",
    "max_pages_per_host": "--max-pages-per-host N",
    "max_url_length": "--max-url-length N",
    "min_delay": "--min-delay SECONDS",
    "delay_factor": "--delay-factor F",
    "max_in_flight_per_ip": "--max-in-flight-per-ip N",
    "min_delay_per_ip": "--min-delay-per-ip SECONDS",
    "max_rate": "--max-rate PER_SECOND",
    "concurrency": "--concurrency N",
    "duration": "--duration SECONDS",
    "continuous": "--continuous",
    "max_bytes": "--max-bytes N",
    "allow_nets": "--allow-net CIDR",
    "include": "--include PATTERN",
    "exclude": "--exclude PATTERN",
    "resolve": "--resolve HOST:PORT:ADDR",
    "headers": "--header 'NAME: VALUE'",
    "proxy": "--proxy URL",
    "sitemaps": "--sitemap URL",
    "metrics_port": "--metrics-port PORT",
    "page_requisites": "--page-requisites",
    "extract": "--extract MODULE:FUNCTION",
    "render": "--render never|auto|always",
    "render_hosts": "--render-host HOST[:PORT]",
    "progress": "-q (off)",
}

# Defaults that depend on the machine or the version, as the table shows them.
_SHOWN_DEFAULTS: Final = {
    "user_agent": "CrawlspaceBot/VERSION (+PROJECT URL)",
    "parse_workers": "one per core the crawl may run on",
}

HELP: Final = {
    "user_agent": "the User-Agent header; robots.txt groups match its product token, the part"
    " before '/'",
    "scope": "which links to follow: the seeds' hosts, their registrable domains, or anywhere",
    "allow_hosts": "hosts (HOST or HOST:PORT) added to the scope, repeatable",
    "max_pages": "stop after this many fetched pages, counted across runs of the crawl; the"
    " rest stays queued",
    "max_depth": "links more hops than this from a seed are excluded (depth)",
    "max_pages_per_host": "admit at most this many URLs per host (budget_host)",
    "max_url_length": "longer URLs are excluded (url_length)",
    "min_delay": "the shortest gap in seconds between two requests to one host",
    "delay_factor": "the gap after a fetch is max(min_delay, this x the fetch's duration)",
    "max_in_flight_per_host": "requests in flight to one host at a time",
    "max_in_flight_per_ip": "requests in flight to one server address, whatever its host names",
    "min_delay_per_ip": "the shortest gap in seconds between two requests to one server address",
    "max_rate": "requests started per second in all, every worker of a shared crawl together"
    " (none: no cap beyond politeness)",
    "concurrency": "fetches in flight in all",
    "parse_workers": "the most parse worker processes: the crawl starts one and adds the next"
    " while those running are busy parsing nearly all the time",
    "parse_cpu_seconds": "CPU seconds one page's parse may use in a parse worker (0: no"
    " limit); past it the page is kept as fetched without text or links (parse_budget)",
    "parse_memory_mb": "megabytes of memory one page's parse may use in a parse worker (0: no"
    " limit); past it the page is kept without text or links (parse_memory), the worker replaced",
    "parse_retries": "times a page whose parse failed is parsed again from its WARC record"
    " (never fetched again for it) before it is kept without text or links",
    "event_loop": "asyncio, or uvloop (pip install 'crawlspace[uvloop]')",
    "duration": "stop gracefully after this many seconds",
    "allow_nets": "networks the address guard lets the crawl connect to, which it refuses by"
    " default (private, loopback, link-local, metadata), e.g. 127.0.0.0/8; on them only the"
    " seeds' host:port and allow_hosts entries are in scope; repeatable",
    "resolve": "use ADDR for HOST:PORT instead of DNS, as curl does; repeatable",
    "headers": "a request header added to every request, 'Name: value', as curl -H; repeatable",
    "host_headers": "a request header for one host's requests only, 'HOST[:PORT] Name: value'"
    " (a Cookie, say)",
    "auth": "HTTP Basic credentials for one host's requests, 'HOST[:PORT] USER:PASSWORD' (kept"
    " in crawl.db with the other settings, and sent as an Authorization header the WARC records)",
    "proxy": "send every request through this HTTP proxy, http://[USER:PASSWORD@]HOST:PORT (https"
    " URLs by CONNECT); the targets still pass the address guard; of this run only, not stored",
    "connect_timeout": "seconds to connect",
    "read_timeout": "seconds between two reads of a response",
    "total_timeout": "seconds for a whole response, headers and body (a server that drips a"
    " byte a second is cut here)",
    "max_body_bytes": "bytes of a response body kept; longer bodies are cut (truncated)",
    "max_decompressed_bytes": "bytes a compressed body may expand to",
    "max_redirects": "redirect hops followed from one URL",
    "max_attempts": "tries of a URL whose fetch failed (connect, timeout, 5xx) before it fails",
    "max_throttled_attempts": "tries of a URL answered 429 (or 503 with Retry-After) before it"
    " fails as throttled: each answer asks us to wait, not to give up",
    "max_throttled_seconds": "a host that answered nothing but 'wait' for this long in a row"
    " has its throttled URLs failed as throttled",
    "lease_grace": "a lease lives total_timeout + this long; a visit not started within it"
    " gives its lease back unfetched",
    "backoff_base": "the first backoff in seconds after a 429/503 without Retry-After; it"
    " doubles each time",
    "max_backoff": "the longest backoff, and the longest Retry-After honoured",
    "retry_delay": "seconds a host waits after a failed fetch, doubling with each failure of"
    " the host in a row (up to max_backoff)",
    "max_outage_seconds": "how long a host that stops answering is probed with its URLs kept"
    " queued; then they fail as host_down (and are revisited like failures)",
    "max_sitemaps_per_host": "distinct sitemaps (robots.txt Sitemap lines, sitemap index"
    " entries) fetched per host; more are excluded as sitemap_budget (--sitemap ones not counted)",
    "follow_nofollow": "follow links marked nofollow (rel, meta robots, X-Robots-Tag)",
    "robots_max_bytes": "bytes of robots.txt read (RFC 9309 asks for at least 500 KiB)",
    "robots_cache_seconds": "the longest a robots.txt answer is kept, and how long when its"
    " response has no caching headers (RFC 9309: at most a day)",
    "robots_min_cache_seconds": "the shortest a robots.txt answer is kept, whatever no-cache"
    " or max-age=0 say",
    "robots_retry_delay": "seconds before a robots.txt that failed to load is asked again"
    " (doubling each try); its host's URLs wait meanwhile",
    "robots_max_attempts": "tries of a failing robots.txt (over seven minutes at the default"
    " delay) before its host's URLs are excluded (robots_unavailable) until it answers again",
    "max_crawl_delay": "the longest Crawl-delay honoured, in seconds",
    "dns_cache_seconds": "how long a resolved address is kept",
    "dns_negative_seconds": "how long a failed resolution is kept",
    "warc_max_bytes": "a WARC file is closed and the next one begun past this size",
    "warc_gzip_level": "gzip level of each WARC record (1 spends ~4x less CPU for ~50% larger"
    " files)",
    "warc_operator": "who runs the crawl, for each WARC file's warcinfo record (e.g. 'Jane"
    " Doe, crawl@example.org')",
    "warc_is_part_of": "the collection the WARC files belong to (warcinfo isPartOf; none: the"
    " crawl directory's name)",
    "warc_revisit_window": "a payload archived again within this many distinct payloads is"
    " written as a WARC revisit record of the earlier capture (0: always in full)",
    "feed": "write the index feed (crawlspace feed DIR): a record per page version an index"
    " should add or delete",
    "feed_text_chars": "characters of a page's text its feed record keeps",
    "feed_stream_entries": "feed records a shared frontier's feed streams keep (the oldest"
    " are trimmed; each worker's directory keeps its whole feed; 0: no stream)",
    "progress": "the progress line on stderr (-q turns it off)",
    "sample_seconds": "how often the samples time series in crawl.db is written",
    "metrics_port": "serve Prometheus metrics at http://127.0.0.1:PORT/metrics",
    "sitemaps": "sitemaps (or sitemap indexes) whose URLs are crawled, with or without seeds;"
    " repeatable",
    "max_sitemap_depth": "how deep sitemap indexes may nest (0: only the named sitemaps)",
    "strip_params": "query parameters dropped from URLs (a trailing * matches a prefix; any"
    " case; also as ;jsessionid= path parameters)",
    "sort_query_hosts": "hosts whose query parameters are sorted ('.example.com': the domain)",
    "query_order": "'ignored': a URL linked with its query parameters in another order is seen"
    " (the request keeps the first order); 'learned': kept apart until a host shows order"
    " changes nothing",
    "fold_index_html": "/dir/index.html is the same URL as /dir/",
    "fold_trailing_slash": "/dir/ is the same URL as /dir",
    "bloom_expected_urls": "URLs the Bloom filter in front of the seen set is sized for"
    " (0: no filter)",
    "bloom_fp_rate": "the Bloom filter's false-positive rate",
    "near_duplicate_bits": "simhash bits two near-duplicate pages may differ in",
    "near_duplicate_max_pages": "fingerprints the near-duplicate index keeps; past it pages are"
    " compared but not stored (dedup.near_index_full)",
    "max_pages_per_host_per_day": "pages fetched per host per UTC day; at the cap the host waits"
    " for the next day (budget_host_day)",
    "max_bytes": "stop leasing after this many bytes downloaded",
    "max_path_repeats": "repeats of a run of path segments allowed (/a/b/a/b/a/b repeats a/b"
    " three times: path_repeat)",
    "max_query_params": "query parameters allowed in a URL (query_params)",
    "max_urls_per_template": "new URLs per host per URL template, digits as {n} and tokens as"
    " {id} (budget_template)",
    "exclude": "URL patterns never crawled: '[HOST_GLOB ]GLOB' or '[HOST_GLOB ]re:REGEX' over"
    " path+query (excluded_pattern); repeatable",
    "include": "when given, only links matching one of these patterns (as exclude's) are"
    " followed, seeds always (not_included); --no-parent adds the seeds' directories",
    "discovery_window": "pages per window in which a host's new-URL ratio is measured",
    "discovery_trap_ratio": "a host at this many new URLs per page whose ratio does not fall is"
    " flagged a likely trap",
    "trap_priority_penalty": "priority points a flagged host's new URLs sink (10: one depth)",
    "trap_sample": "pages of a URL family sampled to judge it a trap by yield (0: off)",
    "trap_sibling_share": "share of a family's sampled pages that are near a sibling, for a trap",
    "trap_sibling_new_pairs": "word pairs of its own a page may have and still count as near its"
    " sibling",
    "learn_url_equivalence": "learn per host which query parameters and orders change nothing,"
    " and crawl one form of each URL",
    "continuous": "keep running and revisit fetched URLs at their adaptive intervals",
    "revisit_min_interval": "the shortest revisit interval, seconds",
    "revisit_max_interval": "the longest revisit interval, seconds",
    "revisit_initial_interval": "a page's first revisit interval (before its changes are seen)",
    "revisit_gone_interval": "how often a URL that answered 410 Gone is asked again",
    "revisit_missing_interval": "how often a URL that answered 404 Not Found is asked again",
    "revisit_error_interval": "how often a URL is asked again after its tries ended on server"
    " errors (5xx) or throttling",
    "revisit_failed_interval": "how often a URL is asked again after its tries got no answer"
    " (connection, DNS, timeout)",
    "revisit_value_points": "priority points that double a revisit's wait (or halve it, ahead"
    " of a depth-1 page): important pages come back sooner, within 4x either way; 0 turns"
    " value off",
    "retire_after_passes": "a URL no page or sitemap linked for this many revisit_max_interval"
    " passes is retired at its next revisit (0: never)",
    "max_host_slowdown": "the most a host whose pages are errors or duplicates has its"
    " politeness gap multiplied by (1: off)",
    "revisit_share": "share of a host's leases that go to due revisits when it has new URLs too",
    "priority_policy": "score (depth, sitemap hints, patterns, in-links) or aopic (cash)",
    "priority_patterns": "'POINTS [HOST_GLOB ]PATTERN' entries: URLs matching go earlier"
    " (positive) or later",
    "inlink_weight": "priority points (earlier) each further page linking to a queued URL adds",
    "inlink_cap": "pages whose links to a URL count toward its priority",
    "aopic_tax": "share of a page's cash given to the virtual Lambda page (aopic)",
    "path_ascending": "a fetched /a/b/page also queues /a/b/, /a/ and /",
    "page_requisites": "also fetch what pages embed (stylesheets and what they import, scripts,"
    " images, media, fonts), at the page's own depth, so archived pages replay as they looked",
    "max_requisites_per_page": "requisites admitted from one page at most (page_requisites)",
    "extract": "MODULE:FUNCTION called with each parsed page; the dicts it returns are stored as"
    " items (export --what items)",
    "render": "render pages that need JavaScript in headless Chromium: never, auto (a page whose"
    " parse found little text or no links, or an app shell) or always (render_hosts' pages);"
    " needs Playwright (pip install 'crawlspace[render]') and the system's chromium",
    "render_hosts": "HOST[:PORT] whose HTML pages render always renders (none named: every host)",
    "render_timeout": "seconds one render may take; past it the browser is killed and the page"
    " kept as fetched",
    "render_resources": "renders fetch images, media and fonts too",
    "render_memory_mb": "MB of private memory the whole browser may use; past it the render"
    " fails and the browser is restarted",
    "render_max_pages_per_host": "pages of one host rendered at most",
    "render_max_seconds_per_host": "browser seconds spent rendering one host's pages at most",
    "render_max_pages": "pages rendered at most in the whole crawl, every worker together",
    "render_max_seconds": "browser seconds spent rendering at most in the whole crawl, every"
    " worker together (a render already running when it runs out finishes)",
    "render_min_text": "render auto renders a page whose visible text is shorter than this"
    " (characters)",
    "render_min_links": "render auto renders a page with fewer links than this",
    "render_skip_hosts": "HOST[:PORT] render auto never renders",
    "host_priority_aging": "seconds a ready host waits that count as one priority band across"
    " hosts (0: oldest first)",
}


def _shown(name: str, value: Any) -> str:
    if name in _SHOWN_DEFAULTS:
        return _SHOWN_DEFAULTS[name]
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return json.dumps([str(v) for v in value]) if value else "none"
    if isinstance(value, float) and value.is_integer():
        return f"{value:g}"
    return str(value)


def rows() -> Iterator[tuple[str, str, str, str]]:
    """(TOML key, flag or '', default as shown, meaning) of every setting, in config.py's
    order."""
    defaults = CrawlConfig()
    for field in dataclasses.fields(CrawlConfig):
        name = field.name
        yield name, FLAGS.get(name, ""), _shown(name, getattr(defaults, name)), HELP[name]


def markdown_table() -> str:
    """The settings table of docs/options.md."""
    lines = ["| TOML key | flag | default | meaning |", "|---|---|---|---|"]
    for key, flag, default, meaning in rows():
        shown = default if key in _SHOWN_DEFAULTS else f"`{default}`"
        cells = (f"`{key}`", f"`{flag}`" if flag else "", shown, meaning)
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def text_table(stored: Mapping[str, Any] | None = None) -> str:
    """``crawlspace config``: one paragraph per setting; given a crawl's ``stored`` settings
    (crawl/settings.py stored_form), what the crawl uses where it was stored."""
    out = []
    defaults = CrawlConfig()
    for key, flag, default, meaning in rows():
        head = f"{key}" + (f"  ({flag})" if flag else "")
        if stored is not None and key in stored:
            value = stored[key]
            value = tuple(value) if isinstance(value, list) else value
            if key in _SHOWN_DEFAULTS:  # a machine's or a version's value, as stored
                shown, same = str(value), str(value) == str(getattr(defaults, key))
            else:
                shown = _shown(key, value)
                same = shown == default
            head += f"  this crawl: {shown}" + ("" if same else f" (default: {default})")
        else:
            head += f"  default: {default}"
        out.append(f"{head}\n    {meaning}")
    return "\n".join(out) + "\n"
