"""Traps told from real sites by what they yield, judged by the servers' own logs: an endless
calendar beside a blog of dated posts, faceted navigation beside a paginated catalog, a loop of
relative links beside a deep documentation tree (tests/trapweb.py). Each trap is stopped within
tens of URLs while its real neighbour is crawled in full, by `crawlspace crawl` and by four
`crawlspace worker` processes on a 3-master Redis Cluster; a resumed crawl keeps the verdicts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import WebFarm
from crawlspace.ops.report import crawl_stats
from tests.redis_servers import RedisDeployment
from tests.trapweb import TRAP_PREFIXES, build_sites, real_paths
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

TRAP_LIMIT = 60  # "tens of URLs": the sample window (20) and what was queued or in flight
REASONS = {"news": "trap_template", "shop": "trap_facets", "docs": "trap_loop"}
FAMILIES = {"news": "/calendar/", "shop": "/shop?", "docs": "/loop/"}
# Without the yield rule the budgets would let each trap run to max_pages_per_host.
CONFIG = (
    "[crawl]\nallow_nets = ['127.0.0.0/8']\nscope = 'any'\nmin_delay = 0.0\n"
    "delay_factor = 0.0\nconcurrency = 16\nmax_pages_per_host = 1200\n"
)


def _fetched(farm: WebFarm, name: str) -> set[str]:
    return {r.path_qs for r in farm.requests_for(name) if r.path_qs != "/robots.txt"}


def _assert_traps_stopped_real_sites_covered(farm: WebFarm, real: dict[str, set[str]]) -> None:
    for name, prefix in TRAP_PREFIXES.items():
        fetched = _fetched(farm, name)
        trap = {p for p in fetched if p.startswith(prefix)}
        assert 20 <= len(trap) <= TRAP_LIMIT, (name, len(trap))
        covered = len(real[name] & fetched) / len(real[name])
        assert covered >= 0.98, (name, covered, sorted(real[name] - fetched)[:10])


def _export_hosts(out: Path) -> list[dict[str, object]]:
    command = [*cli("export", str(out), "--what", "hosts", "--format", "jsonl")]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_single_crawl_stops_each_trap_and_covers_its_neighbour(tmp_path: Path) -> None:
    sites = build_sites()
    with WebFarm(sites) as farm:
        config = tmp_path / "crawl.toml"
        config.write_text(CONFIG)
        out = tmp_path / "out"
        seeds = [farm.url(name, "/") for name in farm.names]
        command = [*cli("crawl", "--out", str(out), "--config", str(config), "-q"), *seeds]
        subprocess.run(command, check=True, timeout=180, stdout=subprocess.DEVNULL)
        assert farm.wait_idle()
        _assert_traps_stopped_real_sites_covered(farm, real_paths(sites))
        # The verdicts, with their reasons: in stats, and per host in the export.
        stats = crawl_stats(out)
        flagged = {
            (f["host"], f["family"], f["reason"]) for f in stats["traps"]["flagged_families"]
        }
        expected = {(farm.host_key(n), FAMILIES[n], REASONS[n]) for n in REASONS}
        assert flagged == expected
        # The members queued when their family was flagged end excluded, with the reason.
        reasons = stats["reasons"]
        assert all(reasons.get(f"excluded:{r}", 0) > 0 for r in REASONS.values()), reasons
        hosts = {h["host_key"]: h["trap_families"] for h in _export_hosts(out)}
        for name, reason in REASONS.items():
            assert hosts[farm.host_key(name)] == f"{FAMILIES[name]}={reason}"
        # A second run on the same crawl resumes with the verdicts: no trap URL is fetched.
        farm.clear_log()
        subprocess.run(command, check=True, timeout=180, stdout=subprocess.DEVNULL)
        assert farm.wait_idle()
        for name, prefix in TRAP_PREFIXES.items():
            assert not {p for p in _fetched(farm, name) if p.startswith(prefix)}, name


@pytest.mark.slow
def test_four_workers_stop_each_trap_and_cover_its_neighbour(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    sites = build_sites()
    with WebFarm(sites) as farm:
        config = tmp_path / "crawl.toml"
        config.write_text(CONFIG)
        seeds = [farm.url(name, "/") for name in farm.names]
        outs = [tmp_path / f"w{i}" for i in range(4)]
        crawl_with_workers(cluster.url, "traps", 16, config, seeds=seeds, outs=outs, timeout=180)
        assert farm.wait_idle()
        _assert_traps_stopped_real_sites_covered(farm, real_paths(sites))
        shared = [*cli("export", "--frontier", cluster.url, "--namespace", "traps")]
        shared += ["--buckets", "16", "--what", "hosts", "--format", "jsonl"]
        done = subprocess.run(shared, capture_output=True, text=True, check=True, timeout=60)
        hosts = {
            h["host_key"]: h["trap_families"] for h in map(json.loads, done.stdout.splitlines())
        }
        for name, reason in REASONS.items():
            assert hosts[farm.host_key(name)] == f"{FAMILIES[name]}={reason}"
