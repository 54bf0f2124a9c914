"""The command line: every command has help, bad input gets a clear error, the demo works."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from crawlspace.cli import build_parser, main

COMMANDS = ["crawl", "demo", "stats", "export", "serve", "report", "seed", "worker"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: crawlspace " + command in capsys.readouterr().out


def test_parser_knows_every_command() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert sorted(sub.choices) == sorted(COMMANDS)  # type: ignore[arg-type]


def test_bad_seed_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["crawl", "mailto:someone@example.org", "--out", str(tmp_path / "o"), "-q"])
    assert code == 2
    assert "is not a usable http(s) URL" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("min_dealy = 3", "unknown setting 'min_dealy'"),
        ('event_loop = "trio"', "event_loop must be asyncio or uvloop"),
    ],
)
def test_bad_config_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str, message: str
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f"[crawl]\n{setting}\n")
    code = main(
        ["crawl", "https://example.org/", "--out", str(tmp_path / "o"), "--config", str(config)]
    )
    assert code == 2
    assert message in capsys.readouterr().err


def test_stats_of_a_missing_crawl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(tmp_path)]) == 2
    assert "holds no crawl" in capsys.readouterr().err


def test_demo_crawls_the_sample_web(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "crawlspace.cli", "demo", "--out", str(out), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "crawl summary" in done.stdout
    stats = json.loads(
        subprocess.run(
            [sys.executable, "-m", "crawlspace.cli", "stats", str(out), "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert stats["hosts_crawled"] == 4
    assert stats["pages"] >= 50
    assert stats["reasons"].get("excluded:robots", 0) >= 1
    assert stats["exact_duplicates"] >= 1
    urls = [
        json.loads(line)
        for line in subprocess.run(
            [sys.executable, "-m", "crawlspace.cli", "export", str(out), "--what", "urls"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    ]
    by_path = {u["url"].split("/", 3)[3]: u for u in urls if "www.demo.test" in u["url"]}
    assert by_path["private/secret.html"]["state"] == "excluded"
    assert by_path["private/public-note.html"]["state"] == "fetched"
    assert by_path["old-page"]["state"] == "redirected"
    assert by_path["new-page"]["state"] == "fetched"
    calendar = [u for u in urls if "/calendar/" in u["url"] and u["state"] == "fetched"]
    assert 0 < len(calendar) <= 10, "the depth budget bounds the endless calendar"
    warcs = sorted(str(p) for p in (out / "warc").glob("*.warc.gz"))
    warcio = Path(sys.executable).with_name("warcio")
    subprocess.run([str(warcio), "check", *warcs], check=True)
    csv_out = subprocess.run(
        [
            sys.executable,
            "-m",
            "crawlspace.cli",
            "export",
            str(out),
            "--what",
            "fetches",
            "--format",
            "csv",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert csv_out[0].startswith("url,final_url,status,fetched_at,duration_ms,content_type,bytes")
    assert len(csv_out) == stats["pages"] + 1


@pytest.mark.parametrize("command", ["stats", "export", "seed", "worker"])
def test_shared_frontier_options_are_documented(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for option in ("--frontier URL", "--namespace", "--buckets"):
        assert option in out, (command, option)
    assert ("--wait-replicas N" in out) == (command == "worker")


def test_stats_needs_a_directory_or_a_frontier(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats"]) == 2
    assert "give either a crawl directory or --frontier URL" in capsys.readouterr().err
