"""Throughput of crawlspace.urls.normalize against stdlib and w3lib baselines.

Run: python benchmarks/normalize_bench.py [--links 10000] [--repeat 5]

Each contender resolves ~10k extracted hrefs against their page URL and normalizes them; the
best of ``--repeat`` runs is reported as normalizations per second on one core. Time is
process CPU time (``time.process_time``) so that other load on a shared machine distorts less.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from urllib.parse import urljoin, urlsplit, urlunsplit

from crawlspace.discovery.policy_normalize import UrlPolicy
from crawlspace.urls import normalize

_POLICY = UrlPolicy()  # default: strip tracking/session parameters, no sorting or folding


def normalize_with_policy(href: str, base: str) -> str | None:
    """What Discovery does: safe normalization, then the default policy."""
    url = normalize(href, base)
    return None if url is None else _POLICY.apply(url)


_DEFAULT_PORTS = {"http": "80", "https": "443"}


def make_links(count: int, seed: int = 1) -> list[tuple[str, str]]:
    """A deterministic mix shaped like links extracted from HTML pages."""
    rng = random.Random(seed)
    # Page URLs are what the crawler fetched, i.e. already normalized (punycode host).
    hosts = ["www.example.com", "blog.example.org", "shop.example.co.uk", "xn--bcher-kva.de"]
    words = ["about", "products", "item", "news", "2024", "a%20b", "caf%C3%A9", "~user", "Index"]

    def path(depth: int) -> str:
        return "/".join(rng.choice(words) for _ in range(depth))

    pages = [f"https://{rng.choice(hosts)}/{path(rng.randint(1, 3))}.html" for _ in range(200)]
    kinds: list[Callable[[], str]] = [
        lambda: path(rng.randint(1, 2)) + ".html",
        lambda: "/" + path(rng.randint(1, 4)),
        lambda: "../" + path(2) + "/",
        lambda: f"/search?q={rng.choice(words)}&page={rng.randint(1, 50)}",
        lambda: f"?sort=price&page={rng.randint(1, 9)}",
        lambda: f"https://{rng.choice(hosts)}/{path(2)}?id={rng.randint(1, 10**6)}",
        lambda: f"http://b\u00fccher.de/{path(1)}",
        lambda: f"//cdn.example.net/static/{path(1)}.js",
        lambda: f"/p/%7e{rng.choice(words)}/%2fx?ref=%41%62",
        lambda: f"#{rng.choice(words)}",
        lambda: f"HTTP://WWW.EXAMPLE.COM:80/{path(2)}#frag",
        lambda: "mailto:info@example.com",
        lambda: f"  /{path(1)}\t/page\n ",
    ]
    weights = [20, 25, 8, 10, 6, 11, 1, 5, 3, 4, 3, 2, 2]
    return [(rng.choices(kinds, weights)[0](), rng.choice(pages)) for _ in range(count)]


def stdlib_normalize(href: str, base: str) -> str | None:
    """urljoin plus the cheapest useful cleanup: case, default port, fragment, empty path."""
    try:
        parts = urlsplit(urljoin(base, href.strip()))
        if parts.scheme not in _DEFAULT_PORTS:
            return None
        netloc = parts.netloc.lower().rpartition("@")[2]
        if netloc.endswith(":" + _DEFAULT_PORTS[parts.scheme]):
            netloc = netloc.rsplit(":", 1)[0]
        return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    except ValueError:
        return None


def w3lib_normalize(href: str, base: str) -> str | None:
    from w3lib.url import canonicalize_url

    absolute = urljoin(base, href.strip())
    if not absolute.startswith(("http://", "https://")):
        return None
    try:
        return str(canonicalize_url(absolute))
    except ValueError:
        return None


def bench(
    func: Callable[[str, str], str | None], links: list[tuple[str, str]], repeat: int
) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for href, base in links:
            func(href, base)
        best = min(best, time.process_time() - start)
    return len(links) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--links", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    links = make_links(args.links)
    contenders: list[tuple[str, Callable[[str, str], str | None]]] = [
        ("crawlspace.urls.normalize (WHATWG + RFC 3986 §6.2.2)", normalize),
        (
            "  + default UrlPolicy (tracking params, discovery/policy_normalize.py)",
            normalize_with_policy,
        ),
        ("stdlib urljoin + minimal cleanup", stdlib_normalize),
    ]
    try:
        import w3lib.url  # noqa: F401

        contenders.append(("urljoin + w3lib.url.canonicalize_url", w3lib_normalize))
    except ImportError:
        print("w3lib not installed; skipping it")
    print(f"{len(links)} links, best of {args.repeat} runs, one core\n")
    print("| implementation | normalizations/s | µs/link |")
    print("|---|---:|---:|")
    for name, func in contenders:
        rate = bench(func, links, args.repeat)
        print(f"| {name} | {rate:,.0f} | {1e6 / rate:.2f} |")


if __name__ == "__main__":
    main()
