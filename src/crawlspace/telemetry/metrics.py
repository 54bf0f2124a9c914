"""Prometheus metrics of a running crawl (prometheus_client), served on 127.0.0.1 only.

Counters count what this process did (Prometheus convention: a counter starts at zero when the
process starts and ``rate()`` copes with the reset); gauges describe the crawl directory as a
whole and are refreshed by the sampler every ``sample_seconds``. Not exported, and why:
due-to-lease lag (the store's lease() does not report how late a host was taken) and parser
backlog (pages are parsed inline in the fetch task, so there is no queue to measure).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from crawlspace.plans import Outcome
from crawlspace.records import Completion

# Per-host labels would give an unbounded number of series on a large crawl; a fixed number of
# hash buckets still shows one host (or a few) failing while aggregates look healthy.
HOST_BUCKETS = 16
# Fetch durations, seconds: from a fast loopback answer to the default 60 s total timeout.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
LOOPBACK = "127.0.0.1"


def status_class(status: int) -> str:
    return f"{status // 100}xx" if 100 <= status <= 599 else "other"


def host_bucket(host_key: str) -> str:
    return str(zlib.crc32(host_key.encode("utf-8")) % HOST_BUCKETS)


class CrawlMetrics:
    """The metric families of one crawl, in their own registry (no process-global state)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.fetches = Counter(
            "crawlspace_fetches",
            "HTTP responses stored, by status class and host bucket (crc32(host) mod 16)",
            ["status_class", "host_bucket"],
            registry=r,
        )
        self.bytes = Counter(
            "crawlspace_fetched_bytes", "Response body bytes stored (after decoding)", registry=r
        )
        self.duration = Histogram(
            "crawlspace_fetch_duration_seconds",
            "Time from request to the end of the response body",
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.completions = Counter(
            "crawlspace_completions",
            "Page leases completed, by the URL's next state",
            ["state"],
            registry=r,
        )
        self.retries = Counter(
            "crawlspace_retries",
            "Page visits put back in the queue to retry",
            ["reason"],
            registry=r,
        )
        self.failures = Counter(
            "crawlspace_failures", "URLs given up on, by reason", ["reason"], registry=r
        )
        self.rejections = Counter(
            "crawlspace_links_rejected", "Links not enqueued, by reason", ["reason"], registry=r
        )
        self.expired = Counter(
            "crawlspace_leases_expired", "Leases that outlived their deadline", registry=r
        )
        self.queued = Gauge(
            "crawlspace_frontier_queued", "URLs waiting in the frontier", registry=r
        )
        self.ready_hosts = Gauge(
            "crawlspace_ready_hosts", "Hosts whose next request may start now", registry=r
        )
        self.in_flight = Gauge("crawlspace_leases_in_flight", "Leases being visited", registry=r)
        self.admitted = Gauge(
            "crawlspace_urls_admitted", "URLs ever admitted to the frontier", registry=r
        )
        self.robots = Gauge(
            "crawlspace_robots_hosts", "Hosts by robots.txt outcome", ["outcome"], registry=r
        )
        self.duplicates = Gauge(
            "crawlspace_duplicate_pages",
            "Pages whose extracted text equals an earlier page's (exact duplicates)",
            registry=r,
        )
        self.duplicate_ratio = Gauge(
            "crawlspace_duplicate_ratio", "Exact duplicates / pages with text", registry=r
        )
        self.discovery_ratio = Gauge(
            "crawlspace_discovery_ratio",
            "New URLs admitted per page fetched over the last sample interval",
            registry=r,
        )
        self.pages_per_second = Gauge(
            "crawlspace_pages_per_second", "Pages stored per second, last interval", registry=r
        )
        # The rendering tier (crawl/render_visit.py): pages by how their render ended
        # ("rendered", or why it failed), the browser's time, its requests and their bytes.
        self.renders = Counter(
            "crawlspace_renders", "Pages rendered, by outcome", ["outcome"], registry=r
        )
        self.renders_skipped = Counter(
            "crawlspace_renders_skipped",
            "Pages that needed rendering and were not, by why (a budget spent, a host whose"
            " renders added nothing)",
            ["reason"],
            registry=r,
        )
        self.render_seconds = Counter(
            "crawlspace_render_seconds", "Browser time spent rendering pages", registry=r
        )
        self.render_requests = Counter(
            "crawlspace_render_requests", "Requests rendered pages made (sent)", registry=r
        )
        self.render_bytes = Counter(
            "crawlspace_render_bytes", "Body bytes rendered pages' requests fetched", registry=r
        )
        self._server: WSGIServer | None = None
        self._thread: Thread | None = None

    def observe_completion(
        self, host_key: str, completion: Completion, outcome: Outcome | None = None
    ) -> None:
        self.completions.labels(completion.state).inc()
        fetch = completion.fetch
        if fetch is not None:
            self.fetches.labels(status_class(fetch.status), host_bucket(host_key)).inc()
            self.bytes.inc(fetch.bytes)
            self.duration.observe(fetch.duration_ms / 1000.0)
        if completion.state == "queued":
            self.retries.labels(completion.reason or "unknown").inc()
        elif completion.state == "failed":
            self.failures.labels(completion.reason or "unknown").inc()
        engine = outcome.rejections if outcome is not None else {}
        for rejections in (completion.rejections, engine):
            for reason, count in rejections.items():
                if count:
                    self.rejections.labels(reason).inc(count)
        counters = completion.counters
        if "render.skipped" in counters:
            for name in counters:
                if name.startswith("render.skipped."):
                    self.renders_skipped.labels(name.removeprefix("render.skipped.")).inc()
        if "render.ms" in counters:
            self._observe_render(counters)

    def _observe_render(self, counters: Mapping[str, int]) -> None:
        if counters.get("render.pages"):
            self.renders.labels("rendered").inc()
        for name in counters:
            if name.startswith("render.failed."):
                self.renders.labels(name.removeprefix("render.failed.")).inc()
        self.render_seconds.inc(counters["render.ms"] / 1000.0)
        self.render_requests.inc(counters.get("render.requests", 0))
        self.render_bytes.inc(counters.get("render.bytes", 0))

    def serve(self, port: int) -> int:
        """Start the HTTP endpoint on loopback; returns the bound port (``port=0`` picks one)."""
        server, thread = start_http_server(port, addr=LOOPBACK, registry=self.registry)
        self._server, self._thread = server, thread
        return int(server.server_address[1])

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
