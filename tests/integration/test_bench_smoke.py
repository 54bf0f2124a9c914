"""CI smoke runs of the benchmarks' --quick modes: every crawler runs, the tables print.

No timing asserts: shared CI runners make throughput numbers meaningless as pass/fail gates.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "crawl_vs_scrapy.py"


def _run_table(script: Path, *args: str, skip: str, timeout: float = 180) -> dict[str, list[str]]:
    """Run a benchmark ``script``; its table rows by first cell (the header row, which begins
    ``| {skip}``, left out)."""
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=SCRIPT.parent.parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {
        cells[0]: cells
        for line in done.stdout.splitlines()
        if line.startswith("| ") and not line.startswith(f"| {skip}")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    } | {"(output)": [done.stdout]}


def test_quick_benchmark_runs_every_crawler_and_prints_table_and_floor() -> None:
    if importlib.util.find_spec("scrapy") is None:
        pytest.skip("scrapy is not importable (pip install -e '.[bench]')")
    has_crawlee = importlib.util.find_spec("crawlee") is not None
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        timeout=180,  # ~5-15 s on an idle 2-core machine; generous for loaded CI runners
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "| crawler | runs | pages (median) | pages/s | CPU ms / page | CPU / floor |" in out
    assert "generated interlinked corpus" in out
    rows = {
        cells[0]: cells
        for line in out.splitlines()
        if line.startswith("| ")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    crawlers = ["crawlspace", "scrapy", *(["crawlee"] if has_crawlee else [])]
    for crawler in crawlers:
        row = rows[crawler]
        assert row[1] == "1", row
        assert int(row[2].replace(",", "")) > 0, row  # pages fetched
        assert float(row[4]) > 0, row  # CPU ms per page
        assert row[5].endswith("x"), row  # CPU per page as a multiple of the floor
        assert float(row[6]) > 0, row  # cores used: CPU seconds / wall seconds
        # Memory of the whole process tree was sampled: PSS shares the pages that RSS counts
        # in every process, so at every sample (and at the peaks) it is at most the RSS sum.
        tree_rss, tree_pss, largest = (float(c.replace(",", "")) for c in row[7:10])
        assert largest > 0, row
        assert 0 < tree_pss <= tree_rss, row
        assert row[10].endswith("%"), row  # coverage
        assert row[11] == "0", row  # nothing under robots.txt's Disallow was fetched
        assert f"run 1/1 {crawler}:" in done.stderr
    assert "crawlspace / Scrapy" in rows
    if has_crawlee:
        assert "crawlspace / crawlee" in rows
    else:
        assert "- crawlee: not importable" in out
    floor = [line for line in out.splitlines() if line.startswith("- **floor**")]
    assert len(floor) == 1, out
    assert "CPU ms/page" in floor[0]
    assert all(step in floor[0] for step in ("parse", "join", "text", "sha256", "gzip"))
    # Timed before the one round and after it; the median (the lower of two) is the one used.
    timings = floor[0].split("after each: ")[1].split(" ms")[0].split(", ")
    kept = floor[0].split("**")[3].split(" ")[0]
    assert len(timings) == 2, floor[0]
    assert kept == min(timings, key=float), floor[0]
    assert "- CPU per page as a multiple of the floor: crawlspace " in out
    assert "- crawlspace cores used: " in out


WORKERS_SCRIPT = SCRIPT.parent / "redis_workers_bench.py"


def test_quick_redis_workers_benchmark_prints_a_row_per_worker_count() -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    done = subprocess.run(
        [sys.executable, str(WORKERS_SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,  # 15-30 s on the loaded 2-core dev VM: 2 runs, 3 worker processes in all
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "| workers | runs | pages (median) | pages/s | scaling vs 1 |" in out
    rows = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in out.splitlines()
        if line.startswith("| ") and not line.startswith("| workers")
    ]
    assert [row[0] for row in rows] == ["1", "2"]
    for row in rows:
        assert int(row[2].replace(",", "")) > 0, row  # pages fetched through the shared frontier
    assert rows[0][4] == "1.00x"
    assert "run 1/1 2 worker(s):" in done.stderr


FRONTIER_SCRIPT = SCRIPT.parent / "frontier_store_bench.py"


def test_small_frontier_store_benchmark_prints_every_row() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(FRONTIER_SCRIPT),
            *("--hosts", "40", "--urls", "4000", "--hot", "400", "--cycles", "500"),
            *("--discover", "2", "--link-urls", "3200", "--extra-batch", "128", "--resume"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {
        cells[0]: cells[1:]
        for line in done.stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| operation")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    new_urls = next(v for k, v in rows.items() if k.startswith("enqueue-if-new (new URLs"))
    assert new_urls[0] == "4,000"
    mixed = next(v for k, v in rows.items() if "85% known" in k)
    assert mixed[0] == "3,200"
    assert int(rows["lease + complete cycles"][0].replace(",", "")) >= 500
    assert int(rows["lease + complete cycles, batch 128"][0].replace(",", "")) >= 500
    assert "resume in a new process: first lease after" in done.stdout


ENQUEUE_COST_SCRIPT = SCRIPT.parent / "enqueue_cost_bench.py"


def test_small_enqueue_cost_benchmark_checks_and_prints_every_layout(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ENQUEUE_COST_SCRIPT),
            *("--hosts", "50", "--urls", "6000", "--hot", "600"),
            *("--stream", "9600", "--merge-every", "4000", "--workdir", str(tmp_path)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # Each layout's replay is checked before it is printed: every URL leasable, every host
    # counter moved by the URLs it gained.
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {
        cells[0]: cells[1:]
        for line in done.stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| layout")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert len(rows) == 9, done.stdout
    for name, (rate, _, merges, _) in rows.items():
        assert int(rate.replace(",", "")) > 0, name
        deferred = "merge every" in name
        assert (merges != "0%") == deferred, (name, merges)
    # The bulk-loaded base is kept for the next run with the same sizes; the scratch copy is not.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "base-50-6000-600.db",
        "base-50-6000-600.queue-table.db",
    ]


PAIR_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "pair_trees.py"


def test_pair_trees_runs_both_sides_and_prints_the_ratio() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(PAIR_SCRIPT),
            "--base",
            "HEAD",
            "--generated",
            "--no-install",
            "--pairs",
            "1",
            "--max-pages",
            "60",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    sides = {line.split("|")[1].strip(): line for line in rows}
    assert {"A", "B", "B / A"} <= set(sides)
    for side in ("A", "B"):
        cells = [c.strip() for c in sides[side].strip("|").split("|")]
        assert cells[2] == "1"  # one run each
        assert int(cells[3].replace(",", "")) > 0  # it fetched pages
    assert "A (HEAD) run 1" in done.stderr
    assert "B (working tree) run 1" in done.stderr


BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def test_the_feed_and_index_cost_benchmark_prints_its_table() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "feed_index_bench.py"), "--generated", "--pairs", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| crawl, feed on |" in done.stdout
    assert "| `crawlspace index` afterwards |" in done.stdout
    assert "feed on run 1:" in done.stderr


@pytest.mark.skipif(
    not Path("/usr/share/doc/postgresql-doc-15/html").is_dir(),
    reason="postgresql-doc-15 is not installed (the search benchmark's corpus)",
)
def test_the_search_index_benchmark_runs_fts5() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "search_index_bench.py"),
            "--engines",
            "fts5",
            "--docs",
            "60",
            "--queries",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "fts5" in done.stdout


def test_the_render_benchmark_crawls_the_app_and_the_plain_site() -> None:
    if shutil.which("chromium") is None or importlib.util.find_spec("playwright") is None:
        pytest.skip("chromium or Playwright is not installed (.ci/run installs them)")
    script = SCRIPT.parent / "render_bench.py"
    done = subprocess.run(
        [sys.executable, str(script), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [
        line for line in done.stdout.splitlines() if line.startswith("| ") and "|---" not in line
    ]
    pages = {row.split("|")[1].strip(): int(row.split("|")[2]) for row in rows[1:]}
    # Both sites crawled in full: the app's pages were found only by rendering them.
    assert pages == {"plain HTML, no rendering": 13, "the same as an app, --render auto": 13}


THREADS_SCRIPT = SCRIPT.parent / "thread_cpu.py"
SMALL_CRAWL = ("--generated", "--max-pages", "150", "--hosts", "2")


def test_the_thread_cpu_table_names_the_loop_and_the_parse_workers() -> None:
    if not Path("/proc/self/task").is_dir():
        pytest.skip("thread_cpu.py reads /proc (Linux)")
    rows = _run_table(THREADS_SCRIPT, *SMALL_CRAWL, "--timeline", "0.1", skip="thread")
    assert {"crawl loop (main thread)", "parse worker 1", "all"} <= set(rows), rows
    assert float(rows["crawl loop (main thread)"][1]) > 0  # the loop did work
    assert "150 pages in" in rows["(output)"][0]
    # The timeline: a row per window from the start (its first cell the window's start).
    assert "## Cores used, each 0.1 s" in rows["(output)"][0]
    assert "0.0" in rows, rows
    assert float(rows["0.0"][1]) >= 0


CYCLE_SCRIPT = SCRIPT.parent / "host_cycle.py"


def test_the_host_cycle_table_has_every_step_and_both_sides_of_the_parse() -> None:
    rows = _run_table(CYCLE_SCRIPT, *SMALL_CRAWL, skip="step")
    for step in ("fetch (address token, request, body)", "parse round trip", "the job"):
        assert step in rows, rows
    # The stamps of both processes lined up: a job runs inside its round trip.
    assert 0 < float(rows["the job"][1]) <= float(rows["parse round trip"][1])
    assert float(rows["host's cycle (its last task started -> this one started)"][1]) > 0


PARSE_COST_SCRIPT = SCRIPT.parent / "parse_cost.py"
ONE_PASS = ["--rounds", "1", "--passes", "1"]


def test_the_parse_cost_pair_prints_both_sides_and_their_ratio() -> None:
    args = ("--base", "HEAD", "--generated", *ONE_PASS)
    rows = _run_table(PARSE_COST_SCRIPT, *args, skip="side", timeout=300)
    assert {"A", "B", "B / A"} <= set(rows), rows
    assert float(rows["A"][-1]) > 0  # the pages were parsed, on both sides
    assert float(rows["B"][-1]) > 0
    assert rows["B / A"][-1].endswith("x")


STORE_COST_SCRIPT = SCRIPT.parent / "store_cost.py"


def test_the_store_cost_pair_counts_statements_and_times_both_transactions() -> None:
    args = ("--base", "HEAD", "--rounds", "1", *SMALL_CRAWL)
    rows = _run_table(STORE_COST_SCRIPT, *args, skip="on the loop", timeout=300)
    output = rows["(output)"][0]
    assert output.count("150 pages, 1 timed run(s)") == 2, output  # both sides crawled
    assert float(rows["`complete_many`"][1]) > 0  # the loop's CPU in the group commit
    assert float(rows["`lease`"][2]) > 0
    # Every fetched page leaves its fetch row: one INSERT a page, counted exactly.
    fetch_rows = [line for line in output.splitlines() if "`INSERT INTO fetches" in line]
    assert fetch_rows, output
    assert all(line.startswith("| 1.00 |") for line in fetch_rows), fetch_rows


BUDGET_SCRIPT = SCRIPT.parent / "page_budget.py"


def test_the_page_budget_times_each_required_part_and_the_crawl() -> None:
    args = ("--generated", "--hosts", "2", "--pages", "60", "--repeat", "1", "--crawl-pages", "80")
    rows = _run_table(BUDGET_SCRIPT, *args, skip="part of a page", timeout=300)
    parts = [
        name for name in rows if name.startswith(("the floor", "an HTTP", "a durable", "the trip"))
    ]
    assert len(parts) == 4, rows
    # Each part did its work (a part that timed nothing would print 0.000).
    assert all(float(rows[name][1]) > 0 for name in parts), rows
    required = float(rows["**the required parts**"][1].strip("*"))
    assert abs(required - sum(float(rows[name][1]) for name in parts)) < 0.002
    # The budget is #29's 3x the floor, and what is left is the budget less the parts.
    floor = float(rows["the floor (floor.py)"][1])
    budget = float(rows["3x the floor (#29's budget)"][1])
    assert abs(budget - 3 * floor) < 0.002
    assert abs(float(rows["left for the crawl's own logic"][1]) - (budget - required)) < 0.002
    crawl = next(name for name in rows if name.startswith("crawlspace, one crawl"))
    assert "(80 pages)" in crawl  # the crawl ran to its limit
    assert abs(float(rows["its own logic today"][1]) - (float(rows[crawl][1]) - required)) < 0.002
