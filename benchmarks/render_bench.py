"""Rendered pages against plain fetching on the same site (issue #33): pages per second and CPU
per page of the whole process tree (the crawl, its parse workers, Playwright's driver and
Chromium), one `crawlspace crawl` subprocess each.

    python benchmarks/render_bench.py [--pages 60] [--runs 1] [--quick]

The site is generated: ``--pages`` pages linked in a ring with shortcuts, served twice on
loopback, once as plain HTML (the links in the markup) and once as a single-page app (an empty
``<div id="app">`` and a script that builds the same links and text from a JSON endpoint). The
plain site is crawled without rendering, the app with ``--render auto``: the same pages, the
same links, found by parsing or by a browser. One request in flight per host, no delay, robots
obeyed, every body archived. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent / "src"))

from crawlspace.demo.sites import Response  # noqa: E402
from crawlspace.demo.webfarm import Site, WebFarm  # noqa: E402

APP_JS = b"""
const name = location.pathname === '/' ? 'p0' : location.pathname.slice(1).replace('.html', '');
fetch('/data/' + name + '.json').then(r => r.json()).then(page => {
  const app = document.getElementById('app');
  const h = document.createElement('h1'); h.textContent = page.title; app.appendChild(h);
  const p = document.createElement('p'); p.textContent = page.text; app.appendChild(p);
  for (const link of page.links) {
    const a = document.createElement('a'); a.href = link; a.textContent = link; app.appendChild(a);
  }
});
"""


def _links(n: int, count: int) -> list[str]:
    links = {f"/p{(n + 1) % count}.html", f"/p{(n * 7 + 3) % count}.html"}
    if n == 0:
        links |= {f"/p{i}.html" for i in range(0, count, 5)}
    return sorted(links)


def sites(count: int) -> dict[str, Site]:
    plain: dict[str, Response] = {}
    app: dict[str, Response] = {}
    html = {"Content-Type": "text/html"}
    shell = (
        b'<html><head><title>App</title></head><body><div id="app"></div>'
        b'<script src="/app.js"></script></body></html>'
    )
    for n in range(count):
        links = _links(n, count)
        words = " ".join(f"word{(n * 31 + i) % 997}" for i in range(120))
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        body = f"<html><body><h1>Page {n}</h1><p>{words}</p>{anchors}</body></html>"
        path = "/" if n == 0 else f"/p{n}.html"
        plain[path] = Response(200, html, body.encode())
        if n == 0:
            plain["/p0.html"] = plain["/"]
        app[path] = Response(200, html, shell)
        if n == 0:
            app["/p0.html"] = app["/"]
        data = json.dumps({"title": f"Page {n}", "text": words, "links": links}).encode()
        app[f"/data/p{n}.json"] = Response(200, {"Content-Type": "application/json"}, data)
    app["/app.js"] = Response(200, {"Content-Type": "text/javascript"}, APP_JS)
    return {"plain": Site("plain", plain), "app": Site("app", app)}


def crawl(farm: WebFarm, name: str, render: bool, out: Path) -> tuple[int, float, float]:
    """(pages fetched, wall seconds, CPU seconds of the whole process tree)."""
    config = out.parent / f"{out.name}.toml"
    config.write_text(
        '[crawl]\nallow_nets = ["127.0.0.0/8"]\nmin_delay = 0.0\ndelay_factor = 0.0\n'
        f'render = "{"auto" if render else "never"}"\n'
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    command = [sys.executable, "-m", "crawlspace.cli", "crawl", farm.url(name, "/")]
    command += ["--out", str(out), "--config", str(config), "-q"]
    subprocess.run(command, check=True, timeout=1800, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    pages = sum(
        1 for r in farm.requests_for(name) if r.path_qs.endswith(".html") or r.path_qs == "/"
    )
    return pages, wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="12 pages, one run (CI's smoke)")
    args = parser.parse_args()
    count, runs = (12, 1) if args.quick else (args.pages, args.runs)
    if shutil.which("chromium") is None:
        print("render_bench: chromium is not installed", file=sys.stderr)
        return 2
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as work, WebFarm(sites(count)) as farm:
        results: dict[str, list[tuple[int, float, float]]] = {"plain": [], "app": []}
        for run in range(1, runs + 1):
            for name in ("plain", "app"):
                before = len(farm.requests_for(name))
                pages, wall, cpu = crawl(farm, name, name == "app", Path(work) / f"{name}{run}")
                pages -= sum(
                    1
                    for r in farm.requests_for(name)[:before]
                    if r.path_qs.endswith(".html") or r.path_qs == "/"
                )
                results[name].append((pages, wall, cpu))
                print(
                    f"run {run}/{runs} {name}: {pages} pages in {wall:.1f} s, CPU {cpu:.1f} s",
                    file=sys.stderr,
                )
        for name, label in (
            ("plain", "plain HTML, no rendering"),
            ("app", "the same as an app, --render auto"),
        ):
            pages, wall, cpu = sorted(results[name], key=lambda r: r[1])[len(results[name]) // 2]
            rate = pages / wall if wall else 0.0
            cpu_ms = 1000 * cpu / pages if pages else 0.0
            rows.append(f"| {label} | {pages} | {wall:.1f} | {rate:.1f} | {cpu_ms:.1f} |")
    print(f"## Rendered against plain pages: {count} pages, one host, median of {runs} run(s)\n")
    print("| site | pages | wall s | pages/s | CPU ms / page (whole tree) |")
    print("|---|---:|---:|---:|---:|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
