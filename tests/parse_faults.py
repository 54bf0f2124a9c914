"""A page processor for fault tests: it kills its own parse worker (SIGKILL, as the kernel's
out-of-memory killer would) the first time it parses a page that asks for it, and parses every
other page, and that one's next parse, as crawlspace's own HTML processor does. A parse worker
imports it by name, so it lives here, not in a test's script."""

from __future__ import annotations

import hashlib
import os
import signal
from pathlib import Path

from crawlspace.parse.processors import ProcessedContent, process_html

KILL_MARK = b"<!-- kill the parse worker -->"


def killed_once(
    body: bytes, *, marks: str, url: str, content_type: str | None, product_token: str
) -> ProcessedContent:
    """``marks``: a directory where each page that killed its worker leaves a file."""
    if KILL_MARK in body:
        mark = Path(marks) / hashlib.sha256(url.encode()).hexdigest()
        try:
            mark.touch(exist_ok=False)
        except FileExistsError:
            pass  # this page killed a worker already: parse it
        else:
            os.kill(os.getpid(), signal.SIGKILL)
    return process_html(body, url=url, content_type=content_type, product_token=product_token)
