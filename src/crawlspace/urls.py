"""URL resolution and safe normalization for crawl keys.

Two stages, kept in this order on purpose:

1. **Resolution** follows the WHATWG URL Standard (https://url.spec.whatwg.org/), i.e. what a
   browser does with an ``href``: tabs/newlines are stripped (§4.4 "basic URL parser", step 3),
   ``\\`` acts as ``/`` for special schemes, ``//host`` is scheme-relative, ``..`` cannot climb
   above the root, IDN hosts become punycode (§3.3 "domain to ASCII"), odd IPv4 spellings such
   as ``0x7f.1`` become dotted decimal (§3.5 "IPv4 parser"), IPv6 literals are compressed
   (§3.6) and default ports are dropped. The ``ada_url`` package does this part.
2. **Normalization** applies the *safe* RFC 3986 §6.2.2 rules on top of the WHATWG
   serialization: percent-encoded unreserved characters are decoded (§6.2.2.2), the remaining
   percent-encoding hex digits are upper-cased (§6.2.2.1), the fragment and userinfo are
   dropped (neither is sent in an HTTP request-target, RFC 9110 §4.2.4 / §7.1), and an empty
   query ``?`` is dropped (see ``_finish``). Case/scheme/port/dot-segment rules (§6.2.2.1,
   §6.2.2.3, §6.2.3) are already guaranteed by the WHATWG serializer.

Path case, reserved characters (``%2F`` stays distinct from ``/``), ``+`` and query parameter
order are preserved: changing any of them can change which resource a server returns.

Only ``http`` and ``https`` URLs survive; everything else yields ``None`` plus a reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Literal

import ada_url

__all__ = [
    "REASON_INVALID",
    "REASON_UNSUPPORTED_SCHEME",
    "QueryOrder",
    "host_and_port",
    "host_key",
    "host_of",
    "normalize",
    "normalize_with_reason",
    "robots_url",
    "seen_key",
]

# The crawl's treatment of query parameter order (``seen_key``; config.py query_order).
QueryOrder = Literal["ignored", "learned"]

REASON_INVALID: Final = "invalid_url"
REASON_UNSUPPORTED_SCHEME: Final = "unsupported_scheme"

# RFC 3986 §2.3: unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"
_UNRESERVED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEX: Final = "0123456789abcdefABCDEF"


def _build_escape_table() -> dict[str, str]:
    """Map every two-hex-digit escape body ("7e", "2F", ...) to its normalized form.

    A dict lookup per ``%`` keeps the per-link cost free of regexes and int parsing.
    """
    table: dict[str, str] = {}
    for hi in _HEX:
        for lo in _HEX:
            body = hi + lo
            char = chr(int(body, 16))
            table[body] = char if char in _UNRESERVED else "%" + body.upper()
    return table


_ESCAPES: Final = _build_escape_table()
_UPPER_ONLY: Final = {body: "%" + body.upper() for body in _ESCAPES}


def _fix_percent(text: str) -> str:
    """RFC 3986 §6.2.2.1/§6.2.2.2 on a path+query string that contains ``%``.

    A lone ``%`` (not followed by two hex digits) is kept verbatim, as browsers send it. If one
    is present we only upper-case escapes and decode nothing: decoding ``%%34%31`` would yield
    ``%41``, which a second pass would decode again, breaking idempotence.
    """
    parts = text.split("%")
    head = parts[0]
    try:
        return head + "".join([_ESCAPES[part[:2]] + part[2:] for part in parts[1:]])
    except KeyError:  # a lone '%' somewhere: the rare slow path
        out = [head]
        for part in parts[1:]:
            rep = _UPPER_ONLY.get(part[:2])
            out.append("%" + part if rep is None else rep + part[2:])
        return "".join(out)


def _finish(href: str) -> tuple[str | None, str | None]:
    """Turn a WHATWG-serialized href into our normalized form, or a rejection reason."""
    # The WHATWG serializer lower-cases the scheme, so a prefix test is exact (§4.5).
    if href.startswith("https://"):
        start = 8
    elif href.startswith("http://"):
        start = 7
    else:
        return None, REASON_UNSUPPORTED_SCHEME
    # Serialized special URLs are pure ASCII and '#' only ever opens the fragment there.
    hash_at = href.find("#", start)
    if hash_at != -1:
        href = href[:hash_at]
    # Special URLs always serialize a path starting with '/', so it ends the authority.
    slash = href.find("/", start)
    if slash == -1:  # pragma: no cover - the serializer always emits a path for http(s)
        slash = len(href)
    at = href.rfind("@", start, slash)
    if at != -1:
        # Userinfo is deprecated for http(s) (RFC 9110 §4.2.4) and never sent on the wire.
        href = href[:start] + href[at + 1 :]
        slash -= at + 1 - start
    if href.find("?", slash) == len(href) - 1:
        # Deliberate crawler choice beyond RFC 3986 §6.2.3 (which keeps empty delimiters):
        # "/p?" and "/p" are one resource on practically every server, and one key per
        # resource is what the frontier needs.
        href = href[:-1]
    if "%" in href:
        href = href[:slash] + _fix_percent(href[slash:])
    return href, None


# An href that is already an absolute http(s) URL does not depend on its base (WHATWG §4.4:
# the scheme state never consults base for special URLs with "//"), so we skip parsing the base.
# Unlike `new URL(href, base)` this also accepts it when the base itself is unparsable.
_ABSOLUTE: Final = ("http://", "https://")


def _resolve_public(url: str, base: str | None) -> str | None:
    """Resolve through ada_url's public API. Always correct, somewhat slower."""
    try:
        if base is None or url.startswith(_ABSOLUTE):
            return str(ada_url.URL(url).href)
        return ada_url.join_url(base, url)
    except ValueError:
        return None


_Resolver = Callable[[str, str | None], str | None]


def _make_fast_resolver() -> _Resolver | None:
    """Build a resolver that calls ada's C API directly through cffi, or return None.

    ``ada_url._ada_wrapper`` is a private module; the public ``join_url`` pays for a
    garbage-collected handle per call, which costs about a third of our throughput. If the
    private names ever move, we silently fall back to the public API (tests cover both).
    """
    try:
        from ada_url._ada_wrapper import ffi, lib

        parse, parse_base = lib.ada_parse, lib.ada_parse_with_base
        is_valid, get_href, free, unpack = (
            lib.ada_is_valid,
            lib.ada_get_href,
            lib.ada_free,
            ffi.unpack,
        )
    except (ImportError, AttributeError):  # pragma: no cover - depends on the installed ada_url
        return None

    def resolve(url: str, base: str | None) -> str | None:
        try:
            raw = url.encode()
            if base is None or url.startswith(_ABSOLUTE):
                handle = parse(raw, len(raw))
            else:
                raw_base = base.encode()
                handle = parse_base(raw, len(raw), raw_base, len(raw_base))
        except UnicodeEncodeError:  # lone surrogates cannot come from decoded HTML
            return None
        try:
            if not is_valid(handle):
                return None
            view = get_href(handle)
            # The href of a valid URL is ASCII by construction (WHATWG §4.5).
            href: str = unpack(view.data, view.length).decode("ascii")
            return href
        finally:
            free(handle)

    return resolve


_fast_resolve = _make_fast_resolver()
_resolve: _Resolver = _fast_resolve if _fast_resolve is not None else _resolve_public


def normalize_with_reason(url: str, base: str | None = None) -> tuple[str | None, str | None]:
    """Resolve ``url`` against ``base`` and normalize it.

    Returns ``(normalized, None)`` on success or ``(None, reason)`` where reason is
    ``REASON_INVALID`` or ``REASON_UNSUPPORTED_SCHEME``. Never raises.
    """
    href = _resolve(url, base)
    if href is None:
        return None, REASON_INVALID
    return _finish(href)


def normalize(url: str, base: str | None = None) -> str | None:
    """Resolve and normalize like ``normalize_with_reason`` but return only the URL."""
    href = _resolve(url, base)
    if href is None:
        return None
    return _finish(href)[0]


def host_key(url: str) -> str:
    """Return ``scheme://authority`` of a normalized URL, e.g. ``http://example.com:8080``.

    The default port is already gone and IPv6 literals keep their brackets, so this is a
    stable per-server key for politeness queues.
    """
    start = url.find("://")
    if start == -1:
        return url
    slash = url.find("/", start + 3)
    return url if slash == -1 else url[:slash]


def _authority(url: str) -> tuple[str, str]:
    start = url.find("://")
    scheme = url[:start] if start != -1 else ""
    rest = url[start + 3 :] if start != -1 else url
    slash = rest.find("/")
    return scheme, rest if slash == -1 else rest[:slash]


def _split_authority(authority: str) -> tuple[str, str]:
    if authority.startswith("["):
        close = authority.find("]")
        return authority[1:close], authority[close + 2 :]
    host, _, port = authority.partition(":")
    return host, port


def host_of(url: str) -> str:
    """Hostname of a normalized URL, without port or IPv6 brackets."""
    return _split_authority(_authority(url)[1])[0]


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def host_and_port(url: str) -> tuple[str, int]:
    """Hostname and effective port (the scheme default when none is written)."""
    scheme, authority = _authority(url)
    host, port = _split_authority(authority)
    return host, int(port) if port else _DEFAULT_PORTS.get(scheme, 0)


def robots_url(host_key: str) -> str:
    """The robots.txt URL for ``host_key`` ("scheme://authority"), per RFC 9309 §2.3."""
    return host_key.rstrip("/") + "/robots.txt"


def seen_key(url: str) -> str | None:
    """A normalized URL's key in the seen set when query parameter order is ignored: its query
    parameters in name order (a stable sort, so repeated names keep their relative order);
    None when the query has fewer than two parameters, so the URL is its own key.

    The key only decides what counts as seen: the request keeps the order first linked, since
    a server that reads its parameters in order answers the form a page links, not this one.
    Sorting is not a normalization every server honours (RFC 3986 leaves the query opaque),
    so it is a crawl setting (``query_order``), not part of ``normalize``."""
    q = url.find("?")
    if q == -1 or url.find("&", q) == -1:
        return None
    params = url[q + 1 :].split("&")
    ordered = sorted(params, key=_param_name)
    return url if ordered == params else url[: q + 1] + "&".join(ordered)


def _param_name(param: str) -> str:
    return param.partition("=")[0]
