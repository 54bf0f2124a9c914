"""Compare HTML parsers on link extraction: every a[href] plus visible text, per page.

Run: /work/venv/bin/python benchmarks/html_parsers_bench.py [--rounds N]

Two page sets: ~200 generated pages of varied, realistic markup (nav, articles, tables, inline
scripts and styles, some sloppy HTML), and whatever *.html files /usr/share/doc holds on this
machine (up to 300). Prints pages/s and MB/s per parser as a Markdown table.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

Extractor = Callable[[bytes], tuple[list[str], str]]

_WORDS = [
    *("crawler", "frontier", "politeness", "robots", "sitemap", "archive", "fetch", "queue"),
    *("host", "budget", "page", "link", "index", "content", "latency", "bandwidth", "server"),
    *("client", "request", "response", "header", "cache", "revisit"),
]


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + "."


def generate_page(rng: random.Random, index: int) -> bytes:
    """One synthetic page; sizes and structures vary so no parser gets a lucky shape."""
    parts = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        f"<title>Page {index} - {_sentence(rng, 4)}</title>",
        f'<link rel="canonical" href="/p/{index}"><link rel=stylesheet href=/s.css>',
        "<style>body{font:14px sans-serif}.nav a{color:#333}</style>",
        "<script>window.dataLayer=[];function g(){dataLayer.push(arguments)}</script></head>",
        '<body><header><nav class="nav"><ul>',
    ]
    parts += [f'<li><a href="/section/{i}">Section {i}</a></li>' for i in range(rng.randint(5, 40))]
    parts.append("</ul></nav></header><main>")
    for section in range(rng.randint(3, 30)):
        parts.append(f"<article id=a{section}><h2>{_sentence(rng, 5)}</h2>")
        for _ in range(rng.randint(1, 8)):
            link = f'<a href="https://example.com/{rng.randint(0, 10**6)}?q={section}">more</a>'
            parts.append(f"<p>{_sentence(rng, rng.randint(10, 60))} {link} {_sentence(rng, 8)}")
            if rng.random() < 0.7:  # real pages often leave <p> unclosed
                parts.append("</p>")
        if rng.random() < 0.3:
            rows = "".join(
                f"<tr><td>{rng.randint(0, 999)}<td><a href=/r/{r} rel=nofollow>row {r}</a>"
                for r in range(rng.randint(5, 50))
            )
            parts.append(f"<table class=data>{rows}</table>")
        if rng.random() < 0.2:
            parts.append(f"<script>var cfg={{id:{section},s:'<a href=/not-a-link>'}};</script>")
        parts.append("</article>")
    parts.append("</main><footer>")
    parts += [f"<a href=/legal/{i}>Legal {i}</a> | " for i in range(rng.randint(3, 15))]
    parts.append("</footer></body></html>")
    return "".join(parts).encode()


def generated_pages(count: int = 200, seed: int = 20240601) -> list[bytes]:
    rng = random.Random(seed)
    return [generate_page(rng, i) for i in range(count)]


def doc_pages(limit: int = 300) -> list[bytes]:
    paths = sorted(Path("/usr/share/doc").rglob("*.html"))[:limit]
    return [p.read_bytes() for p in paths if p.is_file()]


# ---- extractors: same job each, hrefs of a[href] and visible text --------------------------


def lexbor_extract(body: bytes) -> tuple[list[str], str]:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(body.decode("utf-8", "replace"))
    hrefs = [n.attributes.get("href") or "" for n in tree.css("a[href]")]
    tree.strip_tags(["script", "style", "noscript", "template"], recursive=True)
    body_node = tree.body
    text = " ".join(body_node.text(separator=" ").split()) if body_node is not None else ""
    return hrefs, text


def lxml_extract(body: bytes) -> tuple[list[str], str]:
    import lxml.etree  # type: ignore[import-untyped]
    import lxml.html  # type: ignore[import-untyped]

    try:
        # Bytes, not str: lxml refuses str input that carries an XML encoding declaration.
        root = lxml.html.document_fromstring(body)
    except (lxml.etree.ParserError, ValueError):  # empty or whitespace-only document
        return [], ""
    hrefs = [str(h) for h in root.xpath("//a/@href")]
    texts = root.xpath("//body//text()[not(ancestor::script or ancestor::style)]")
    return hrefs, " ".join(" ".join(str(t) for t in texts).split())


class _StdlibLinks(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []
        self.texts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "noscript", "template"):
            self._hidden += 1
        elif tag == "a":
            self.hrefs.extend(v or "" for k, v in attrs if k == "href")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "noscript", "template") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.texts.append(data)


def stdlib_extract(body: bytes) -> tuple[list[str], str]:
    parser = _StdlibLinks()
    parser.feed(body.decode("utf-8", "replace"))
    parser.close()
    return parser.hrefs, " ".join(" ".join(parser.texts).split())


def bs4_extract(body: bytes) -> tuple[list[str], str]:
    from bs4 import BeautifulSoup  # type: ignore[import-not-found]

    soup = BeautifulSoup(body, "html.parser")
    hrefs = [str(a.get("href")) for a in soup.find_all("a", href=True)]
    for node in soup(["script", "style", "noscript", "template"]):
        node.decompose()
    return hrefs, " ".join(soup.get_text(" ").split())


def crawlspace_extract(body: bytes) -> tuple[list[str], str]:
    """The full production path, for scale: also charset, base, canonical, meta, iframes."""
    from crawlspace.parse.html import extract

    page = extract(body, base_url="http://example.com/", content_type=None, product_token="b")
    return [link.href for link in page.links], page.text


def available() -> dict[str, Extractor]:
    found: dict[str, Extractor] = {
        "selectolax lexbor": lexbor_extract,
        "crawlspace extract() (lexbor, full)": crawlspace_extract,
    }
    try:
        import selectolax.parser  # noqa: F401

        print("note: selectolax modest importable but not benchmarked (deprecated in 1.0)")
    except ImportError:
        print("note: selectolax modest unavailable (removed/deprecated in selectolax 1.0)")
    try:
        import lxml.html  # noqa: F401

        found["lxml.html"] = lxml_extract
    except ImportError:
        print("note: lxml not installed")
    found["html.parser (stdlib)"] = stdlib_extract
    try:
        import bs4  # noqa: F401

        found["BeautifulSoup (html.parser)"] = bs4_extract
    except ImportError:
        print("note: BeautifulSoup not installed, skipped")
    return found


def bench(extractor: Extractor, pages: list[bytes], rounds: int) -> tuple[float, float, int]:
    """Best-of-rounds wall time; returns pages/s, MB/s and links found per pass."""
    best = float("inf")
    links = 0
    for _ in range(rounds):
        started = time.perf_counter()
        links = sum(len(extractor(page)[0]) for page in pages)
        best = min(best, time.perf_counter() - started)
    megabytes = sum(len(p) for p in pages) / 1e6
    return len(pages) / best, megabytes / best, links


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--rounds", type=int, default=3)
    rounds = args.parse_args().rounds
    extractors = available()
    for label, pages in (("generated", generated_pages()), ("/usr/share/doc", doc_pages())):
        if not pages:
            print(f"\n{label}: no pages found, skipped")
            continue
        size = sum(len(p) for p in pages) / 1e6
        print(f"\n### {label}: {len(pages)} pages, {size:.1f} MB, best of {rounds}\n")
        print("| parser | pages/s | MB/s | links found |")
        print("|---|---:|---:|---:|")
        for name, extractor in extractors.items():
            pages_s, mb_s, links = bench(extractor, pages, rounds)
            print(f"| {name} | {pages_s:,.0f} | {mb_s:.1f} | {links:,} |")


if __name__ == "__main__":
    main()
