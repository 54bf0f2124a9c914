"""Values as the scripts read them."""

from __future__ import annotations

__all__ = ["ADD_CHUNK", "num"]

ADD_CHUNK = 500  # URLs per add or exclude script: each call stays short (Redis is one thread)


def num(value: float) -> str:
    """Shortest exact decimal form of a float (repr round-trips), which Redis parses as a score."""
    return repr(float(value))
