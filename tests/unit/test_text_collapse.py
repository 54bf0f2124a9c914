"""The compiled whitespace collapse (parse/_text.c) against its Python twin, to the character."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlspace.parse import html as html_module
from crawlspace.parse.html import python_collapse

compiled = pytest.mark.skipif(
    html_module._text is None,
    reason="the compiled helper was not built (no C compiler): Python collapses alone",
)

# Every character str.split() splits on, and neighbours that it does not (U+200B, U+180E and
# U+FEFF are not whitespace to Python).
_SPACES = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
_NOT_SPACES = ["\u200b", "\u180e", "\ufeff", "\x00", "\x1b", "\x7f", "\x84", "\x86", "\xa1"]
_WIDE = ["\u00e9", "\u4e2d", "\U0001f600", "\uffff", "\U0010ffff"]
_PIECES = st.lists(
    st.one_of(
        st.sampled_from(_SPACES + _NOT_SPACES + _WIDE + ["a", "bc", " ", "  ", "\n\t"]),
        st.text(max_size=8),
    ),
    max_size=60,
)


def test_every_whitespace_character_is_known() -> None:
    # str.split()'s set, as CPython defines it: ASCII's six and \x1c-\x1f, and Unicode's.
    assert len(_SPACES) == 29


@compiled
@settings(max_examples=1000, deadline=None)
@given(_PIECES)
def test_the_compiled_collapse_is_pythons(parts: list[str]) -> None:
    text = "".join(parts)
    assert html_module._text is not None
    collapsed = html_module._text.collapse(text)
    assert collapsed == python_collapse(text)
    assert type(collapsed) is str


@compiled
@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "\u3000",
        "a",
        "  a  ",
        "a\u3000b",  # the widest character is a space: the answer is narrower than the text
        "\U0001f600 x",  # four-byte characters kept
        "\u00e9\xa0\u00e9",  # a no-break space in a one-byte string
        "\x85\x1c\x1d\x1e\x1fz",
        "x" * 100_000 + "\n" * 5 + "y" * 100_000,
    ],
)
def test_the_compiled_collapse_on_the_edges(text: str) -> None:
    assert html_module._text is not None
    collapsed = html_module._text.collapse(text)
    assert collapsed == python_collapse(text)
    assert sys.getsizeof(collapsed) == sys.getsizeof(python_collapse(text))  # as narrow


@compiled
def test_the_compiled_collapse_refuses_what_is_not_a_str() -> None:
    assert html_module._text is not None
    with pytest.raises(TypeError):
        html_module._text.collapse(b"bytes")  # type: ignore[arg-type]
