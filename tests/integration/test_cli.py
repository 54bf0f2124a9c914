"""The command line: every command has help, bad input gets a clear error, the demo works."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from crawlspace.cli import build_parser, main
from crawlspace.store.sqlite.store import SqliteStore
from tests.webs import stats_json

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

# Should a bad input ever get through, the crawl must send nothing anywhere: a loopback URL the
# address guard refuses (no --allow-net).
SEED = "http://127.0.0.1:9/"
COMMANDS = ["crawl", "demo", "stats", "export", "serve", "report", "config", "seed", "worker"]
COMMANDS += ["feed", "index", "search"]


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
    assert not (tmp_path / "o").exists()  # refused before the crawl's files were made


def test_a_new_crawl_with_nothing_to_crawl_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    assert main(["crawl", "--out", str(out), "-q"]) == 2
    assert "nothing to crawl: give one or more URLs" in capsys.readouterr().err
    assert not out.exists()


def test_a_directory_of_other_files_is_not_a_crawl_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "notes"
    out.mkdir()
    (out / "mine.txt").write_text("not a crawl\n")
    assert main(["crawl", SEED, "--out", str(out), "-q"]) == 2
    assert "is not empty and holds no crawl (no crawl.db)" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["mine.txt"]
    # An empty directory is a new crawl; a crawl's directory resumes without seeds.
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["crawl", SEED, "--out", str(empty), "-q", "--max-pages", "1"]) == 0
    assert (empty / "crawl.db").exists()
    assert main(["crawl", "--out", str(empty), "-q", "--max-pages", "1"]) == 0


def test_a_site_the_address_guard_refused_gets_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A first crawl of a local site without --allow-net says why it fetched nothing."""
    assert main(["crawl", SEED, "--out", str(tmp_path / "o"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "hint: 1 URL(s) were refused because their address is private, loopback" in out
    assert "--allow-net 127.0.0.0/8" in out


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("min_dealy = 3", "unknown setting 'min_dealy'"),
        ('event_loop = "trio"', "event_loop must be asyncio or uvloop"),
        ("exclude = 5", "exclude must be a string or a list of strings (got 5)"),
        ("resolve = 5", "resolve must be a string or a list of strings (got 5)"),
        ("strip_params = [1, 2]", "strip_params must be a list of strings (got (1, 2))"),
        ("priority_patterns = [5]", "priority_patterns must be a list of strings"),
        ('max_pages = "10"', "max_pages must be a whole number (got '10')"),
        ("min_delay = nan", "min_delay must be a finite number (got nan)"),
        ("revisit_max_interval = inf", "revisit_max_interval must be a finite number (got inf)"),
        ("fold_index_html = 1", "fold_index_html must be true or false (got 1)"),
        ('allow_hosts = ["h:99999"]', "allow_hosts entry 'h:99999': port must be 1-65535"),
        ('allow_hosts = [""]', "allow_hosts entry '': expected HOST or HOST:PORT"),
        ("metrics_port = 99999", "metrics_port must be 0-65535 (got 99999)"),
    ],
)
def test_bad_config_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str, message: str
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f"[crawl]\n{setting}\n")
    code = main(["crawl", SEED, "--out", str(tmp_path / "o"), "--config", str(config)])
    assert code == 2
    assert message in capsys.readouterr().err


def test_unreadable_config_files_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes('[crawl]\nuser_agent = "caf\xe9"\n'.encode("latin-1"))
    not_a_table = tmp_path / "scalar.toml"
    not_a_table.write_text("crawl = 5\n")
    for config, message in [
        (latin1, "is not UTF-8 text"),
        (not_a_table, "[crawl] must be a table"),
        (tmp_path, "cannot read config file"),  # a directory
    ]:
        out = tmp_path / "o"
        argv = ["crawl", SEED, "--out", str(out), "--config", str(config)]
        assert main(argv) == 2
        assert message in capsys.readouterr().err
        assert not out.exists()  # refused before anything was written


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--allow-host", "h:99999"], "port must be 1-65535"),
        (["--metrics-port", "99999"], "port must be 0-65535 (got 99999)"),
        (["--dashboard", "--dashboard-port", "99999"], "port must be 0-65535 (got 99999)"),
        (["--max-pages", "-5"], "max_pages must be > 0, or left out for no limit (got -5)"),
        (["--max-pages", "0"], "max_pages must be > 0, or left out for no limit (got 0)"),
        (["--max-pages-per-host", "0"], "max_pages_per_host must be > 0"),
        (["--duration", "-10"], "duration must be > 0, or left out for no limit (got -10.0)"),
        (["--max-bytes", "-1"], "max_bytes must be > 0, or left out for no limit (got -1)"),
    ],
)
def test_bad_flags_are_clear_errors_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    out = tmp_path / "o"
    try:
        code = main(["crawl", SEED, "--out", str(out), "-q", *flags])
    except SystemExit as exc:  # argparse refuses the value itself
        code = int(exc.code or 0)
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_missing_seeds_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    missing = tmp_path / "seeds.txt"
    assert main(["crawl", "--seeds", str(missing), "--out", str(out), "-q"]) == 2
    assert f"cannot read the seeds file {missing}: No such file or directory" in (
        capsys.readouterr().err
    )
    assert not out.exists()


def test_stats_of_a_missing_crawl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(tmp_path)]) == 2
    assert "holds no crawl" in capsys.readouterr().err


@pytest.mark.slow
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
    # It ends with a search of what it crawled.
    found = subprocess.run(
        [sys.executable, "-m", "crawlspace.cli", "search", str(out), "archive", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert json.loads(found[0])["url"].startswith("http://blog.demo.test:")
    stats = stats_json(out)
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
    # Run again: a fresh demo, not a resume of the last one with nothing left to fetch.
    second = subprocess.run(
        [sys.executable, "-m", "crawlspace.cli", "demo", "--out", str(out), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert f"{stats['pages']} pages this run" in second.stdout
    again = stats_json(out)
    assert again["pages"] == stats["pages"]
    assert len(list((out / "warc").glob("*.warc.gz"))) == 1


def test_the_demo_never_resumes_a_crawl_that_is_not_a_demo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "real"
    out.mkdir()
    SqliteStore(out / "crawl.db").close()
    before = sorted(p.name for p in out.iterdir())
    assert main(["demo", "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "is not a crawlspace demo directory" in err
    assert sorted(p.name for p in out.iterdir()) == before  # nothing touched


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


def test_stats_of_a_crawl_in_a_directory_named_with_uri_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The read-only opener builds an SQLite URI: a "?" or "#" in the path used to end the file
    # name there, and SQLite opened (and created) a file named after the rest of the path.
    monkeypatch.chdir(tmp_path)
    for name in ("run?1", "run#2", "a%20b"):
        out = tmp_path / name
        out.mkdir()
        SqliteStore(out / "crawl.db").close()
        assert main(["stats", str(out), "--json"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a%20b", "run#2", "run?1"]


def test_a_stopped_crawl_says_how_to_go_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A crawl stopped by its page limit says the limit counts across runs; its rerun says it
    resumes; -q prints the stop line and the hints, not the table."""
    from crawlspace.demo.sites import html_site
    from crawlspace.demo.webfarm import WebFarm
    from tests.webs import linked_pages

    out = tmp_path / "o"
    with WebFarm({"site": html_site("site", linked_pages(12))}) as farm:
        argv = ["crawl", farm.url("site", "/p0.html"), "--out", str(out), "--min-delay", "0"]
        argv += ["--allow-net", "127.0.0.0/8"]
        assert main([*argv, "--max-pages", "2", "-q"]) == 0
        first = capsys.readouterr()
        assert "stopped: max_pages" in first.out
        assert "max_pages counts the crawl's pages across runs: rerun with a higher" in first.out
        assert "crawl summary" not in first.out  # -q: no table
        assert main([*argv, "--max-pages", "3"]) == 0
        again = capsys.readouterr()
    assert f"resuming the crawl in {out}" in again.err
    assert "crawl summary" in again.out
    assert "stopped: max_pages after" in again.out
    assert "1 pages this run" in again.out  # the limit counts the first run's two pages
    # The progress line left behind agrees with the summary (drawn once more at the end).
    shown = [line for line in again.err.splitlines() if line.startswith("pages ")]
    assert shown[-1].split()[:2] == ["pages", "1"]


def test_report_goes_into_the_crawl_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`report DIR` writes DIR/report.html, never a report.html where it happened to run."""
    out = tmp_path / "o"
    assert main(["crawl", SEED, "--out", str(out), "-q"]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "report.html").write_text("mine")
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out / 'report.html'}"
    assert "<html" in (out / "report.html").read_text()
    assert (elsewhere / "report.html").read_text() == "mine"


def test_a_busy_dashboard_port_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`serve` and `crawl --dashboard` on a port in use say so in one line, before printing a
    dashboard address that serves nothing, and `crawl --dashboard` crawls nothing."""
    import socket

    out = tmp_path / "o"
    assert main(["crawl", SEED, "--out", str(out), "-q"]) == 0
    capsys.readouterr()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        assert main(["serve", str(out), "--port", port]) == 2
        served = capsys.readouterr()
        fresh = tmp_path / "fresh"
        argv = ["crawl", SEED, "--out", str(fresh), "-q", "--dashboard", "--dashboard-port", port]
        assert main(argv) == 2
        crawled = capsys.readouterr()
    for result in (served, crawled):
        assert f"cannot serve the dashboard on 127.0.0.1:{port}" in result.err
        assert "choose another port (0 takes any free one)" in result.err
        assert "http://" not in result.out + result.err
    assert not fresh.exists()


def test_log_json_keeps_stderr_json(tmp_path: Path) -> None:
    """With --log-json every stderr line is a JSON object: no progress line, no plain text."""
    out = tmp_path / "o"
    for _ in range(2):  # a new crawl, then its resume
        argv = ["crawl", SEED, "--out", str(out), "--log-json"]
        done = subprocess.run(
            [sys.executable, "-m", "crawlspace.cli", *argv],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert all(isinstance(json.loads(line), dict) for line in lines), done.stderr
    assert any(json.loads(line)["msg"] == f"resuming the crawl in {out}" for line in lines)


def test_no_parent_without_seeds_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--no-parent would otherwise be accepted and ignored (no seed to take a directory from)."""
    out = tmp_path / "o"
    assert main(["crawl", "--out", str(out), "--no-parent", "-q"]) == 2
    assert "--no-parent keeps the crawl below its seeds' directories" in capsys.readouterr().err
    assert not out.exists()
    worker = ["worker", "--frontier", "redis://127.0.0.1:9", "--out", str(out), "--no-parent"]
    assert main(worker) == 2  # refused before connecting
    assert "--no-parent" in capsys.readouterr().err
