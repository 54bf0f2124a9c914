"""Freed DOM memory goes back to the OS after a big page (heap.py), so parse workers do not
each keep their worst page's footprint for the rest of the crawl."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Run in a fresh interpreter, like a parse worker: in the test process, memory freed by
# earlier tests would serve the parse and there would be nothing new to give back.
_WORKER = """
import gc
from pathlib import Path
from selectolax.lexbor import LexborHTMLParser
from crawlspace.heap import release_free_heap

def rss_kib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

start = rss_kib()
# ~3 MB of small elements: lexbor allocates ~13 bytes of DOM per byte of HTML.
html = "<ul>" + "".join(f'<li><a href="/p{i}">page {i}</a></li>' for i in range(90_000))
tree = LexborHTMLParser(html)
assert len(tree.css("a")) == 90_000
parsed = rss_kib()
del tree, html
gc.collect()
freed = rss_kib()
released = release_free_heap()
print(start, parsed, freed, rss_kib(), released)
"""


def test_a_freed_dom_is_returned_to_the_os() -> None:
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc")
    out = subprocess.run(
        [sys.executable, "-c", _WORKER], capture_output=True, text=True, check=True
    ).stdout.split()
    start, parsed, freed, trimmed = map(int, out[:4])
    if out[4] != "True":
        pytest.skip("not glibc: malloc_trim is unavailable")
    assert parsed - start > 20 * 1024  # the DOM took tens of MB
    assert freed - start > (parsed - start) // 2  # freeing alone keeps most of it resident
    assert trimmed - start < (parsed - start) // 4  # the trim gives it back
