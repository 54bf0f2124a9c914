"""robots.txt answers reached through a redirect to another host, kept for their lifetime.

Many hosts may point robots.txt at one file elsewhere (every subdomain of a site at its main
host, a platform's names at one CDN URL). RFC 9309 §2.4 lets a crawler keep an answer for its
HTTP lifetime, and §2.3.1.2 applies the file to each initial authority: one fetch of the target
can answer every host that redirects there until it expires. Pure: callers pass ``now``.
Bounded by bytes (a body may be 512 KiB), least recently used first out.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["HopAnswer", "HopAnswers"]

MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class HopAnswer:
    status: int
    body: bytes
    expires_at: float


class HopAnswers:
    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._answers: OrderedDict[str, HopAnswer] = OrderedDict()

    def __len__(self) -> int:
        return len(self._answers)

    def put(self, url: str, answer: HopAnswer) -> None:
        self._drop(url)
        if len(answer.body) > self._max_bytes:
            return
        self._answers[url] = answer
        self._bytes += len(answer.body)
        while self._bytes > self._max_bytes:
            self._drop(next(iter(self._answers)))

    def get(self, url: str, now: float) -> HopAnswer | None:
        """The answer ``url`` gave while it is fresh, else None (an expired one is dropped)."""
        answer = self._answers.get(url)
        if answer is None:
            return None
        if answer.expires_at <= now:
            self._drop(url)
            return None
        self._answers.move_to_end(url)
        return answer

    def _drop(self, url: str) -> None:
        old = self._answers.pop(url, None)
        if old is not None:
            self._bytes -= len(old.body)
