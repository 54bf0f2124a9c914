"""The front bands of a priority policy (bands.py has what a band is): one per link depth for
``score``, one per halving of a URL's cash for ``aopic``. Pure."""

from __future__ import annotations

from typing import Final

from crawlspace.bands import FrontQueues
from crawlspace.frontier.aopic import SEED_CASH, cash_priority
from crawlspace.frontier.priority import DEPTH_WEIGHT

__all__ = ["front_queues"]

# AOPIC: one band per halving of a URL's cash below a seed's.
_AOPIC_WIDTH: Final = 1000


def front_queues(policy: str, aging: float) -> FrontQueues:
    """The bands of a priority policy: link depth for ``score``, halvings of cash for ``aopic``."""
    if policy == "aopic":
        return FrontQueues(width=_AOPIC_WIDTH, origin=cash_priority(SEED_CASH), aging=aging)
    return FrontQueues(width=DEPTH_WEIGHT, aging=aging)
