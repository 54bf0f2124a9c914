"""Telemetry on a virtual clock: the sampled series, the Prometheus families, the report page."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import sqlite3
from pathlib import Path

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.config_sources import build_config
from crawlspace.dashboard.data import snapshot
from crawlspace.dashboard.page import report_page, served_page
from crawlspace.errors import ConfigError
from crawlspace.plans import Outcome
from crawlspace.records import Completion, FetchRecord, UrlCandidate
from crawlspace.store.sqlite.store import SqliteStore
from crawlspace.telemetry import Telemetry
from crawlspace.telemetry.metrics import HOST_BUCKETS, CrawlMetrics, host_bucket, status_class

HOST = "http://a.test"


def _fetch(path: str, status: int = 200, text: str | None = "t", size: int = 100) -> Completion:
    record = FetchRecord(
        url=f"{HOST}{path}",
        final_url=f"{HOST}{path}",
        status=status,
        fetched_at=0.0,
        duration_ms=20.0,
        content_type="text/html",
        bytes=size,
        truncated=False,
        content_sha256=None,
        warc_file=None,
        warc_offset=None,
        warc_length=None,
        text_sha256=None if text is None else hashlib.sha256(text.encode()).hexdigest(),
    )
    return Completion("fetched", fetch=record, rejections={"scope": 2})


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    db = SqliteStore(tmp_path / "crawl.db")
    db.add([UrlCandidate(f"{HOST}/{i}", HOST, 1) for i in range(10)], 0.0)
    return db


def _rows(store: SqliteStore) -> list[sqlite3.Row]:
    db = sqlite3.connect(store.path)
    db.row_factory = sqlite3.Row
    rows = db.execute("SELECT * FROM samples ORDER BY ts").fetchall()
    db.close()
    return rows


def test_samples_follow_commits_and_the_clock(store: SqliteStore) -> None:
    telemetry = Telemetry(CrawlConfig(sample_seconds=5.0), store)
    telemetry.tick(1000.0, 0)  # the first tick samples at once
    telemetry.tick(1004.9, 0)  # not yet due
    for i in range(4):
        telemetry.on_commit(HOST, _fetch(f"/{i}", text="same"), outcome=Outcome())
    telemetry.on_commit(HOST, _fetch("/x", status=404, text=None), outcome=Outcome())
    telemetry.on_commit(HOST, _fetch("/stale"), outcome=None)  # refused by the store
    telemetry.on_commit(HOST, Completion("failed", reason="timeout"), outcome=Outcome())
    telemetry.tick(1005.0, 3)
    telemetry.close(1006.0)
    first, second, last = _rows(store)
    assert first["ts"] == 1000.0
    assert first["pages"] == 0
    assert first["discovery_ratio"] is None
    assert second["pages"] == 5
    assert second["pages_per_s"] == pytest.approx(1.0)
    assert second["in_flight"] == 3
    assert second["queued"] == 10
    assert second["discovered"] == 10
    assert second["discovery_ratio"] == 0.0  # five pages, no new URL
    assert second["errors"] == 2  # the 404 and the failed visit
    assert second["bytes"] == 500
    assert second["duplicates"] == 3  # four pages with one text
    # The closing sample comes 1 s later: its rate is spread over a whole interval.
    assert last["pages_per_s"] == 0.0
    assert last["in_flight"] == 0


def test_totals_continue_from_what_crawl_db_holds(store: SqliteStore) -> None:
    db = sqlite3.connect(store.path)
    db.executemany(
        "INSERT INTO fetches (url_id, version, url, final_url, status, fetched_at, duration_ms,"
        " bytes, truncated, text_sha256, noindex) VALUES (?, 1, 'u', 'u', ?, 0, 1, 10, 0, ?, 0)",
        [(1, 200, "aa"), (2, 500, "aa"), (3, 200, None)],
    )
    db.commit()
    db.close()
    telemetry = Telemetry(CrawlConfig(), store)
    telemetry.tick(0.0, 0)
    assert (telemetry.pages, telemetry.bytes, telemetry.errors) == (3, 30, 1)
    assert telemetry.duplicates == 1
    assert _rows(store)[-1]["pages"] == 3


def test_metric_families_and_labels() -> None:
    metrics = CrawlMetrics()
    metrics.observe_completion(HOST, _fetch("/a"))
    metrics.observe_completion(HOST, _fetch("/b", status=503))
    metrics.observe_completion(HOST, Completion("queued", reason="server_error"))
    metrics.observe_completion(HOST, Completion("failed", reason="timeout"))
    value = metrics.registry.get_sample_value
    bucket = host_bucket(HOST)
    assert value("crawlspace_fetches_total", {"status_class": "2xx", "host_bucket": bucket}) == 1
    assert value("crawlspace_fetches_total", {"status_class": "5xx", "host_bucket": bucket}) == 1
    assert value("crawlspace_fetched_bytes_total") == 200
    assert value("crawlspace_fetch_duration_seconds_count") == 2
    assert value("crawlspace_fetch_duration_seconds_bucket", {"le": "0.025"}) == 2
    assert value("crawlspace_retries_total", {"reason": "server_error"}) == 1
    assert value("crawlspace_failures_total", {"reason": "timeout"}) == 1
    assert value("crawlspace_links_rejected_total", {"reason": "scope"}) == 4
    assert value("crawlspace_completions_total", {"state": "fetched"}) == 2


def test_status_classes_and_bounded_host_buckets() -> None:
    assert [status_class(s) for s in (200, 301, 404, 503, 99, 600)] == [
        "2xx",
        "3xx",
        "4xx",
        "5xx",
        "other",
        "other",
    ]
    buckets = {host_bucket(f"http://h{i}.test") for i in range(1000)}
    assert buckets == {str(i) for i in range(HOST_BUCKETS)}


def test_config_keys_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[crawl]\nsample_seconds = 0.5\nmetrics_port = 9101\n")
    config = build_config(path)
    assert (config.sample_seconds, config.metrics_port) == (0.5, 9101)


def test_report_page_embeds_data_safely(store: SqliteStore, tmp_path: Path) -> None:
    Telemetry(CrawlConfig(), store).tick(1.0, 0)
    data = snapshot(tmp_path)
    data["dir"] = "</script><script>alert(1)</script>"
    page = report_page(data)
    assert "</script><script>alert(1)" not in page
    embedded = re.search(r"window\.CRAWLSPACE_SNAPSHOT = (.*?);</script>", page)
    assert embedded is not None
    assert json.loads(embedded.group(1))["dir"] == data["dir"]
    assert 'src="static/uPlot.iife.min.js"' in served_page()


def test_snapshot_of_a_directory_without_a_crawl(tmp_path: Path) -> None:
    assert snapshot(tmp_path)["ready"] is False


def test_a_busy_metrics_port_is_a_clear_error(store: SqliteStore) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        telemetry = Telemetry(CrawlConfig(metrics_port=port), store)
        with pytest.raises(ConfigError, match=f"--metrics-port {port}"):
            telemetry.tick(0.0, 0)


def test_a_renders_counters_reach_prometheus() -> None:
    """crawl/render_visit.py's counters of a page's render, as the metrics count them."""
    from crawlspace.records import Completion
    from crawlspace.telemetry.metrics import CrawlMetrics

    metrics = CrawlMetrics()
    rendered = {"render.pages": 1, "render.ms": 1500, "render.requests": 3, "render.bytes": 900}
    failed = {"render.failed": 1, "render.failed.timeout": 1, "render.ms": 30000}
    skipped = {"render.skipped": 1, "render.skipped.crawl_seconds": 1}
    for counters in (rendered, failed, {}, skipped, skipped):
        metrics.observe_completion("http://a.example", Completion("fetched", counters=counters))
    value = metrics.registry.get_sample_value
    assert value("crawlspace_renders_total", {"outcome": "rendered"}) == 1
    assert value("crawlspace_renders_total", {"outcome": "timeout"}) == 1
    assert value("crawlspace_render_seconds_total") == 31.5
    assert value("crawlspace_render_requests_total") == 3
    assert value("crawlspace_render_bytes_total") == 900
    assert value("crawlspace_renders_skipped_total", {"reason": "crawl_seconds"}) == 2
