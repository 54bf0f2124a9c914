"""robots.txt parsing and matching (RFC 9309), tolerant the way Google's parser is.

Pure code: bytes in, verdicts out. Each group's rules are compiled once, on first use, into an
index keyed by each pattern's literal head, so a check is one bisect plus a look at the few
rules whose head prefixes the path; only wildcard patterns run a (linear-time) regex.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable

__all__ = ["DEFAULT_MAX_BYTES", "RobotsTxt"]

# RFC 9309 §2.5: crawlers MUST parse at least 500 KiB.
DEFAULT_MAX_BYTES = 512 * 1024

# Google's parser accepts these spellings; RFC 9309 §2.2 only names the first of each.
_USER_AGENT = "user-agent"
_ALLOW = "allow"
_DISALLOW = "disallow"
_SITEMAP = "sitemap"
_CRAWL_DELAY = "crawl-delay"
_KEYS: dict[str, str] = {
    "user-agent": _USER_AGENT,
    "useragent": _USER_AGENT,
    "user agent": _USER_AGENT,
    "allow": _ALLOW,
    "disallow": _DISALLOW,
    "disalow": _DISALLOW,
    "dissallow": _DISALLOW,
    "dissalow": _DISALLOW,
    "disallaw": _DISALLOW,
    "diasllow": _DISALLOW,
    "sitemap": _SITEMAP,
    "site-map": _SITEMAP,
    "crawl-delay": _CRAWL_DELAY,
    "crawldelay": _CRAWL_DELAY,
}

_UTF8_BOM = b"\xef\xbb\xbf"
_TOKEN = re.compile(r"[a-zA-Z_-]*")
_VALID_TOKEN = re.compile(r"[a-zA-Z_-]+")
_PCT_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_UA_CACHE_LIMIT = 64
# Reserved characters compared in their encoded form (_normalize).
_URL_SPECIALS = str.maketrans({"*": "%2A", "$": "%24"})
_QUERY_DELIMS = str.maketrans({c: f"%{ord(c):02X}" for c in ":/?@[]"})
# RFC 3986 §2.3.
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _encode_run(match: re.Match[str]) -> str:
    return "".join(f"%{b:02X}" for b in match.group(0).encode("utf-8", "surrogatepass"))


def _fix_escape(match: re.Match[str]) -> str:
    char = chr(int(match.group(0)[1:], 16))
    return char if char in _UNRESERVED else match.group(0).upper()


def _normalize(text: str, *, rule: bool = False) -> str:
    """Percent-encode non-ASCII as UTF-8, decode escaped unreserved characters and uppercase
    the other escapes (RFC 9309 §2.2.2: "/foo/bar/%62%61%7A" matches "/foo/bar/baz"), and
    percent-encode the reserved characters that are data rather than structure, the same way
    in rules and in URLs, so each matches the other's encoded form as the RFC's tables say:

    - "*" and "$" in a URL (§2.2.3: "/path/foo-%24" matches "/path/foo-$"); in a rule they are
      the wildcard and the end anchor, except a "$" before the end, which is literal;
    - ":", "/", "?", "@", "[" and "]" in the query (§2.2.2: "?baz=https://foo.bar" is
      "?baz=https%3A%2F%2Ffoo.bar"); "=" and "&" keep separating parameters.

    Google's parser decodes and encodes neither, so it does not match those RFC examples; the
    crawl's own URLs have their unreserved escapes decoded (urls.py, RFC 3986 §6.2.2.2), so an
    undecoded "Disallow: /%7Ejoe/" would never match the "/~joe/" it is meant for. Reserved
    escapes stay: "%2F" is not "/".
    """
    if "%" in text:
        text = _PCT_ESCAPE.sub(_fix_escape, text)
    if not text.isascii():
        text = _NON_ASCII.sub(_encode_run, text)
    if rule:
        anchored = text.endswith("$")
        body = text[:-1] if anchored else text
        if "$" in body:
            text = body.replace("$", "%24") + ("$" if anchored else "")
    elif "*" in text or "$" in text:
        text = text.translate(_URL_SPECIALS)
    query_at = text.find("?")
    if query_at >= 0:
        text = text[: query_at + 1] + text[query_at + 1 :].translate(_QUERY_DELIMS)
    return text


def _path_of(url: str) -> str:
    """Return the path and query of ``url`` ("/" when empty), without the fragment.

    Like Google's GetPathParamsQuery, a string without a scheme and not starting with "/"
    is taken to begin with an authority ("example.com/a" -> "/a").
    """
    hash_at = url.find("#")
    if hash_at >= 0:
        url = url[:hash_at]
    start = 0
    scheme_end = url.find("://")
    if scheme_end >= 0 and url.find("/", 0, scheme_end) < 0 and url.find("?", 0, scheme_end) < 0:
        start = scheme_end + 3
    elif url.startswith("//"):
        start = 2
    elif url.startswith("/"):
        return url
    slash = url.find("/", start)
    query = url.find("?", start)
    if slash < 0 and query < 0:
        return "/"
    if slash < 0 or 0 <= query < slash:
        return "/" + url[query:]
    return url[slash:]


def _product_token(value: str) -> str:
    """The leading [a-zA-Z_-] run of a user-agent line, lowercased (RFC 9309 §2.2.1 product
    token; like Google's parser, "User-agent: Foo Bar" is the group of "foo")."""
    match = _TOKEN.match(value)
    return match.group(0).lower() if match else ""


def _crawler_token(user_agent: str) -> str | None:
    """The crawler's own name, lowercased: its User-Agent's product name (before any "/"), which
    must be a valid product token ([a-zA-Z_-]+) to match a group. "Foo Bar" is not one, so it
    gets the "*" group, as in Google's parser (robots_test.cc,
    GoogleOnly_AcceptUserAgentUpToFirstSpace)."""
    name = user_agent.split("/", 1)[0]
    return name.lower() if _VALID_TOKEN.fullmatch(name) else None


def _pattern_regex(pattern: str) -> str:
    """Regex source matching a prefix of a path, for one normalized rule pattern.

    RFC 9309 §2.2.3: "*" matches any sequence, "$" anchors only at the pattern's end. Each
    literal after a "*" is found leftmost inside an atomic group: leftmost is always the best
    choice for a prefix match, and atomicity rules out catastrophic backtracking.
    """
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    first, *rest = pattern.split("*")
    parts = [re.escape(first)]
    if anchored and rest:
        *middle, last = rest
        parts.extend(f"(?>.*?{re.escape(seg)})" for seg in middle if seg)
        parts.append(f".*{re.escape(last)}")
    else:
        parts.extend(f"(?>.*?{re.escape(seg)})" for seg in rest if seg)
    if anchored:
        parts.append(r"\Z")
    return "".join(parts)


class _Rule:
    """One pattern. ``head`` is its literal text before the first "*" (or a final "$")."""

    __slots__ = ("allow", "exact", "head", "pattern", "rank", "regex")

    def __init__(self, pattern: str, allow: bool) -> None:
        self.pattern = pattern
        self.allow = allow
        # RFC 9309 §2.2.2: the match with the most octets wins, and Allow wins a tie.
        self.rank = 2 * len(pattern) + allow
        star = pattern.find("*")
        self.exact = star < 0 and pattern.endswith("$")
        self.head = pattern[:star] if star >= 0 else pattern.removesuffix("$")
        # Compiled on first use: a 500 KiB file can hold thousands of wildcard rules, most
        # of which a given crawl never reaches.
        self.regex: re.Pattern[str] | None = None

    def matches(self, path: str) -> bool:
        """Whether the rule matches, given that ``path`` starts with ``head``."""
        if len(self.head) == len(self.pattern):
            return True
        if self.exact:
            return len(path) == len(self.head)
        if self.regex is None:
            self.regex = re.compile(_pattern_regex(self.pattern), re.DOTALL)
        return self.regex.match(path) is not None


class _Index:
    """Rules keyed by literal head, for finding every rule whose head prefixes a path.

    Heads are kept sorted. Any head H that prefixes a path P sorts between H and P, so it
    also prefixes the greatest head <= P: the heads prefixing P are exactly the first head
    on that head's chain of prefix-heads that prefixes P, and the rest of the chain.
    """

    __slots__ = ("heads", "own", "parents")

    def __init__(self, rules: list[_Rule]) -> None:
        own: dict[str, list[_Rule]] = {}
        for rule in rules:
            own.setdefault(rule.head, []).append(rule)
        self.heads = sorted(own)
        self.own = [sorted(own[h], key=lambda r: -r.rank) for h in self.heads]
        self.parents: list[int] = []
        stack: list[int] = []
        for i, head in enumerate(self.heads):
            while stack and not head.startswith(self.heads[stack[-1]]):
                stack.pop()
            self.parents.append(stack[-1] if stack else -1)
            stack.append(i)

    def allows(self, path: str) -> bool:
        heads, parents = self.heads, self.parents
        i = bisect.bisect_right(heads, path) - 1
        while i >= 0 and not path.startswith(heads[i]):
            i = parents[i]
        best_rank = -1
        allowed = True
        while i >= 0:
            for rule in self.own[i]:
                if rule.rank <= best_rank:
                    break
                if rule.matches(path):
                    best_rank, allowed = rule.rank, rule.allow
                    break
            i = parents[i]
        return allowed


class _Group:
    """The merged rules of every group naming one product token (RFC 9309 §2.2.1)."""

    __slots__ = ("_index", "crawl_delay", "rules")

    def __init__(self) -> None:
        self.rules: list[tuple[str, bool]] = []
        self.crawl_delay: float | None = None
        self._index: _Index | None = None

    def allows(self, path: str) -> bool:
        index = self._index
        if index is None:
            # Empty patterns match nothing (RFC 9309 §2.2.2: "Disallow:" disallows nothing).
            rules = [_Rule(p, a) for p, a in dict.fromkeys(self.rules) if p]
            index = self._index = _Index(rules)
        return index.allows(path)


def _split_line(line: str) -> tuple[str, str] | None:
    comment = line.find("#")
    if comment >= 0:
        line = line[:comment]
    line = line.strip()
    if not line:
        return None
    colon = line.find(":")
    if colon >= 0:
        return line[:colon].strip(), line[colon + 1 :].strip()
    # Google accepts whitespace instead of the colon, but only between exactly two words.
    words = line.split()
    if len(words) == 2:
        return words[0], words[1]
    return None


def _decode(body: bytes | str, max_bytes: int) -> str:
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    raw = raw[: max(max_bytes, 0)]
    # Google skips a full or truncated UTF-8 BOM, but only at the very start.
    for size in (3, 2, 1):
        if raw.startswith(_UTF8_BOM[:size]):
            raw = raw[size:]
            break
    return raw.decode("utf-8", "replace")


def _parse_delay(value: str) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


class RobotsTxt:
    """A parsed robots.txt. Build with :meth:`parse`; query with :meth:`is_allowed`."""

    __slots__ = ("_default", "_groups", "_ua_cache", "sitemaps")

    def __init__(
        self,
        groups: dict[str, _Group] | None = None,
        default: _Group | None = None,
        sitemaps: Iterable[str] = (),
    ) -> None:
        self._groups: dict[str, _Group] = groups or {}
        self._default = default
        self.sitemaps: list[str] = list(sitemaps)
        self._ua_cache: dict[str, _Group | None] = {}

    @classmethod
    def allow_all(cls) -> RobotsTxt:
        """Rules for a missing robots.txt (RFC 9309 §2.3.1.3)."""
        return cls()

    @classmethod
    def disallow_all(cls) -> RobotsTxt:
        """Rules for an unreachable robots.txt (RFC 9309 §2.3.1.4)."""
        group = _Group()
        group.rules.append(("/", False))
        return cls(default=group)

    @classmethod
    def parse(cls, body: bytes | str, max_bytes: int = DEFAULT_MAX_BYTES) -> RobotsTxt:
        """Parse ``body``; never raises. Only the first ``max_bytes`` bytes are read."""
        text = _decode(body, max_bytes)
        groups: dict[str, _Group] = {}
        default: _Group | None = None
        sitemaps: list[str] = []
        current: list[_Group] = []  # groups the rules being read belong to
        in_agents = False  # True while reading consecutive user-agent lines
        for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
            pair = _split_line(line)
            if pair is None:
                continue
            key = _KEYS.get(pair[0].lower())
            value = pair[1]
            if key is _USER_AGENT:
                if not in_agents:
                    current = []
                    in_agents = True
                if value == "*" or (value.startswith("*") and value[1:2].isspace()):
                    if default is None:
                        default = _Group()
                    current.append(default)
                elif token := _product_token(value):
                    current.append(groups.setdefault(token, _Group()))
            elif key is _SITEMAP:
                # RFC 9309 §2.2.4: other records such as sitemaps are not group members.
                if value:
                    sitemaps.append(value)
            elif key is _ALLOW or key is _DISALLOW:
                in_agents = False
                pattern = _normalize(value, rule=True)
                for group in current:
                    group.rules.append((pattern, key is _ALLOW))
            elif key is _CRAWL_DELAY:
                in_agents = False
                delay = _parse_delay(value)
                for group in current:
                    if group.crawl_delay is None and delay is not None:
                        group.crawl_delay = delay
        return cls(groups, default, sitemaps)

    def _group_for(self, user_agent: str) -> _Group | None:
        cache = self._ua_cache
        try:
            return cache[user_agent]
        except KeyError:
            pass
        # RFC 9309 §2.2.1: a specific group, else the "*" group, else no rules at all.
        token = _crawler_token(user_agent)
        group = self._default if token is None else self._groups.get(token, self._default)
        if len(cache) >= _UA_CACHE_LIMIT:
            cache.clear()
        cache[user_agent] = group
        return group

    def is_allowed(self, user_agent: str, url: str) -> bool:
        """Whether ``user_agent`` (full UA string or product token) may fetch ``url``."""
        group = self._group_for(user_agent)
        if group is None:
            return True
        path = _normalize(_path_of(url))
        # RFC 9309 §2.2.2: /robots.txt is implicitly allowed.
        if path == "/robots.txt":
            return True
        return group.allows(path)

    def crawl_delay(self, user_agent: str) -> float | None:
        """Crawl-delay seconds of the group selected for ``user_agent`` (not in RFC 9309)."""
        group = self._group_for(user_agent)
        return None if group is None else group.crawl_delay
