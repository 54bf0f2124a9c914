"""Values as the scripts read them."""

from __future__ import annotations

import base64
from collections.abc import Mapping

from crawlspace.records import RobotsRecord

__all__ = ["ADD_CHUNK", "num", "packable", "robots_args", "robots_record", "url_key"]

ADD_CHUNK = 500  # URLs per add or exclude script: each call stays short (Redis is one thread)


def num(value: float) -> str:
    """Shortest exact decimal form of a float (repr round-trips), which Redis parses as a score."""
    return repr(float(value))


def packable(text: str | None) -> str:
    """A text for a packed URL record (lua/_common.lua rec_encode), whose fields the unit
    separator (byte 31) divides: '' for None and for a text that holds one. Only a server's
    hostile validator or a strange error message can. Dropped, such a validator is not stored
    (the URL keeps the one it had, which the server no longer matches: the next visit is
    answered in full) and such a reason is left empty; kept, it would shift every field after
    it."""
    if not text or "\x1f" in text:
        return ""
    return text


def url_key(url_id: int) -> str:
    """A URL id as the scripts key it: fixed width, so a queue's ties sort by admission."""
    return f"{url_id:016d}"


def robots_args(record: RobotsRecord) -> tuple[object, ...]:
    """A robots.txt record as lua/complete_robots.lua takes it. The body travels base64-encoded:
    the client decodes replies as text, bodies are bytes."""
    return (
        "" if record.status is None else record.status,
        record.outcome,
        base64.b64encode(record.body).decode("ascii"),
        num(record.fetched_at),
        num(record.expires_at),
        record.attempts,
        record.error or "",
    )


def robots_record(host_key: str, fields: Mapping[str, str]) -> RobotsRecord:
    """A robots.txt record from its hash (``robots_args``' fields by name)."""
    return RobotsRecord(
        host_key=host_key,
        status=int(fields["status"]) if fields["status"] else None,
        outcome=fields["outcome"],
        body=base64.b64decode(fields["body"]),
        fetched_at=float(fields["fetched_at"]),
        expires_at=float(fields["expires_at"]),
        attempts=int(fields["attempts"]),
        error=fields["error"] or None,
    )
