"""Hand freed heap memory back to the OS after a big parse (glibc only; elsewhere a no-op).

lexbor builds a page's DOM out of many small allocations, ~13 bytes per byte of HTML (32 MB for
python3.11-doc's 2.5 MB contents.html). Freed, they stay in glibc's arenas, so a parse worker
that met one big page would hold that memory for the rest of the crawl, and two workers would
each hold their own worst page at once. ``malloc_trim`` returns it: ~0.1 ms after a big page.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

__all__ = ["TRIM_AFTER_BYTES", "release_free_heap"]

# Pages below this leave too little behind to be worth a trim.
TRIM_AFTER_BYTES = 256 * 1024


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    # The process's own symbols (dlopen(NULL)) include its C library's. Not ctypes.util's
    # find_library("c"): it imports shutil, subprocess and tempfile (~1.4 MB of every parse
    # worker) and runs ldconfig in a child process to find a library already loaded.
    try:
        libc = ctypes.CDLL(None)
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError, TypeError):  # not glibc (musl, macOS): nothing to do
        return None
    return trim


def release_free_heap() -> bool:
    """Return free heap pages to the OS; False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
