"""Sitemap parsing throughput: crawlspace's expat reader vs lxml iterparse, plus hostile inputs.

Run: python benchmarks/sitemap_bench.py [--repeat R]
Prints a Markdown table (best of R runs). lxml runs with the same safety settings
(resolve_entities=False, no_network=True, load_dtd=False) for a like-for-like figure.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import time
from collections.abc import Callable

from lxml import etree

from crawlspace.parse.sitemap import MAX_SITEMAP_URLS, SitemapError, parse_sitemap

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def build(n: int) -> bytes:
    rows = "".join(
        f"<url><loc>https://www.example.com/products/item-{i}.html?ref=sitemap&amp;x={i % 7}</loc>"
        f"<lastmod>2024-0{1 + i % 9}-1{i % 10}T08:00:00+00:00</lastmod>"
        f"<changefreq>weekly</changefreq><priority>0.{i % 10}</priority></url>\n"
        for i in range(n)
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n{rows}</urlset>\n'.encode()
    )


def lxml_parse(body: bytes) -> int:
    data = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
    count = 0
    for _, elem in etree.iterparse(
        io.BytesIO(data),
        tag=f"{{{NS}}}url",
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
    ):
        if elem.findtext(f"{{{NS}}}loc"):
            count += 1
        elem.clear()
    return count


def ours(body: bytes) -> int:
    return len(parse_sitemap(body).entries)


def best(fn: Callable[[bytes], int], body: bytes, repeat: int) -> tuple[float, int]:
    times = []
    count = 0
    for _ in range(repeat):
        started = time.perf_counter()
        count = fn(body)
        times.append(time.perf_counter() - started)
    return min(times), count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    plain = build(MAX_SITEMAP_URLS)
    packed = gzip.compress(plain)
    print(
        f"sitemap: {MAX_SITEMAP_URLS:,} URLs, {len(plain) / 2**20:.1f} MiB plain, "
        f"{len(packed) / 2**20:.2f} MiB gzipped\n"
    )
    print("| parser | input | time | URLs/s |")
    print("|---|---|---|---|")
    for name, fn in (
        ("crawlspace (expat, streaming)", ours),
        ("lxml iterparse (safe flags)", lxml_parse),
    ):
        for label, body in (("plain", plain), ("gzip", packed)):
            seconds, count = best(fn, body, args.repeat)
            assert count == MAX_SITEMAP_URLS, (name, count)
            print(f"| {name} | {label} | {seconds * 1000:.0f} ms | {count / seconds:,.0f} |")
    entities = '<!ENTITY a0 "lol">' + "".join(
        f'<!ENTITY a{i} "{f"&a{i - 1};" * 10}">' for i in range(1, 10)
    )
    bomb = f"<!DOCTYPE l [{entities}]><urlset><url><loc>&a9;</loc></url></urlset>".encode()
    started = time.perf_counter()
    with contextlib.suppress(SitemapError):
        parse_sitemap(bomb)
    print(f"\nbillion laughs refused in {(time.perf_counter() - started) * 1e6:.0f} µs")
    gz_bomb = gzip.compress(b"<urlset>" + b" " * (1 << 30), compresslevel=9)
    started = time.perf_counter()
    result = parse_sitemap(gz_bomb)
    print(
        f"gzip bomb ({len(gz_bomb) / 2**20:.1f} MiB -> 1 GiB) cut at 50 MiB in "
        f"{time.perf_counter() - started:.2f} s ({dict(result.warnings)})"
    )


if __name__ == "__main__":
    main()
