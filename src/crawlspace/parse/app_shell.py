"""Does a page look like a JavaScript app's empty shell? (issue #33; frontier/render_entry.py)

A single-page app serves the same few hundred bytes for every URL: a root element the script
fills in (``<div id="app"></div>``) and a ``<noscript>`` that asks for JavaScript. Its plain
parse finds no text and no links, which a thin page shows too; the shell's own marks tell the
two apart, so ``render auto`` can send the shell to the browser at once and leave a short
page alone. Pure: a parsed tree in, a verdict out.
"""

from __future__ import annotations

import re
from typing import Final

from selectolax.lexbor import LexborHTMLParser

__all__ = ["app_shell"]

# Roots the common frameworks mount into: React (create-react-app "root"), Vue ("app"),
# Next.js ("__next"), Nuxt ("__nuxt", "__layout"), Angular (<app-root>), Svelte ("svelte"),
# Ember ("ember-application" class), Quasar ("q-app"), Gatsby ("___gatsby").
_ROOTS: Final = (
    "#root, #app, #__next, #__nuxt, #__layout, #q-app, #___gatsby, #svelte,"
    " app-root, [data-reactroot], [ng-app], [data-server-rendered], .ember-application"
)
_ASKS_FOR_SCRIPT: Final = re.compile(r"\b(enable|turn on|requires?|need)\b.{0,40}javascript", re.I)
_MAX_NOSCRIPT_CHARS: Final = 2000  # a page's real content in <noscript> is not a plea


def app_shell(tree: LexborHTMLParser) -> bool:
    """True for a page with scripts whose ``<noscript>`` asks for JavaScript, or whose app root
    holds no text and no link."""
    if tree.css_first("script") is None:
        return False
    for noscript in tree.css("noscript"):
        text = noscript.text(deep=True, separator=" ")[:_MAX_NOSCRIPT_CHARS]
        if _ASKS_FOR_SCRIPT.search(text):
            return True
    for root in tree.css(_ROOTS):
        # Empty, or holding only a loading spinner: no text and no link yet.
        if not root.text(deep=True).strip() and root.css_first("a[href]") is None:
            return True
    return False
