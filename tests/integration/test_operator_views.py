"""Operator views of a real crawl: sampled time series, Prometheus metrics, the live dashboard in a
headless browser (Debian's chromium via Playwright), the offline HTML report, Parquet exports and
WARC interop with pywb's indexer.

One crawl of a loopback web farm runs as a subprocess (`crawl --dashboard`, metrics on) for the
whole module: the live tests watch it while it runs, the others read the finished directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from crawlspace.dashboard import write_report
from crawlspace.dashboard.server import DashboardServer
from crawlspace.demo.webfarm import Response, WebFarm, html_site
from crawlspace.ops.export import iter_records
from crawlspace.ops.report import crawl_stats
from tests.webs import linked_pages, slow_site

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

# The budgets the dashboard lists under "Traps and demotions" (dashboard/static/dashboard.js).
TRAP_REASONS = (
    "depth",
    "path_repeat",
    "query_params",
    "budget_template",
    "excluded_pattern",
    "budget_host",
    "budget_host_day",
    "url_length",
    "trap_template",
    "trap_facets",
    "trap_loop",
    "canonical_variant",
    "equivalent_url",
)

PLOTS = (
    "plot-rate",
    "plot-queued",
    "plot-discovery",
    "plot-bytes",
    "plot-inflight",
    "plot-errors",
    "plot-latency",
    "plot-classes",
)
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CONFIG = """
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = 0.05
delay_factor = 1.0
concurrency = 8
scope = "any"
total_timeout = 10.0
sample_seconds = 0.1
metrics_port = 0
"""
SLOW = 0.3  # the slow host's response time: it paces the crawl to a few seconds


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _sites() -> dict[str, Any]:
    pages = linked_pages(20)
    # Exact duplicates under other URLs, and links to pages that do not exist (404s).
    pages["/copy-a.html"] = pages["/p3.html"]
    pages["/copy-b.html"] = pages["/p3.html"]
    pages["/p0.html"] += '<a href="/copy-a.html">a</a><a href="/copy-b.html">b</a>'
    pages["/p0.html"] += '<a href="/gone1.html">x</a><a href="/gone2.html">y</a>'
    return {
        "fast": html_site("fast", pages),
        "other": html_site(
            "other",
            linked_pages(10),
            robots="User-agent: *\nDisallow: /p9.html\n",
            extra={"/p5.html": Response(410, {}, b"gone")},
        ),
        "slow": slow_site("slow", 6, SLOW),
    }


def _scrape(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=5) as answer:
        text = answer.read().decode()
    values: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = tuple(sorted(sample.labels.items()))
            values.setdefault(sample.name, {})[key] = sample.value
    return values


@dataclass
class Scrapes:
    """(stats before, metrics, stats after) rounds taken while the crawl runs."""

    rounds: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = field(
        default_factory=list
    )
    metrics_url: str | None = None


@dataclass
class LiveCrawl:
    out: Path
    proc: subprocess.Popen[bytes]
    dashboard_url: str
    farm: WebFarm
    scrapes: Scrapes
    scraper: threading.Thread

    def finish(self) -> Path:
        self.proc.wait(timeout=120)
        self.scraper.join(timeout=30)
        assert self.proc.returncode == 0, self.proc.stderr.read() if self.proc.stderr else ""
        return self.out


def _metrics_url(out: Path, proc: subprocess.Popen[bytes]) -> str | None:
    db_path = out / "crawl.db"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        if db_path.exists():
            db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
            try:
                row = db.execute("SELECT value FROM meta WHERE key = 'metrics_url'").fetchone()
            except sqlite3.OperationalError:
                row = None
            finally:
                db.close()
            if row:
                return str(row[0])
        time.sleep(0.02)
    return None


def _scrape_while_running(out: Path, proc: subprocess.Popen[bytes], scrapes: Scrapes) -> None:
    scrapes.metrics_url = _metrics_url(out, proc)
    if scrapes.metrics_url is None:
        return
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            before = crawl_stats(out)
            metrics = _scrape(scrapes.metrics_url)
            after = crawl_stats(out)
        except OSError:
            break  # the crawl ended and took its endpoint with it
        scrapes.rounds.append((before, metrics, after))
        time.sleep(0.05)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCrawl]:
    base = tmp_path_factory.mktemp("operator")
    out = base / "crawl"
    config = base / "crawl.toml"
    config.write_text(CONFIG)
    farm = WebFarm(_sites())
    farm.start()
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "crawlspace.cli",
            "crawl",
            "--out",
            str(out),
            "--config",
            str(config),
            "--dashboard",
            "--dashboard-port",
            str(port),
            "-q",
            *(farm.url(name, "/") for name in farm.names),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    scrapes = Scrapes()
    scraper = threading.Thread(target=_scrape_while_running, args=(out, proc, scrapes))
    scraper.start()
    crawl = LiveCrawl(out, proc, f"http://127.0.0.1:{port}/", farm, scrapes, scraper)
    try:
        yield crawl
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()
        scraper.join(timeout=30)
        farm.stop()


@pytest.fixture(scope="module")
def finished(live: LiveCrawl) -> Path:
    return live.finish()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("chromium is not installed (apt-get install -y chromium; .ci/run does this)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield instance
        instance.close()


def _open(browser: Any, url: str) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.goto(url)
    return page, problems


def _wait_http(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"dashboard at {url} never answered")


# -- while the crawl runs --------------------------------------------------------------------


def test_dashboard_keeps_updating_while_the_crawl_runs(browser: Any, live: LiveCrawl) -> None:
    # `browser` first: chromium starts before the crawl, so its start-up eats none of the crawl.
    _wait_http(live.dashboard_url, live.proc)
    page, problems = _open(browser, live.dashboard_url + "?refresh=200")
    page.wait_for_function("Number(document.body.dataset.updates || 0) >= 1", timeout=10_000)
    first = int(page.evaluate("document.body.dataset.pages"))
    page.wait_for_function(
        f"Number(document.body.dataset.pages) > {first}"
        " && Number(document.body.dataset.updates) >= 3",
        timeout=15_000,
    )
    assert live.proc.poll() is None or first < int(page.evaluate("document.body.dataset.pages"))
    assert problems == []
    page.close()


def test_metrics_scraped_during_the_crawl_agree_with_stats(finished: Path, live: LiveCrawl) -> None:
    rounds = live.scrapes.rounds
    assert live.scrapes.metrics_url is not None
    assert live.scrapes.metrics_url.startswith("http://127.0.0.1:")
    assert len(rounds) >= 5

    def pages(metrics: dict[str, Any]) -> int:
        return int(sum(metrics.get("crawlspace_fetches_total", {}).values()))

    def by_class(metrics: dict[str, Any]) -> dict[str, int]:
        out: dict[str, int] = {}
        for labels, value in metrics.get("crawlspace_fetches_total", {}).items():
            cls = dict(labels)["status_class"]
            out[cls] = out.get(cls, 0) + int(value)
        return out

    def stats_by_class(stats: dict[str, Any]) -> dict[str, int]:
        out: dict[str, int] = {}
        for status, count in stats["statuses"].items():
            out[f"{status[0]}xx"] = out.get(f"{status[0]}xx", 0) + count
        return out

    exact = 0
    for before, metrics, after in rounds:
        assert before["pages"] <= pages(metrics) <= after["pages"] or (
            pages(metrics) == before["pages"] - 1  # scraped between a commit and its hook
        )
        if before == after and after["pages"] > 0:
            # Nothing committed during the scrape: the endpoint must agree exactly.
            assert pages(metrics) == after["pages"]
            assert metrics["crawlspace_fetched_bytes_total"][()] == after["bytes"]
            assert by_class(metrics) == stats_by_class(after)
            exact += 1
    assert exact >= 1
    last = rounds[-1][1]
    assert last["crawlspace_fetch_duration_seconds_count"][()] == pages(last)
    gauges = {"crawlspace_frontier_queued", "crawlspace_ready_hosts", "crawlspace_leases_in_flight"}
    assert gauges | {"crawlspace_discovery_ratio", "crawlspace_duplicate_ratio"} <= set(last)
    assert last["crawlspace_robots_hosts"][(("outcome", "rules"),)] >= 1


# -- after the crawl ---------------------------------------------------------------------------


def test_samples_are_written_during_the_crawl(finished: Path) -> None:
    db = sqlite3.connect(finished / "crawl.db")
    rows = db.execute("SELECT ts, pages, queued, discovered, errors FROM samples ORDER BY ts")
    samples = rows.fetchall()
    db.close()
    assert len(samples) >= 10
    stats = crawl_stats(finished)
    _ts, pages, queued, _, errors = samples[-1]
    assert (pages, queued) == (stats["pages"], 0)
    assert errors >= 3  # two 404s and a 410
    assert [s[1] for s in samples] == sorted(s[1] for s in samples)


def test_dashboard_renders_plots_and_sorts_hosts(finished: Path, browser: Any) -> None:
    with DashboardServer(finished) as server:
        page, problems = _open(browser, server.url)
        page.wait_for_function("Number(document.body.dataset.updates || 0) >= 1", timeout=10_000)
        for plot in PLOTS:
            assert page.locator(f"#{plot} canvas").count() == 1
            assert int(page.get_attribute(f"#{plot}", "data-points") or 0) >= 10
        # The rates are the cumulative samples' change over each interval.
        with sqlite3.connect(finished / "crawl.db") as db:
            rows = db.execute("SELECT ts, bytes, errors, in_flight FROM samples ORDER BY ts")
            ts, nbytes, errors, in_flight = zip(*rows.fetchall(), strict=True)
        for plot, totals in (("plot-bytes", nbytes), ("plot-errors", errors)):
            peak = max(
                (totals[i] - totals[i - 1]) / (ts[i] - ts[i - 1])
                for i in range(1, len(ts))
                if ts[i] > ts[i - 1]
            )
            shown = float(page.get_attribute(f"#{plot}", "data-peak") or "nan")
            assert shown == pytest.approx(peak, rel=1e-6)
            assert peak > 0
        assert float(page.get_attribute("#plot-inflight", "data-peak") or 0) == max(in_flight)
        with sqlite3.connect(finished / "crawl.db") as db:
            p95 = max(r[0] for r in db.execute("SELECT latency_p95_ms FROM samples") if r[0])
            classes = db.execute(
                "SELECT status_2xx, status_4xx FROM samples ORDER BY ts DESC LIMIT 1"
            ).fetchone()
            statuses = dict(db.execute("SELECT status / 100, COUNT(*) FROM fetches GROUP BY 1"))
        # The slow host's pages take SLOW seconds: its fetch times are in the p95 line.
        assert p95 >= SLOW * 1000 * 0.9
        assert float(page.get_attribute("#plot-latency", "data-peak") or 0) == p95
        assert classes == (statuses[2], statuses[4])  # the last sample's totals are the crawl's
        hosts = page.locator("#hosts tbody tr")
        assert hosts.count() == 3

        def column(index: int) -> list[str]:
            cells = page.locator(f"#hosts tbody tr td:nth-child({index})").all_inner_texts()
            return [c.strip() for c in cells]

        page.click("#hosts th[data-key=host_key]")
        names = column(1)
        assert names == sorted(names)
        page.click("#hosts th[data-key=host_key]")
        assert column(1) == sorted(names, reverse=True)
        page.click("#hosts th[data-key=fetched]")
        fetched = [int(v.replace(",", "")) for v in column(2)]
        assert fetched == sorted(fetched, reverse=True)
        assert page.get_attribute("#hosts th[data-key=fetched]", "aria-sort") == "descending"
        assert page.locator("#errors tbody tr").count() >= 3
        stats = crawl_stats(finished)
        flagged = len(stats["traps"].get("flagged_hosts", []))
        flagged += len(stats["traps"].get("flagged_families", []))
        trap_rows = flagged + sum(1 for reason in TRAP_REASONS if stats["rejections"].get(reason))
        assert page.locator("#traps tbody tr").count() == trap_rows
        assert "404" in page.inner_text("#status-mix")
        shot = finished.parent / "dashboard.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"dashboard screenshot: {shot}")
        assert shot.stat().st_size > 10_000
        assert problems == []
        page.close()


def test_report_is_self_contained_and_opens_offline(finished: Path, browser: Any) -> None:
    report = write_report(finished, finished.parent / "report.html")
    text = report.read_text()
    # No attribute may load anything: every script and style is inline.
    loads = r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=[\"']?(?![\"']?data:)"
    assert re.findall(loads, text) == []
    assert re.findall(r"\b(?:src|href)=[\"']?https?:", text) == []
    context = browser.new_context()
    requests: list[str] = []
    context.route(
        "**/*",
        lambda route: (
            requests.append(route.request.url),
            route.continue_() if route.request.url.startswith("file:") else route.abort(),
        ),
    )
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.goto(report.as_uri())
    page.wait_for_function("Number(document.body.dataset.updates || 0) >= 1", timeout=10_000)
    assert [u for u in requests if not u.startswith("file:")] == []
    for plot in PLOTS:
        assert page.locator(f"#{plot} canvas").count() == 1
    assert page.locator("#hosts tbody tr").count() == 3
    assert problems == []
    context.close()


def test_parquet_export_of_any_kind_and_duplicates(finished: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    for what in ("urls", "fetches", "links", "duplicates"):
        target = finished.parent / f"{what}.parquet"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "crawlspace.cli",
                "export",
                str(finished),
                "--what",
                what,
                "--format",
                "parquet",
                "--output",
                str(target),
            ],
            check=True,
            timeout=60,
        )
        rows, expected = pq.read_table(target).to_pylist(), list(iter_records(finished, what))
        assert len(rows) == len(expected), what
        for row, want in zip(rows, expected, strict=True):
            assert row == want, (
                what,
                {k: (row.get(k), v) for k, v in want.items() if row.get(k) != v},
            )
    duplicates = pq.read_table(finished.parent / "duplicates.parquet").to_pylist()
    urls = {row["url"].rsplit("/", 1)[1] for row in duplicates}
    assert {"p3.html", "copy-a.html", "copy-b.html"} <= urls
    assert len({row["text_sha256"] for row in duplicates}) >= 1


def _pywb_indexer() -> str | None:
    candidates = [os.environ.get("PYWB_BIN", ""), str(Path(__file__).parents[2] / ".pywb-venv/bin")]
    for folder in candidates:
        if folder and (Path(folder) / "cdx-indexer").exists():
            return str(Path(folder) / "cdx-indexer")
    return shutil.which("cdx-indexer")


def test_pywb_indexer_accepts_the_warc_files_and_finds_every_url(finished: Path) -> None:
    indexer = _pywb_indexer()
    if indexer is None:
        pytest.skip("pywb is not installed (.ci/run installs it into .pywb-venv, see PYWB_BIN)")
    result = subprocess.run(
        [indexer, "-j", str(finished / "warc")],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    index: dict[tuple[str, str], dict[str, Any]] = {}
    for line in result.stdout.splitlines():
        _, _, fields = line.split(" ", 2)
        entry = json.loads(fields)
        index[(entry["filename"], entry["offset"])] = entry
    fetches = list(iter_records(finished, "fetches"))
    assert fetches
    for fetch in fetches:
        entry = index[(fetch["warc_file"], str(fetch["warc_offset"]))]
        assert entry["url"] == fetch["url"]
        assert entry["status"] == str(fetch["status"])


def test_dashboard_answers_only_to_loopback_names(finished: Path) -> None:
    # DNS rebinding: a site the operator visits could point its name at 127.0.0.1.
    with DashboardServer(finished) as server:
        api = f"{server.url}api/snapshot"
        for host, expected in [
            (None, 200),
            (f"localhost:{server.port}", 200),
            (f"attacker.example:{server.port}", 403),
            ("attacker.example", 403),
        ]:
            request = urllib.request.Request(api)
            if host is not None:
                request.add_header("Host", host)
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    status, frame = response.status, response.headers["X-Frame-Options"]
            except urllib.error.HTTPError as exc:
                status, frame = exc.code, exc.headers["X-Frame-Options"]
            assert status == expected, host
            if status == 200:
                assert frame == "DENY"
