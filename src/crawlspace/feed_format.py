"""The index feed's format: its schema version, its record kinds and its document ids.

The feed (docs/feed.md) holds one record per URL version that changes what an index should hold:
an ``upsert`` of a page's document or a ``delete`` of one (frontier/feed.py decides which). A
record is a JSON object; its page part (title, language, text, outlinks) is built where the page
was parsed and travels and rests packed (feed_codec.py).
"""

from __future__ import annotations

import hashlib
from typing import Final

__all__ = ["DELETE", "FEED_SCHEMA", "UPSERT", "document_id"]

# Raised when a record's meaning changes (a field renamed or its unit changed); new fields are
# added without raising it, so a consumer ignores the keys it does not know.
FEED_SCHEMA: Final = 1

UPSERT: Final = "upsert"
DELETE: Final = "delete"


def document_id(url: str) -> str:
    """A document's stable id: the same URL always gives the same id, in any store or run."""
    return hashlib.sha256(url.encode()).hexdigest()[:32]
