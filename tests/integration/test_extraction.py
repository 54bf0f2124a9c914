"""The extraction hook (`--extract MODULE:FUNCTION`, issue #32): each parsed page handed to the
user's function in the parse workers, what it returns stored as items and exported (JSON Lines,
CSV, Parquet); a hook that raises costs its page its items only; a hook that cannot be found is
refused in one line before anything is written; on `crawlspace crawl` and on workers."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import WebFarm, html_site
from tests.redis_servers import RedisDeployment
from tests.workers import cli

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # the hooks' module, tests/extract_hooks.py
PAGES = {
    "/": "<html><head><title>Shop</title></head><body><h1>Welcome</h1>"
    '<a href="/list">list</a> <a href="/sale">sale</a></body></html>',
    "/list": "<html><head><title>List</title></head><body><table>"
    '<tr class="product"><td class="name">Kettle</td><td class="price">24.5</td></tr>'
    '<tr class="product"><td class="name">Mug</td><td class="price">7</td></tr>'
    "</table></body></html>",
    "/sale": "<html><head><title>Sale</title></head><body><h1>Sale</h1></body></html>",
}
SETTINGS = '[crawl]\nallow_nets = ["127.0.0.0/8"]\nmin_delay = 0.0\ndelay_factor = 0.0\n'


def crawl(tmp_path: Path, farm: WebFarm, hook: str) -> tuple[Path, str]:
    tmp_path.mkdir(exist_ok=True)
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS)
    out = tmp_path / "out"
    command = [*cli("crawl", farm.url("shop", "/")), "--out", str(out), "--config", str(config)]
    done = subprocess.run(
        [*command, "--extract", hook, "-q"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out, done.stderr


def export(out: Path, fmt: str = "jsonl") -> str:
    command = [*cli("export", str(out)), "--what", "items", "--format", fmt]
    return subprocess.run(command, check=True, capture_output=True, text=True, timeout=60).stdout


def test_each_page_gives_its_items_and_they_export(tmp_path: Path) -> None:
    with WebFarm({"shop": html_site("shop", PAGES)}) as farm:
        out, _ = crawl(tmp_path, farm, "tests.extract_hooks:headings")
        base = farm.url("shop", "/").removesuffix("/")
    items = {
        i["page_url"].removeprefix(base): i for i in map(json.loads, export(out).split("\n")[:-1])
    }
    assert set(items) == {"/", "/list", "/sale"}
    assert (items["/"]["title"], items["/"]["h1"], items["/"]["links"]) == ("Shop", "Welcome", 2)
    assert (items["/list"]["title"], items["/list"]["h1"]) == ("List", None)
    assert all(isinstance(i["fetched_at"], float) for i in items.values())
    rows = list(csv.DictReader(io.StringIO(export(out, "csv"))))
    assert sorted(row["title"] for row in rows) == ["List", "Sale", "Shop"]


def test_a_page_may_give_many_items_and_a_failing_hook_costs_one_page_only(
    tmp_path: Path,
) -> None:
    with WebFarm({"shop": html_site("shop", PAGES)}) as farm:
        out, _ = crawl(tmp_path, farm, "tests.extract_hooks:one_per_row")
        rows = [json.loads(line) for line in export(out).splitlines()]
        assert [(r["name"], r["price"]) for r in rows] == [("Kettle", 24.5), ("Mug", 7.0)]
        out2, stderr = crawl(tmp_path / "second", farm, "tests.extract_hooks:fails_on_sale")
        assert farm.wait_idle()
    seen = sorted(
        r["url_seen"].rsplit("/", 1)[1] for r in map(json.loads, export(out2).splitlines())
    )
    assert seen == ["", "list"]  # every page but the sale page gave its item
    assert "the extraction hook failed: ValueError: no price on the sale page" in stderr
    stats = subprocess.run(
        [*cli("stats", str(out2)), "--json"], check=True, capture_output=True, text=True
    )
    assert json.loads(stats.stdout)["extract"] == {"items": 2, "errors": 1}


def test_a_hook_that_cannot_be_found_is_refused_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for hook, said in (
        ("tests.extract_hooks:nope", "has no function nope"),
        ("no_such_module_here:f", "cannot import no_such_module_here"),
        ("just_a_name", "expected MODULE:FUNCTION"),
    ):
        done = subprocess.run(
            [*cli("crawl", "http://127.0.0.1:9/"), "--out", str(out), "--extract", hook],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode != 0
        assert said in done.stderr
        assert done.stderr.strip().count("\n") == 0, done.stderr
        assert not out.exists()


def test_on_workers_every_page_gives_its_items_once(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS + 'extract = "tests.extract_hooks:headings"\n')
    shared = ["--frontier", cluster.url, "--namespace", "extract", "--buckets", "16"]
    with WebFarm({"shop": html_site("shop", PAGES)}) as farm:
        seed = [*cli("seed", *shared), "--config", str(config), "-q", farm.url("shop", "/")]
        subprocess.run(seed, check=True, timeout=60, env=ENV, stdout=subprocess.DEVNULL)
        outs = [tmp_path / f"w{i}" for i in range(2)]
        workers = [
            subprocess.Popen(
                [*cli("worker", *shared), "--config", str(config), "--out", str(out), "-q"],
                env=ENV,
            )
            for out in outs
        ]
        for worker in workers:
            assert worker.wait(timeout=120) == 0
    titles = [json.loads(line)["title"] for out in outs for line in export(out).splitlines()]
    assert sorted(titles) == ["List", "Sale", "Shop"]
    assert sys.executable  # (the workers ran with this interpreter: tests.workers.cli)


def test_a_hook_passed_to_the_python_api_runs_in_the_parse_workers(tmp_path: Path) -> None:
    from crawlspace import CrawlConfig, Crawler
    from crawlspace.ops.export import iter_records
    from tests.extract_hooks import where

    config = CrawlConfig(allow_nets=("127.0.0.0/8",), min_delay=0.0, delay_factor=0.0)
    with WebFarm({"shop": html_site("shop", PAGES)}) as farm:
        crawler = Crawler(config, tmp_path / "out", extractor=where)
        try:
            crawler.add_seeds([farm.url("shop", "/")])
            crawler.run()
        finally:
            crawler.close()
    items = list(iter_records(tmp_path / "out", "items"))
    assert sorted(i["title"] for i in items) == ["List", "Sale", "Shop"]
    assert os.getpid() not in {i["pid"] for i in items}  # a parse worker's, not the crawl's
    parquet = tmp_path / "items.parquet"
    command = [*cli("export", str(tmp_path / "out")), "--what", "items", "--format", "parquet"]
    subprocess.run([*command, "--output", str(parquet)], check=True, timeout=60)
    import pyarrow.parquet as pq

    assert sorted(pq.read_table(parquet).column("title").to_pylist()) == ["List", "Sale", "Shop"]
