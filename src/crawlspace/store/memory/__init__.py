"""The memory engine: the in-memory Mercator frontier, the reference every store is held to by
tests/conformance (``frontier.py``; its records in ``records.py``, the link-driven priority rules
in ``links.py``). No I/O and no clock reads; every method takes ``now``."""

from crawlspace.store.memory.frontier import MemoryFrontier
from crawlspace.store.memory.records import default_robots_url

__all__ = ["MemoryFrontier", "default_robots_url"]
