"""The benchmark corpus and the static server that serves it from a separate process.

The corpus is Debian's python3.11-doc HTML tree (installed with apt-get when missing and
allowed), else a generated interlinked tree. Every host serves the whole tree; hosts are the
loopback addresses 127.0.0.1 ... 127.0.0.N on one port, so each crawler sees N distinct
hostnames (Scrapy keys its per-domain slot by hostname, crawlspace by scheme://host:port).

The server is nginx when installed, else an aiohttp static server; both run as a child
process. ``python benchmarks/corpus.py serve ...`` is the aiohttp server's entry point.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

DOCS_PACKAGE = "python3.11-doc"
DOCS_ROOT = Path("/usr/share/doc/python3.11/html")
# A small folder every crawler must skip: 13 of the 530 pages in python3.11-doc.
DISALLOWED = "/distutils/"
ROBOTS_TXT = f"User-agent: *\nDisallow: {DISALLOWED}\n"
START_TIMEOUT = 10.0


@dataclass(frozen=True)
class Corpus:
    root: Path
    description: str
    html_files: tuple[str, ...]  # paths relative to root that robots.txt allows, '/'-separated

    def expected_urls(self, hosts: list[str]) -> set[str]:
        """Every allowed HTML file on every host (``dir/index.html`` stands for ``dir/``)."""
        return {f"{host}/{rel}" for host in hosts for rel in self.html_files}


def canonical_url(url: str) -> str:
    """The served file a fetched URL names: fragment and query dropped, ``/`` -> ``/index.html``."""
    url = url.split("#", 1)[0].split("?", 1)[0]
    return url + "index.html" if url.endswith("/") else url


def _html_files(root: Path) -> tuple[str, ...]:
    files = (p.relative_to(root).as_posix() for p in root.rglob("*.html"))
    return tuple(sorted(f for f in files if not f"/{f}".startswith(DISALLOWED)))


def _install_docs() -> bool:
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", DOCS_PACKAGE]):
        done = subprocess.run(cmd, env=env, capture_output=True, check=False, timeout=600)
        if done.returncode != 0:
            return False
    return DOCS_ROOT.is_dir()


def generate_corpus(dest: Path, pages: int, seed: int = 7) -> None:
    """``pages`` interlinked pages in 8 folders (one of them disallowed by robots.txt)."""
    rng = random.Random(seed)
    folders = ["guide", "api", "howto", "faq", "ref", "news", "misc", DISALLOWED.strip("/")]
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
    work_dir: Path, *, install: bool, generated_pages: int, generated_only: bool = False
) -> Corpus:
    if not generated_only and (DOCS_ROOT.is_dir() or (install and _install_docs())):
        return Corpus(DOCS_ROOT, f"Debian {DOCS_PACKAGE} ({DOCS_ROOT})", _html_files(DOCS_ROOT))
    root = work_dir / "corpus"
    generate_corpus(root, generated_pages)
    why = "as asked" if generated_only else f"{DOCS_PACKAGE} absent"
    description = f"generated interlinked corpus of {generated_pages} pages ({why})"
    return Corpus(root, description, _html_files(root))


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


def _nginx_conf(root: Path, addresses: list[str], port: int, tmp: Path) -> str:
    listens = "".join(f"        listen {a}:{port};\n" for a in addresses)
    robots = ROBOTS_TXT.replace("\n", "\\n")
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

    def __init__(self, root: Path, addresses: list[str], *, prefer_nginx: bool = True) -> None:
        self.root = root
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
            conf.write_text(_nginx_conf(self.root, self.addresses, self.port, self._tmp))
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
                "--port", str(self.port), *self.addresses]  # fmt: skip

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


def _serve_aiohttp(root: Path, port: int, addresses: list[str]) -> None:
    import asyncio

    from aiohttp import web

    async def robots(_: web.Request) -> web.Response:
        return web.Response(text=ROBOTS_TXT)

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
    serve.add_argument("addresses", nargs="+")
    args = parser.parse_args()
    _serve_aiohttp(args.root, args.port, args.addresses)


if __name__ == "__main__":
    main()
