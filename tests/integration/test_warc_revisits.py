"""Every byte stored once: a body archived again under another URL is written as an
identical-payload-digest revisit record of the first capture (archive/captures.py). warcio reads
the files, pywb's index finds every fetch at its own record, and pywb's replay serves the first
capture's payload for the revisited URL."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlspace.demo.webfarm import Site, WebFarm, html
from crawlspace.ops.export import iter_records
from tests.integration.test_index_feed import SETTINGS, words
from tests.redis_servers import RedisDeployment
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
# One body under two URLs, long enough to be worth a revisit (and different from every other).
SHARED = "<html><body><p>" + " ".join([words("/shared")] * 20) + "</p></body></html>"


def site() -> Site:
    links = "".join(f'<a href="{p}">{p}</a>' for p in ("/a.html", "/b.html", "/c.html"))
    routes = {
        "/": html(f"<html><body><p>{words('/')}</p>{links}</body></html>"),
        "/a.html": html(SHARED),
        "/b.html": html(SHARED),
        "/c.html": html(f"<html><body><p>{' '.join([words('/c')] * 20)}</p></body></html>"),
        "/robots.txt": html("", 404),
    }
    return Site("s", routes)


def crawl(tmp_path: Path, farm: WebFarm, extra: str = "") -> Path:
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS + extra)
    out = tmp_path / "out"
    args = [*cli("crawl", farm.url("s", "/")), "--out", str(out), "--config", str(config), "-q"]
    subprocess.run(args, check=True, timeout=60, stdout=subprocess.DEVNULL)
    return out


def records(out: Path) -> list[tuple[Any, str, int]]:
    """(record, file name, offset) of every record of the crawl's WARC files."""
    found = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as stream:
            iterator = ArchiveIterator(stream)
            for record in iterator:
                record.content_stream().read()
                found.append((record, path.name, iterator.get_record_offset()))
    return found


def test_a_repeated_body_is_a_revisit_of_its_first_capture(tmp_path: Path) -> None:
    with WebFarm({"s": site()}) as farm:
        out = crawl(tmp_path, farm)
        base = farm.host_key("s")
    found = records(out)
    by_url: dict[str, dict[str, Any]] = {}
    for record, name, offset in found:
        kind = record.rec_headers.get_header("WARC-Type")
        if kind in ("response", "revisit"):
            url = record.rec_headers.get_header("WARC-Target-URI")
            by_url[url.removeprefix(base)] = {"kind": kind, "record": record, "at": (name, offset)}
    pair = [by_url["/a.html"], by_url["/b.html"]]
    first, repeat = sorted(pair, key=lambda r: r["kind"] != "response")
    assert (first["kind"], repeat["kind"]) == ("response", "revisit")
    head, original = repeat["record"].rec_headers, first["record"].rec_headers
    assert head.get_header("WARC-Profile") == PROFILE
    assert head.get_header("WARC-Refers-To-Target-URI") == original.get_header("WARC-Target-URI")
    assert head.get_header("WARC-Refers-To-Date") == original.get_header("WARC-Date")
    assert head.get_header("WARC-Payload-Digest") == original.get_header("WARC-Payload-Digest")
    assert repeat["record"].http_headers.get_statuscode() == "200"
    assert by_url["/c.html"]["kind"] == "response"
    assert by_url["/"]["kind"] == "response"
    # Each fetch row points at its own URL's record; the two share the payload's hash.
    fetches = {f["url"].removeprefix(base): f for f in iter_records(out, "fetches")}
    for path in ("/a.html", "/b.html"):
        assert (fetches[path]["warc_file"], fetches[path]["warc_offset"]) == by_url[path]["at"]
    assert fetches["/a.html"]["content_sha256"] == fetches["/b.html"]["content_sha256"]
    warcio = Path(sys.executable).with_name("warcio")
    subprocess.run([str(warcio), "check", *map(str, (out / "warc").glob("*.gz"))], check=True)


def test_a_resumed_crawl_writes_a_repeat_of_an_earlier_runs_capture_as_a_revisit(
    tmp_path: Path,
) -> None:
    """The first run archives /a.html in full; the second, resumed in the same directory with
    /b.html as its seed, finds that capture among the reloaded ones (its fetch row keeps the
    payload's key and digest) and writes /b.html as a revisit of a record of the first run."""
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS)
    out = tmp_path / "out"
    with WebFarm({"s": site()}) as farm:
        for path in ("/a.html", "/b.html"):
            args = [*cli("crawl", farm.url("s", path)), "--out", str(out), "--config", str(config)]
            subprocess.run([*args, "-q"], check=True, timeout=60, stdout=subprocess.DEVNULL)
        base = farm.host_key("s")
    kinds = {}
    for record, name, _ in records(out):
        kind = record.rec_headers.get_header("WARC-Type")
        if kind in ("response", "revisit"):
            kinds[record.rec_headers.get_header("WARC-Target-URI").removeprefix(base)] = (
                kind,
                name,
                record.rec_headers.get_header("WARC-Refers-To-Target-URI"),
            )
    assert kinds["/a.html"][0] == "response"
    assert kinds["/b.html"][0] == "revisit"
    assert kinds["/b.html"][2] == base + "/a.html"
    assert kinds["/b.html"][1] != kinds["/a.html"][1]  # another run's file
    warcio = Path(sys.executable).with_name("warcio")
    subprocess.run([str(warcio), "check", *map(str, (out / "warc").glob("*.gz"))], check=True)


def test_a_restarted_worker_writes_a_repeat_of_its_earlier_capture_as_a_revisit(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    """The same on a shared frontier: a worker archives /a.html and ends; /b.html is seeded,
    and the worker started again on its directory writes it as a revisit of that capture."""
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS)
    out = tmp_path / "w0"
    with WebFarm({"s": site()}) as farm:
        for path in ("/a.html", "/b.html"):
            crawl_with_workers(
                cluster.url, "revisits", 16, config, seeds=[farm.url("s", path)], outs=[out]
            )
        base = farm.host_key("s")
    kinds = {
        record.rec_headers.get_header("WARC-Target-URI").removeprefix(base): (
            record.rec_headers.get_header("WARC-Type"),
            record.rec_headers.get_header("WARC-Refers-To-Target-URI"),
        )
        for record, _, _ in records(out)
        if record.rec_headers.get_header("WARC-Type") in ("response", "revisit")
    }
    assert kinds["/a.html"] == ("response", None)
    assert kinds["/b.html"] == ("revisit", base + "/a.html")


def test_with_no_window_every_body_is_written_in_full(tmp_path: Path) -> None:
    with WebFarm({"s": site()}) as farm:
        out = crawl(tmp_path, farm, "warc_revisit_window = 0\n")
    kinds = [r.rec_headers.get_header("WARC-Type") for r, _, _ in records(out)]
    assert "revisit" not in kinds
    assert kinds.count("response") == 5  # robots.txt, /, a, b, c


def _pywb_bin() -> Path | None:
    for folder in (
        os.environ.get("PYWB_BIN", ""),
        str(Path(__file__).parents[2] / ".pywb-venv/bin"),
    ):
        if folder and (Path(folder) / "wayback").exists():
            return Path(folder)
    found = shutil.which("wayback")
    return Path(found).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wayback(bin_dir: Path, root: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    server = subprocess.Popen(
        [str(bin_dir / "wayback"), "-b", "127.0.0.1", "-p", str(port)],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield server
    finally:
        server.terminate()
        server.wait(timeout=10)


def _get(url: str) -> bytes | None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return bytes(response.read())
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    return None


def test_pywb_replays_the_revisit_with_the_first_captures_payload(tmp_path: Path) -> None:
    bin_dir = _pywb_bin()
    if bin_dir is None:
        pytest.skip("pywb is not installed (.ci/run installs it into .pywb-venv, see PYWB_BIN)")
    with WebFarm({"s": site()}) as farm:
        out = crawl(tmp_path, farm)
        urls = {path: farm.url("s", path) for path in ("/a.html", "/b.html")}
    root = tmp_path / "pywb"
    root.mkdir()
    manager = str(bin_dir / "wb-manager")
    subprocess.run([manager, "init", "crawl"], cwd=root, check=True, capture_output=True)
    warcs = [str(p) for p in (out / "warc").glob("*.warc.gz")]
    subprocess.run([manager, "add", "crawl", *warcs], cwd=root, check=True, capture_output=True)
    port = _free_port()
    for _ in _wayback(bin_dir, root, port):
        for url in urls.values():
            # id_: the payload as archived, without pywb's rewriting.
            body = _get(f"http://127.0.0.1:{port}/crawl/2100id_/{url}")
            assert body == SHARED.encode()


def test_a_worker_writes_a_payload_another_worker_archived_as_a_revisit(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    """Workers tell each other what they archived (crawl/capture_sharing.py): /a.html is
    archived by one worker, /b.html (the same body) by another, in another directory, which
    writes it as a revisit of the first's capture; pywb, given both workers' files as one
    collection, replays /b.html with that payload."""
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS)
    with WebFarm({"s": site()}) as farm:
        for path, out in (("/a.html", "w0"), ("/b.html", "w1")):
            crawl_with_workers(
                cluster.url,
                "shared-captures",
                16,
                config,
                seeds=[farm.url("s", path)],
                outs=[tmp_path / out],
            )
        base = farm.host_key("s")
    kinds = {
        record.rec_headers.get_header("WARC-Target-URI").removeprefix(base): (
            record.rec_headers.get_header("WARC-Type"),
            record.rec_headers.get_header("WARC-Refers-To-Target-URI"),
        )
        for out in ("w0", "w1")
        for record, _, _ in records(tmp_path / out)
        if record.rec_headers.get_header("WARC-Type") in ("response", "revisit")
    }
    assert kinds["/a.html"] == ("response", None)
    assert kinds["/b.html"] == ("revisit", base + "/a.html")
    fetches = {r["url"].removeprefix(base): r for r in iter_records(tmp_path / "w1", "fetches")}
    assert fetches["/b.html"]["text_sha256"] is not None  # parsed as any page
    bin_dir = _pywb_bin()
    if bin_dir is None:
        return  # (the replay below needs pywb: .ci/run installs it)
    warcs = [str(p) for out in ("w0", "w1") for p in (tmp_path / out / "warc").glob("*.warc.gz")]
    body = _replay(bin_dir, tmp_path / "pywb", warcs, base + "/b.html")
    assert body == SHARED.encode()


def _replay(bin_dir: Path, root: Path, warcs: list[str], url: str) -> bytes | None:
    """``url``'s payload as pywb replays it from a collection of ``warcs``."""
    root.mkdir()
    manager = str(bin_dir / "wb-manager")
    subprocess.run([manager, "init", "crawl"], cwd=root, check=True, capture_output=True)
    subprocess.run([manager, "add", "crawl", *warcs], cwd=root, check=True, capture_output=True)
    port = _free_port()
    for _ in _wayback(bin_dir, root, port):
        return _get(f"http://127.0.0.1:{port}/crawl/2100id_/{url}")  # id_: as archived
    return None
