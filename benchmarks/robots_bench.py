"""is_allowed throughput: crawlspace vs Protego vs urllib.robotparser on one realistic file.

Run: python benchmarks/robots_bench.py [--urls N] [--repeat R]
Prints a Markdown table of checks per second (best of R runs over the same URL list).
"""

from __future__ import annotations

import argparse
import random
import time
import urllib.robotparser
from collections.abc import Callable

from protego import Protego

from crawlspace.robots import RobotsTxt

AGENT = "CrawlspaceBot/0.1 (+http://example.com/bot)"
TOKEN = "CrawlspaceBot"
HOST = "https://www.example.com"
SECTIONS = ["shop", "blog", "news", "help", "account", "search", "media", "api", "docs", "forum"]
WORDS = ["item", "page", "list", "view", "edit", "print", "tag", "archive", "feed", "cart"]


def build_robots(rng: random.Random) -> str:
    """About 200 rules over three groups, in the style of large e-commerce/news sites."""
    lines = ["# generated for benchmarking", "Sitemap: https://www.example.com/sitemap.xml", ""]
    for agent in ("Googlebot", "Bingbot"):
        lines += [f"User-agent: {agent}", "Disallow: /checkout/", "Allow: /", ""]
    lines += ["User-agent: *", "User-agent: CrawlspaceBot", "Crawl-delay: 1"]
    for section in SECTIONS:
        lines.append(f"Disallow: /{section}/private/")
        lines.append(f"Allow: /{section}/private/public-")
        lines.append(f"Disallow: /{section}/*?sessionid=")
        lines.append(f"Disallow: /{section}/*/print$")
        for word in rng.sample(WORDS, 6):
            lines.append(f"Disallow: /{section}/{word}/")
            lines.append(f"Allow: /{section}/{word}/{rng.randint(1, 99)}")
        for _ in range(4):
            lines.append(f"Disallow: /{section}/{rng.choice(WORDS)}-{rng.randint(100, 999)}.html")
    lines += [
        "Disallow: /*.pdf$",
        "Disallow: /*?sort=",
        "Disallow: /*&sort=",
        "Disallow: /*?filter=*&page=",
        "Disallow: /tmp/",
        "Disallow: /cgi-bin/",
        "Allow: /media/*.jpg$",
        "Disallow: /*/edit$",
    ]
    return "\n".join(lines) + "\n"


def build_urls(rng: random.Random, count: int) -> list[str]:
    urls = []
    for _ in range(count):
        section = rng.choice(SECTIONS)
        word = rng.choice(WORDS)
        path = f"/{section}/{word}/{rng.randint(1, 500)}"
        roll = rng.random()
        if roll < 0.1:
            path = f"/{section}/private/{rng.choice(['public-', ''])}{word}"
        elif roll < 0.2:
            path += rng.choice(["?sort=asc", "?sessionid=abc", "?filter=a&page=2", "?q=x"])
        elif roll < 0.3:
            path += rng.choice([".pdf", ".jpg", "/print", "/edit", ".html"])
        elif roll < 0.35:
            path = f"/{section}/{word}-{rng.randint(100, 999)}.html"
        urls.append(HOST + path)
    return urls


def rate(check: Callable[[str], bool], urls: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for url in urls:
            check(url)
        best = min(best, time.perf_counter() - start)
    return len(urls) / best


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--urls", type=int, default=5000)
    args.add_argument("--repeat", type=int, default=5)
    opts = args.parse_args()
    rng = random.Random(9309)
    body = build_robots(rng)
    urls = build_urls(rng, opts.urls)
    rules = sum(line.split(":")[0] in ("Allow", "Disallow") for line in body.splitlines())

    ours = RobotsTxt.parse(body)
    theirs = Protego.parse(body)
    stdlib = urllib.robotparser.RobotFileParser()
    stdlib.parse(body.splitlines())

    checkers: dict[str, Callable[[str], bool]] = {
        "crawlspace": lambda url: ours.is_allowed(AGENT, url),
        "protego": lambda url: bool(theirs.can_fetch(url, TOKEN)),
        "urllib.robotparser": lambda url: stdlib.can_fetch(TOKEN, url),
    }
    verdicts = {name: [check(url) for url in urls] for name, check in checkers.items()}
    blocked = {name: v.count(False) for name, v in verdicts.items()}
    agree = sum(a == b for a, b in zip(verdicts["crawlspace"], verdicts["protego"], strict=True))

    print(f"robots.txt: {rules} rules, {len(body)} bytes; {len(urls)} URLs, best of {opts.repeat}")
    print(f"crawlspace agrees with protego on {agree}/{len(urls)} URLs\n")
    print("| parser | checks/sec | URLs blocked |")
    print("|---|---:|---:|")
    for name, check in checkers.items():
        print(f"| {name} | {rate(check, urls, opts.repeat):,.0f} | {blocked[name]} |")


if __name__ == "__main__":
    main()
