"""Crash points for the fault-injection tests, off unless an environment variable names them.

``CRAWLSPACE_CRASH_AT=after_warc:3`` ends the process abruptly (``os._exit``, like kill -9: no
cleanup, no flush of anything not yet written) the 3rd time the crawl reaches ``after_warc``.
``CRAWLSPACE_DROP_ACK=2`` silently drops the 2nd page completion, as if the ack were lost on
the way to a remote store: the lease must expire and the URL be completed exactly once later.
Reading the variables once keeps the cost of a disabled point to one comparison.
"""

from __future__ import annotations

import os

CRASH_EXIT_CODE = 137  # what a shell reports for a process killed by SIGKILL

_crash_spec = os.environ.get("CRAWLSPACE_CRASH_AT", "")
_crash_name, _, _crash_count = _crash_spec.partition(":")
_crash_after = int(_crash_count or 1) if _crash_name else 0
_drop_ack_at = int(os.environ.get("CRAWLSPACE_DROP_ACK", "0") or 0)
_hits: dict[str, int] = {}


def crash_point(name: str) -> None:
    if name != _crash_name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] >= _crash_after:
        os._exit(CRASH_EXIT_CODE)


def drop_ack() -> bool:
    if not _drop_ack_at:
        return False
    _hits["ack"] = _hits.get("ack", 0) + 1
    return _hits["ack"] == _drop_ack_at
