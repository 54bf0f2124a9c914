"""Worst-case parse cost on hostile 10 MiB pages, and how long it can stall the event loop.

    python benchmarks/parse_worst_case.py

Each page is parsed the way the crawl does it (crawlspace.parse.processors.process_html in the parse
thread pool) while the event loop runs a 1 ms ticker; the table reports the parse time and the
longest gap between ticks (the loop stall). Prints a Markdown table.
"""

from __future__ import annotations

import asyncio
import platform
import time

from crawlspace.crawl.stages import StagePools
from crawlspace.parse.processors import process_html

MIB = 1024 * 1024


def pages() -> dict[str, bytes]:
    return {
        "unclosed tags": b"<div><p><b><i>" * (MIB * 10 // 14),
        "deep nesting": b"<div>" * (MIB * 10 // 5),
        "many links": b'<a href="/x?i=1">x</a>' * (MIB * 10 // 22),
        "attribute soup": b"<a " + b'x="y" ' * (MIB * 10 // 6) + b">",
        "binary junk": bytes(range(256)) * (MIB * 10 // 256),
        "one huge text node": b"<p>" + b"word " * (MIB * 10 // 5),
    }


async def measure(body: bytes, pools: StagePools) -> tuple[float, float, int]:
    stall = 0.0
    done = False

    async def ticker() -> None:
        nonlocal stall
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            stall = max(stall, now - last)
            last = now

    tick = asyncio.create_task(ticker())
    started = time.perf_counter()
    content = await pools.parse(
        process_html,
        body,
        url="http://x.test/",
        content_type="text/html",
        product_token="CrawlspaceBot",
    )
    elapsed = time.perf_counter() - started
    done = True
    await tick
    links = content.prelinks.total if content.prelinks else len(content.links)
    return elapsed, stall, links


async def main() -> None:
    pools = StagePools(1)
    print(
        f"# Parse worst case, 10 MiB pages ({time.strftime('%Y-%m-%d')}, {platform.machine()},"
        f" Python {platform.python_version()})\n"
    )
    print("| page | parse s | longest event-loop stall ms | links |")
    print("|---|---:|---:|---:|")
    for name, body in pages().items():
        elapsed, stall, links = await measure(body, pools)
        print(f"| {name} | {elapsed:.2f} | {stall * 1000:.1f} | {links:,} |")
    pools.close()


if __name__ == "__main__":
    asyncio.run(main())
