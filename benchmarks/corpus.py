"""The benchmark corpora and the static server that serves one from a separate process.

Two real corpora from Debian's documentation packages (installed with apt-get when missing and
allowed), else a generated interlinked tree:

- ``python``: python3.11-doc's HTML (530 pages in folders, some of them large; the biggest,
  ``contents.html``, is 2.5 MB); robots.txt disallows ``/distutils/`` (13 pages).
- ``postgres``: postgresql-doc-15's HTML (1,169 ordinary pages in one flat folder, 13.5 KiB and
  ~22 links a page on average); robots.txt disallows the prefix ``/release-`` (the 22 release
  notes pages: ``release-15*.html`` and ``release-prior.html``; ``release.html`` stays allowed).

Every host serves the whole tree; hosts are the loopback addresses 127.0.0.1 ... 127.0.0.N on
one port, so each crawler sees N distinct hostnames (Scrapy keys its per-domain slot by
hostname, crawlspace by scheme://host:port, crawlee by hostname for robots.txt).

The server is nginx when installed, else an aiohttp static server; both run as a child
process. ``python benchmarks/corpus.py serve ...`` is the aiohttp server's entry point.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

START_TIMEOUT = 10.0


def precompile(src: Path | None = None) -> None:
    """Byte-compile the crawlspace the crawls import (``src``: a tree's ``src``; None: the
    package this interpreter finds), as ``pip install`` compiles every package it installs,
    the peers' included. An editable checkout has no bytecode until an import writes it, and
    none is ever written with PYTHONDONTWRITEBYTECODE set: each crawl's processes would then
    compile ~200 modules at start (~0.13 s of CPU each), a cost the peers never pay."""
    if src is None:
        spec = importlib.util.find_spec("crawlspace")
        if spec is None or not spec.submodule_search_locations:
            return
        src = Path(next(iter(spec.submodule_search_locations)))
    compileall.compile_dir(str(src), quiet=1)


def robots_txt(disallowed: str) -> str:
    return f"User-agent: *\nDisallow: {disallowed}\n"


@dataclass(frozen=True)
class CorpusSource:
    """A real corpus: a Debian documentation package's HTML tree."""

    name: str
    package: str
    root: Path
    disallowed: str  # the one robots.txt Disallow prefix, a path starting with '/'
    default_hosts: int


SOURCES: dict[str, CorpusSource] = {
    "python": CorpusSource(
        "python", "python3.11-doc", Path("/usr/share/doc/python3.11/html"), "/distutils/", 8
    ),
    "postgres": CorpusSource(
        "postgres",
        "postgresql-doc-15",
        Path("/usr/share/doc/postgresql-doc-15/html"),
        "/release-",
        4,
    ),
}

# The python corpus's names, kept for the benchmarks that import them.
DOCS_PACKAGE = SOURCES["python"].package
DOCS_ROOT = SOURCES["python"].root
# A small folder every crawler must skip: 13 of the 530 pages in python3.11-doc.
DISALLOWED = SOURCES["python"].disallowed
ROBOTS_TXT = robots_txt(DISALLOWED)
# The generated corpus keeps one folder of that name, disallowed the same way.
GENERATED_DISALLOWED = DISALLOWED


@dataclass(frozen=True)
class Corpus:
    root: Path
    description: str
    html_files: tuple[str, ...]  # paths relative to root that robots.txt allows, '/'-separated
    disallowed: str = DISALLOWED  # robots.txt's one Disallow prefix
    disallowed_files: int = 0  # HTML files under it (served, never to be fetched)
    name: str = "python"

    @property
    def robots_txt(self) -> str:
        return robots_txt(self.disallowed)

    def expected_urls(self, hosts: list[str]) -> set[str]:
        """Every allowed HTML file on every host (``dir/index.html`` stands for ``dir/``)."""
        return {f"{host}/{rel}" for host in hosts for rel in self.html_files}

    def is_disallowed(self, url: str) -> bool:
        """Whether robots.txt forbids fetching ``url`` (an absolute URL on one of the hosts)."""
        return urlsplit(url).path.startswith(self.disallowed)


def canonical_url(url: str) -> str:
    """The served file a fetched URL names: fragment and query dropped, ``/`` -> ``/index.html``."""
    url = url.split("#", 1)[0].split("?", 1)[0]
    return url + "index.html" if url.endswith("/") else url


def _html_files(root: Path, disallowed: str) -> tuple[tuple[str, ...], int]:
    """The HTML files robots.txt allows (sorted) and how many it disallows."""
    files = [p.relative_to(root).as_posix() for p in root.rglob("*.html")]
    allowed = tuple(sorted(f for f in files if not f"/{f}".startswith(disallowed)))
    return allowed, len(files) - len(allowed)


def _install_docs(source: CorpusSource) -> bool:
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", source.package]):
        done = subprocess.run(cmd, env=env, capture_output=True, check=False, timeout=600)
        if done.returncode != 0:
            return False
    return source.root.is_dir()


def generate_corpus(dest: Path, pages: int, seed: int = 7) -> None:
    """``pages`` interlinked pages in 8 folders (one of them disallowed by robots.txt)."""
    rng = random.Random(seed)
    folders = ["guide", "api", "howto", "faq", "ref", "news", "misc"]
    folders.append(GENERATED_DISALLOWED.strip("/"))
    paths = ["index.html"] + [f"{folders[i % len(folders)]}/p{i}.html" for i in range(1, pages)]
    words = [
        "crawler",
        "frontier",
        "politeness",
        "robots",
        "fetch",
        "parse",
        "store",
        "queue",
        "host",
        "page",
        "link",
    ]
    for i, path in enumerate(paths):
        depth = path.count("/")
        targets = [paths[(i + 1) % pages], *rng.sample(paths, min(6, pages))]
        if i == 0:
            targets += paths[1 : min(pages, 40)]
        links = "".join(f'<li><a href="{"../" * depth}{t}">{t}</a></li>' for t in targets)
        text = " ".join(rng.choices(words, k=600))
        body = f"<html><head><title>{path}</title></head><body><p>{text}</p><ul>{links}</ul>"
        file = dest / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(body + "</body></html>\n", encoding="utf-8")


def prepare_corpus(
    work_dir: Path,
    *,
    install: bool,
    generated_pages: int,
    generated_only: bool = False,
    name: str = "python",
) -> Corpus:
    """The real corpus ``name`` (see SOURCES), else a generated one under ``work_dir``."""
    source = SOURCES[name]
    if not generated_only and (source.root.is_dir() or (install and _install_docs(source))):
        files, disallowed = _html_files(source.root, source.disallowed)
        description = f"Debian {source.package} ({source.root})"
        return Corpus(source.root, description, files, source.disallowed, disallowed, name)
    root = work_dir / f"corpus-{name}"
    generate_corpus(root, generated_pages)
    why = "as asked" if generated_only else f"{source.package} absent"
    description = f"generated interlinked corpus of {generated_pages} pages ({why})"
    files, disallowed = _html_files(root, GENERATED_DISALLOWED)
    return Corpus(root, description, files, GENERATED_DISALLOWED, disallowed, "generated")


@contextmanager
def served_corpus(
    work_dir: Path, name: str, *, install: bool, generated: bool, hosts: int | None = None
) -> Iterator[tuple[Corpus, StaticServer, list[str]]]:
    """The corpus ``name`` (prepare_corpus) served on ``hosts`` loopback addresses (None: the
    corpus's default), one port, by nginx when there is one: the corpus, its server and the
    crawl's seeds (each host's /index.html)."""
    corpus = prepare_corpus(
        work_dir, install=install, generated_pages=600, generated_only=generated, name=name
    )
    count = hosts or SOURCES[name].default_hosts
    addresses = [f"127.0.0.{i}" for i in range(1, count + 1)]
    with StaticServer(corpus.root, addresses, robots_txt=corpus.robots_txt) as server:
        yield corpus, server, [f"{h}/index.html" for h in server.base_urls()]


def free_port(addresses: list[str]) -> int:
    """A port that is free on every address (bounded retries; a race remains possible)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind((addresses[0], 0))
            port: int = probe.getsockname()[1]
        try:
            for address in addresses[1:]:
                with socket.socket() as other:
                    other.bind((address, port))
        except OSError:
            continue
        return port
    raise RuntimeError("no port free on all loopback addresses after 50 tries")


def _nginx_conf(root: Path, addresses: list[str], port: int, tmp: Path, robots_txt: str) -> str:
    listens = "".join(f"        listen {a}:{port};\n" for a in addresses)
    robots = robots_txt.replace("\n", "\\n")
    temps = "".join(
        f"    {name}_temp_path {tmp / name};\n"
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    user = "user root root;\n" if os.geteuid() == 0 else ""  # workers must read the corpus
    return f"""{user}worker_processes 1;
pid {tmp / "nginx.pid"};
error_log {tmp / "error.log"} warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    types {{
        text/html html htm; text/css css; application/javascript js; text/plain txt;
        image/png png; image/svg+xml svg; application/xml xml; application/zip zip;
    }}
    default_type application/octet-stream;
{temps}    server {{
{listens}        root {root};
        index index.html;
        location = /robots.txt {{
            default_type text/plain;
            return 200 "{robots}";
        }}
    }}
}}
"""


class StaticServer:
    """The corpus served on ``addresses`` x ``port`` by a child process (nginx or aiohttp)."""

    def __init__(
        self,
        root: Path,
        addresses: list[str],
        *,
        prefer_nginx: bool = True,
        robots_txt: str = ROBOTS_TXT,
    ) -> None:
        self.root = root
        self.robots_txt = robots_txt
        self.addresses = addresses
        self.port = free_port(addresses)
        self.nginx = shutil.which("nginx") if prefer_nginx else None
        if self.nginx is None and Path("/usr/sbin/nginx").exists() and prefer_nginx:
            self.nginx = "/usr/sbin/nginx"
        self.kind = "nginx" if self.nginx else "aiohttp"
        self._tmp = Path(tempfile.mkdtemp(prefix="crawlspace-bench-server-"))
        self._proc: subprocess.Popen[bytes] | None = None

    def base_urls(self) -> list[str]:
        return [f"http://{a}:{self.port}" for a in self.addresses]

    def _command(self) -> list[str]:
        if self.nginx:
            conf = self._tmp / "nginx.conf"
            conf.write_text(
                _nginx_conf(self.root, self.addresses, self.port, self._tmp, self.robots_txt)
            )
            log = str(self._tmp / "error.log")
            return [
                self.nginx,
                "-e",
                log,
                "-p",
                str(self._tmp),
                "-c",
                str(conf),
                "-g",
                "daemon off;",
            ]
        return [sys.executable, __file__, "serve", "--root", str(self.root),
                "--port", str(self.port), "--robots", self.robots_txt,
                *self.addresses]  # fmt: skip

    def __enter__(self) -> Self:
        log = (self._tmp / "server.out").open("wb")
        self._proc = subprocess.Popen(self._command(), stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        pending = list(self.addresses)
        while pending and time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            try:
                with socket.create_connection((pending[0], self.port), timeout=1):
                    pending.pop(0)
            except OSError:
                time.sleep(0.05)
        if pending:
            out = (self._tmp / "server.out").read_text(errors="replace")
            errs = (self._tmp / "error.log").read_text() if self.nginx else ""
            self.__exit__(None, None, None)
            raise RuntimeError(f"{self.kind} did not start on port {self.port}: {out}{errs}")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()  # nginx: SIGTERM is fast shutdown; only our own child's PID
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        shutil.rmtree(self._tmp, ignore_errors=True)


def _serve_aiohttp(root: Path, port: int, addresses: list[str], robots_text: str) -> None:
    import asyncio

    from aiohttp import web

    async def robots(_: web.Request) -> web.Response:
        return web.Response(text=robots_text)

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/robots.txt", robots)
        app.router.add_static("/", root, follow_symlinks=True, show_index=False)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        for address in addresses:
            await web.TCPSite(runner, address, port).start()
        await asyncio.Event().wait()  # until SIGTERM from the parent

    asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve ROOT with aiohttp on every ADDRESS:PORT")
    serve.add_argument("--root", type=Path, required=True)
    serve.add_argument("--port", type=int, required=True)
    serve.add_argument("--robots", default=ROBOTS_TXT, help="the robots.txt text to serve")
    serve.add_argument("addresses", nargs="+")
    args = parser.parse_args()
    _serve_aiohttp(args.root, args.port, args.addresses, args.robots)


if __name__ == "__main__":
    main()


def add_crawl_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a tool that crawls one served corpus once (thread_cpu.py, host_cycle.py)."""
    parser.add_argument("--corpus", choices=sorted(SOURCES), default="postgres")
    parser.add_argument("--hosts", type=int, help="loopback hosts (the corpus's default)")
    parser.add_argument("--max-pages", type=int, default=0, help="0: no limit")
    parser.add_argument("--generated", action="store_true", help="use the generated corpus")
    parser.add_argument("--no-install", action="store_true", help="never apt-get the docs")
