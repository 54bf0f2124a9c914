"""What a stylesheet embeds: the URLs of its ``@import`` rules and ``url(...)`` values (fonts,
background images, other stylesheets), for page requisites (``page_requisites``).

A regular expression, not a CSS parser: only references are needed, and CSS's grammar for them is
small (CSS Syntax Level 3 §4.3.6 url tokens, §4.3.5 strings; CSS Cascade §2.1 ``@import``).
Comments are removed first so a commented-out rule fetches nothing. Pure and bounded: at most
``limit`` references, in order of appearance, each once.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MAX_REFERENCES", "css_references"]

MAX_REFERENCES: Final = 1000
_COMMENT: Final = re.compile(r"/\*.*?\*/", re.DOTALL)
_REFERENCE: Final = re.compile(
    r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)"'\s]*))\s*\)"""  # url("..."), url('...'), url(...)
    r"""|@import\s+(?:"([^"]*)"|'([^']*)')""",  # @import "..." (url(...) is matched above)
    re.IGNORECASE,
)


def css_references(text: str, limit: int = MAX_REFERENCES) -> list[str]:
    """The URLs ``text`` (a stylesheet, or a ``<style>`` element's content) refers to, as
    written; ``data:`` URLs and fragments (an SVG filter's ``url(#id)``) are not fetchable."""
    found: dict[str, None] = {}
    for match in _REFERENCE.finditer(_COMMENT.sub(" ", text)):
        ref = next((group for group in match.groups() if group is not None), "").strip()
        if not ref or ref.startswith("#") or ref[:5].lower() == "data:":
            continue
        found.setdefault(ref, None)
        if len(found) >= limit:
            break
    return list(found)
