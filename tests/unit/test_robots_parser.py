"""robots.txt parser and matcher: RFC 9309 examples and cases ported from google/robotstxt."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawlspace.robots import RobotsTxt
from crawlspace.robots.parser import _normalize, _path_of

GROUPS = (
    "allow: /foo/bar/\n"
    "\n"
    "user-agent: FooBot\n"
    "disallow: /\n"
    "allow: /x/\n"
    "user-agent: BarBot\n"
    "disallow: /\n"
    "allow: /y/\n"
    "\n"
    "\n"
    "allow: /w/\n"
    "user-agent: BazBot\n"
    "\n"
    "user-agent: FooBot\n"
    "allow: /z/\n"
    "disallow: /\n"
)
FOO_X = "user-agent: FooBot\nallow: /x/\ndisallow: /\n"
FISH = "user-agent: FooBot\ndisallow: /\nallow: /fish\n"
FISH_STAR = "user-agent: FooBot\ndisallow: /\nallow: /fish*\n"
FISH_SLASH = "user-agent: FooBot\ndisallow: /\nallow: /fish/\n"
PHP = "user-agent: FooBot\ndisallow: /\nallow: /*.php\n"
PHP_END = "user-agent: FooBot\ndisallow: /\nallow: /*.php$\n"
FISH_PHP = "user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n"
U = "http://foo.bar"

# (robots.txt, user agent, url, allowed)
CASES: dict[str, tuple[str, str, str, bool]] = {
    # Google system test and line syntax.
    "empty-file": ("", "FooBot", "", True),
    "empty-ua-no-star": ("user-agent: FooBot\ndisallow: /\n", "", "", True),
    "empty-url-is-root": ("user-agent: FooBot\ndisallow: /\n", "FooBot", "", False),
    "colon-line": ("user-agent: FooBot\ndisallow: /\n", "FooBot", U + "/x/y", False),
    "unknown-keys": ("foo: FooBot\nbar: /\n", "FooBot", U + "/x/y", True),
    "missing-colon": ("user-agent FooBot\ndisallow /\n", "FooBot", U + "/x/y", False),
    "missing-colon-three-words-ignored": ("user-agent: a\ndisallow / x\n", "a", U + "/x", True),
    "space-around-colon": ("user-agent  :  FooBot\ndisallow \t:\t /\n", "FooBot", U + "/", False),
    # Groups: consecutive user-agent lines, merging, rules outside groups.
    "group-foo-x": (GROUPS, "FooBot", U + "/x/b", True),
    "group-foo-merged-z": (GROUPS, "FooBot", U + "/z/d", True),
    "group-foo-y": (GROUPS, "FooBot", U + "/y/c", False),
    "group-bar-y": (GROUPS, "BarBot", U + "/y/c", True),
    "group-bar-after-blank-lines": (GROUPS, "BarBot", U + "/w/a", True),
    "group-bar-z": (GROUPS, "BarBot", U + "/z/d", False),
    "group-baz-shares-next-group": (GROUPS, "BazBot", U + "/z/d", True),
    "rule-before-first-ua-ignored-foo": (GROUPS, "FooBot", U + "/foo/bar/", False),
    "rule-before-first-ua-ignored-bar": (GROUPS, "BarBot", U + "/foo/bar/", False),
    "rule-before-first-ua-ignored-baz": (GROUPS, "BazBot", U + "/foo/bar/", False),
    # Case-insensitive keys and user-agent values, case-sensitive paths.
    "keys-upper": (FOO_X.upper().replace("/X/", "/x/"), "FooBot", U + "/x/y", True),
    "keys-upper-disallow": (FOO_X.upper().replace("/X/", "/x/"), "FooBot", U + "/a/b", False),
    "keys-camel": ("uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n", "FooBot", U + "/a", False),
    "ua-value-upper": ("User-Agent: FOO BAR\nAllow: /x/\nDisallow: /\n", "foo", U + "/a", False),
    "ua-value-lower": ("User-Agent: foo bar\nAllow: /x/\nDisallow: /\n", "Foo", U + "/x/y", True),
    "ua-value-camel": ("User-Agent: FoO bAr\nDisallow: /\n", "FOO", U + "/a/b", False),
    "path-case-sensitive-match": (
        "user-agent: FooBot\ndisallow: /x/\n",
        "FooBot",
        U + "/x/y",
        False,
    ),
    "path-case-sensitive-miss": ("user-agent: FooBot\ndisallow: /X/\n", "FooBot", U + "/x/y", True),
    # Leading product token on both sides.
    "ua-line-up-to-space": (
        "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
        "Foo",
        U + "/x/y",
        True,
    ),
    "ua-line-version-suffix": ("User-agent: Googlebot/2.1\nDisallow: /\n", "googlebot", U, False),
    "full-ua-string": (
        "User-agent: CrawlspaceBot\nDisallow: /private\n",
        "CrawlspaceBot/0.1 (+http://example.com/bot)",
        U + "/private/a",
        False,
    ),
    "token-prefix-is-not-match": ("User-agent: Foo\nDisallow: /\n", "FooBot", U + "/a", True),
    # robots_test.cc GoogleOnly_AcceptUserAgentUpToFirstSpace: "Foo Bar" is no product token,
    # so a crawler of that name gets the "*" group, even though the line reads as "foo".
    "ua-name-with-space-gets-star-group": (
        "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
        "Foo Bar",
        U + "/x/y",
        False,
    ),
    "ua-line-star-prefix-not-global": ("User-agent: *bot\nDisallow: /\n", "FooBot", U + "/a", True),
    "ua-line-star-comment": ("User-agent: * # all\nDisallow: /\n", "FooBot", U + "/a", False),
    # The "*" group applies only when no specific group matched.
    "star-not-used-when-specific": (
        "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
        "FooBot",
        U + "/x/y",
        False,
    ),
    "star-used-otherwise": (
        "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
        "BarBot",
        U + "/x/y",
        True,
    ),
    "no-star-no-rules": (
        "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\n",
        "QuxBot",
        U + "/x/y",
        True,
    ),
    "specific-group-implicitly-allows": (
        "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
        "FooBot",
        U + "/x/page",
        True,
    ),
    "specific-group-disallows": (
        "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
        "FooBot",
        U + "/y/page",
        False,
    ),
    "star-groups-merged": (
        "User-agent: *\nDisallow: /a\nUser-agent: x\nDisallow: /\nUser-agent: *\nDisallow: /b\n",
        "FooBot",
        U + "/b",
        False,
    ),
    # Longest match; Allow wins a tie.
    "longest-disallow": (
        "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n",
        "FooBot",
        U + "/x/page.html",
        False,
    ),
    "longest-allow": (
        "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n",
        "FooBot",
        U + "/x/page.html",
        True,
    ),
    "longest-dir": (
        "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n",
        "FooBot",
        U + "/x/",
        False,
    ),
    "empty-allow-and-disallow": ("user-agent: FooBot\ndisallow: \nallow: \n", "FooBot", U, True),
    "tie-root": ("user-agent: FooBot\ndisallow: /\nallow: /\n", "FooBot", U + "/x", True),
    "tie-same-pattern": (
        "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n",
        "FooBot",
        U + "/x/page.html",
        True,
    ),
    "x-vs-x-slash-a": ("user-agent: FooBot\ndisallow: /x\nallow: /x/\n", "FooBot", U + "/x", False),
    "x-vs-x-slash-b": ("user-agent: FooBot\ndisallow: /x\nallow: /x/\n", "FooBot", U + "/x/", True),
    "wildcard-longer-wins": (
        "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n",
        "FooBot",
        U + "/page.html",
        False,
    ),
    "wildcard-no-match": (
        "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n",
        "FooBot",
        U + "/page",
        True,
    ),
    "prefix-longer-than-wildcard": (
        "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n",
        "FooBot",
        U + "/x/page.html",
        True,
    ),
    "wildcard-elsewhere": (
        "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n",
        "FooBot",
        U + "/x/y.html",
        False,
    ),
    "precedence-p": ("user-agent: FooBot\nallow: /p\ndisallow: /\n", "FooBot", U + "/page", True),
    "precedence-folder": (
        "user-agent: FooBot\nallow: /folder\ndisallow: /folder\n",
        "FooBot",
        U + "/folder/page",
        True,
    ),
    "precedence-htm": (
        "user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n",
        "FooBot",
        U + "/page.htm",
        False,
    ),
    "precedence-root-dollar": ("user-agent: FooBot\nallow: /$\ndisallow: /\n", "FooBot", U, True),
    "precedence-root-dollar-page": (
        "user-agent: FooBot\nallow: /$\ndisallow: /\n",
        "FooBot",
        U + "/page.html",
        False,
    ),
    # Percent-encoding normalization (RFC 9309 §2.2.2).
    "query-with-url-unencoded": (
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
        "FooBot",
        U + "/foo/bar?qux=taz&baz=http://foo.bar?tar&par",
        True,
    ),
    "utf8-pattern-encoded-url": (
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n",
        "FooBot",
        U + "/foo/bar/%E3%83%84",
        True,
    ),
    # Deviation from Google, which leaves the URL alone: we encode both sides.
    "utf8-pattern-raw-url": (
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n",
        "FooBot",
        U + "/foo/bar/ツ",
        True,
    ),
    "encoded-pattern-encoded-url": (
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n",
        "FooBot",
        U + "/foo/bar/%E3%83%84",
        True,
    ),
    "encoded-pattern-raw-url": (
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n",
        "FooBot",
        U + "/foo/bar/ツ",
        True,
    ),
    "lowercase-hex-normalized": (
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%e3%83%84\n",
        "FooBot",
        U + "/foo/bar/%E3%83%84",
        True,
    ),
    "lowercase-hex-in-url": (
        "User-agent: FooBot\nDisallow: /a%2Fb\n",
        "FooBot",
        U + "/a%2fb",
        False,
    ),
    # RFC 9309 §2.2.2's own example; Google's parser decodes nothing and says False.
    "unreserved-escapes-decoded": (
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n",
        "FooBot",
        U + "/foo/bar/baz",
        True,
    ),
    # The crawl's URLs are normalized with unreserved escapes decoded (urls.py).
    "escaped-tilde-rule-matches-tilde-path": (
        "User-agent: FooBot\nDisallow: /%7Ejoe/\n",
        "FooBot",
        U + "/~joe/secret.html",
        False,
    ),
    "escaped-tilde-path-matches-tilde-rule": (
        "User-agent: FooBot\nDisallow: /~joe/\n",
        "FooBot",
        U + "/%7ejoe/secret.html",
        False,
    ),
    "reserved-escape-stays-escaped": (
        "User-agent: FooBot\nDisallow: /a%2Fb\n",
        "FooBot",
        U + "/a/b",
        True,
    ),
    "unreserved-escapes-exact": (
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n",
        "FooBot",
        U + "/foo/bar/%62%61%7A",
        True,
    ),
    "non-ascii-octets-count-for-length": (
        "User-agent: a\nDisallow: /é\nAllow: /%C3%A9x\n",
        "a",
        U + "/éx",
        True,
    ),
    # RFC 9309 §2.2.2's table: reserved characters that are data in the query compare in
    # their encoded form, whichever side spells them literally.
    "rfc-query-url-literal-rule-encoded": (
        "User-agent: FooBot\nDisallow: /foo/bar?baz=https%3A%2F%2Ffoo.bar\n",
        "FooBot",
        U + "/foo/bar?baz=https://foo.bar",
        False,
    ),
    "rfc-query-rule-literal-url-encoded": (
        "User-agent: FooBot\nDisallow: /foo/bar?baz=https://foo.bar\n",
        "FooBot",
        U + "/foo/bar?baz=https%3A%2F%2Ffoo.bar",
        False,
    ),
    "rfc-query-plain-value": (
        "User-agent: FooBot\nDisallow: /foo/bar?baz=quz\n",
        "FooBot",
        U + "/foo/bar?baz=quz",
        False,
    ),
    "rfc-query-other-value-allowed": (
        "User-agent: FooBot\nDisallow: /foo/bar?baz=https%3A%2F%2Ffoo.bar\n",
        "FooBot",
        U + "/foo/bar?baz=https://foo.baz",
        True,
    ),
    # RFC 9309 §2.2.3's table: "%2A" and "%24" in a rule are a literal "*" and "$" in the URL.
    "rfc-encoded-star": (
        "User-agent: FooBot\nDisallow: /path/file-with-a-%2A.html\n",
        "FooBot",
        "https://www.example.com/path/file-with-a-*.html",
        False,
    ),
    "rfc-encoded-star-is-not-a-wildcard": (
        "User-agent: FooBot\nDisallow: /path/file-with-a-%2A.html\n",
        "FooBot",
        "https://www.example.com/path/file-with-a-b.html",
        True,
    ),
    "rfc-encoded-dollar": (
        "User-agent: FooBot\nDisallow: /path/foo-%24\n",
        "FooBot",
        "https://www.example.com/path/foo-$",
        False,
    ),
    "rfc-encoded-dollar-is-not-an-anchor": (
        "User-agent: FooBot\nDisallow: /path/foo-%24\n",
        "FooBot",
        "https://www.example.com/path/foo-",
        True,
    ),
    "dollar-inside-a-rule-is-literal": (
        "User-agent: FooBot\nDisallow: /a$b\n",
        "FooBot",
        U + "/a$bc",
        False,
    ),
    # Special characters: "*", "$", "#".
    "star-middle-exact-miss": (
        "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
        "FooBot",
        U + "/foo/bar/quz",
        False,
    ),
    "star-middle-quz": (
        "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
        "FooBot",
        U + "/foo/quz",
        True,
    ),
    "star-middle-double-slash": (
        "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
        "FooBot",
        U + "/foo//quz",
        True,
    ),
    "dollar-exact": (
        "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
        "FooBot",
        U + "/foo/bar",
        False,
    ),
    "dollar-longer-path": (
        "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
        "FooBot",
        U + "/foo/bar/",
        True,
    ),
    "dollar-in-middle-is-literal": ("User-agent: a\nDisallow: /a$b\n", "a", U + "/a$b/c", False),
    "dollar-in-middle-not-anchor": ("User-agent: a\nDisallow: /a$b\n", "a", U + "/a", True),
    "comment-line": (
        "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n",
        "FooBot",
        U + "/foo/bar",
        True,
    ),
    "inline-comment": (
        "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n",
        "FooBot",
        U + "/foo/quz",
        False,
    ),
    "fragment-ignored": ("User-agent: a\nDisallow: /x\n", "a", "http://h/y#/x", True),
    "collapsed-stars": ("User-agent: a\nDisallow: /**/b***$\n", "a", "http://h/a/b", False),
    "star-dollar": ("User-agent: a\nDisallow: /a*$\n", "a", "http://h/a/anything", False),
    # Google documentation examples.
    "fish-bar": (FISH, "FooBot", U + "/bar", False),
    "fish": (FISH, "FooBot", U + "/fish", True),
    "fish-html": (FISH, "FooBot", U + "/fish.html", True),
    "fish-salmon": (FISH, "FooBot", U + "/fish/salmon.html", True),
    "fishheads": (FISH, "FooBot", U + "/fishheads/yummy.html", True),
    "fish-query": (FISH, "FooBot", U + "/fish.html?id=anything", True),
    "fish-capital": (FISH, "FooBot", U + "/Fish.asp", False),
    "catfish": (FISH, "FooBot", U + "/catfish", False),
    "fish-in-query": (FISH, "FooBot", U + "/?id=fish", False),
    "fish-star-equals-fish": (FISH_STAR, "FooBot", U + "/fishheads", True),
    "fish-star-capital": (FISH_STAR, "FooBot", U + "/Fish.bar", False),
    "fish-slash-dir": (FISH_SLASH, "FooBot", U + "/fish/?salmon", True),
    "fish-slash-not-fish": (FISH_SLASH, "FooBot", U + "/fish", False),
    "fish-slash-capital": (FISH_SLASH, "FooBot", U + "/Fish/Salmon.html", False),
    "php-file": (PHP, "FooBot", U + "/folder/filename.php?parameters", True),
    "php-inside": (PHP, "FooBot", U + "//folder/any.php.file.html", True),
    "php-in-query": (PHP, "FooBot", U + "/index?f=filename.php/", True),
    "php-dir": (PHP, "FooBot", U + "/php/", False),
    "php-query-no-dot": (PHP, "FooBot", U + "/index?php", False),
    "php-upper": (PHP, "FooBot", U + "/windows.PHP", False),
    "php-end": (PHP_END, "FooBot", U + "/folder/filename.php", True),
    "php-end-query": (PHP_END, "FooBot", U + "/filename.php?parameters", False),
    "php-end-slash": (PHP_END, "FooBot", U + "/filename.php/", False),
    "php-end-php5": (PHP_END, "FooBot", U + "/filename.php5", False),
    "php-end-aaaphpaaa": (PHP_END, "FooBot", U + "/aaaphpaaa", False),
    "fish-star-php": (FISH_PHP, "FooBot", U + "/fishheads/catfish.php?parameters", True),
    "fish-star-php-upper": (FISH_PHP, "FooBot", U + "/Fish.PHP", False),
    # Query strings take part in matching.
    "query-pattern": ("User-agent: a\nDisallow: /*?sort=\n", "a", "http://h/list?sort=asc", False),
    "query-pattern-miss": ("User-agent: a\nDisallow: /*?sort=\n", "a", "http://h/list?x=1", True),
    "query-without-path": ("User-agent: a\nDisallow: /?\n", "a", "http://h?q=1", False),
    # Byte-level robustness.
    "bom": ("\ufeffUser-agent: a\nDisallow: /\n", "a", U + "/x", False),
    "cr-only": ("User-agent: a\rAllow: /x\rDisallow: /\r", "a", U + "/y", False),
    "cr-only-allow": ("User-agent: a\rAllow: /x\rDisallow: /\r", "a", U + "/x", True),
    "crlf": ("User-agent: a\r\nAllow: /x\r\nDisallow: /\r\n", "a", U + "/y", False),
    "mixed-line-ends": ("User-agent: a\nAllow: /x\r\nUser-agent: b\r\rDisallow: /", "b", U, False),
    "no-final-newline": ("User-agent: a\nDisallow: /", "a", U + "/y", False),
    "misspelled-disalow": ("User-agent: a\nDisalow: /\n", "a", U + "/y", False),
    "misspelled-dissallow": ("User-agent: a\nDissallow: /\n", "a", U + "/y", False),
    "misspelled-dissalow": ("User-agent: a\nDissalow: /\n", "a", U + "/y", False),
    "misspelled-disallaw": ("User-agent: a\nDisallaw: /\n", "a", U + "/y", False),
    "misspelled-diasllow": ("User-agent: a\nDiasllow: /\n", "a", U + "/y", False),
    "misspelled-useragent": ("Useragent: a\nDisallow: /\n", "a", U + "/y", False),
    "misspelled-user-space-agent": ("User agent: a\nDisallow: /\n", "a", U + "/y", False),
    "long-line-not-truncated": (
        "User-agent: a\nDisallow: /\nAllow: /x/" + "a" * 20000 + "/qux\n",
        "a",
        U + "/x/" + "a" * 20000 + "/fux",
        False,
    ),
    "long-line-full-match": (
        "User-agent: a\nDisallow: /\nAllow: /x/" + "a" * 20000 + "/qux\n",
        "a",
        U + "/x/" + "a" * 20000 + "/qux",
        True,
    ),
    # /robots.txt is implicitly allowed (RFC 9309 §2.2.2).
    "robots-txt-allowed": ("User-agent: *\nDisallow: /\n", "a", U + "/robots.txt", True),
    "robots-txt-explicit-disallow": (
        "User-agent: *\nDisallow: /robots.txt\n",
        "a",
        U + "/robots.txt",
        True,
    ),
}


@pytest.mark.parametrize(("robots", "agent", "url", "allowed"), CASES.values(), ids=CASES.keys())
def test_google_cases(robots: str, agent: str, url: str, allowed: bool) -> None:
    assert RobotsTxt.parse(robots).is_allowed(agent, url) is allowed
    assert RobotsTxt.parse(robots.encode()).is_allowed(agent, url) is allowed


# RFC 9309 §5.1 simple example.
RFC_EXAMPLE = """\
User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot
"""
RFC_CASES = [
    ("foobot", "/example/page.html", True),
    ("foobot", "/example/allowed.gif", True),
    ("foobot", "/example/other.gif", False),
    ("foobot", "/", False),
    ("barbot", "/example/page.html", False),
    ("bazbot", "/example/page.html", False),
    ("barbot", "/example/other.html", True),
    ("quxbot", "/example/page.html", True),
    ("quxbot", "/anything", True),
    ("otherbot", "/example/page.html", False),
    ("otherbot", "/publications/x", True),
    ("otherbot", "/image.gif", False),  # a leading "*" matches the leading "/"
    ("otherbot", "/x", True),
]


@pytest.mark.parametrize(("agent", "path", "allowed"), RFC_CASES)
def test_rfc_simple_example(agent: str, path: str, allowed: bool) -> None:
    assert RobotsTxt.parse(RFC_EXAMPLE).is_allowed(agent, "https://example.com" + path) is allowed


# RFC 9309 §2.2.3 / §5.2 pattern table: (pattern, path, matches).
RFC_MATCHING = [
    ("/*", "/", True),
    ("/*", "/anything", True),
    ("/*$", "/", True),
    ("/*$", "/anything", True),
    ("/fish", "/fish", True),
    ("/fish", "/fish.html", True),
    ("/fish", "/fish/salmon.html", True),
    ("/fish", "/Fish.asp", False),
    ("/fish", "/catfish", False),
    ("/fish", "/?id=fish", False),
    ("/fish/", "/fish/", True),
    ("/fish/", "/fish", False),
    ("/*.php", "/index.php", True),
    ("/*.php", "/filename.php/", True),
    ("/*.php", "/windows.PHP", False),
    ("/*.php$", "/filename.php", True),
    ("/*.php$", "/filename.php?parameters", False),
    ("/fish*.php", "/fishheads/catfish.php?parameters", True),
    ("/fish*.php", "/Fish.PHP", False),
    ("/foo$", "/foo", True),
    ("/foo$", "/foo/", False),
]


@pytest.mark.parametrize(("pattern", "path", "matches"), RFC_MATCHING)
def test_rfc_matching_table(pattern: str, path: str, matches: bool) -> None:
    robots = RobotsTxt.parse(f"User-agent: *\nDisallow: {pattern}\n")
    assert robots.is_allowed("bot", "http://h" + path) is not matches


def test_partial_bom_and_bom_in_middle() -> None:
    rules = b"User-Agent: foo\nDisallow: /AnyValue\n"
    for prefix in (b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"):
        assert not RobotsTxt.parse(prefix + rules).is_allowed("foo", "http://h/AnyValue")
    broken = b"User-Agent: foo\n\xef\xbb\xbfDisallow: /AnyValue\n"
    assert RobotsTxt.parse(broken).is_allowed("foo", "http://h/AnyValue")


def test_truncation_at_max_bytes_ignores_later_rules() -> None:
    head = "User-agent: *\nDisallow: /\n# " + "x" * 100 + "\n"
    body = (head + "Allow: /open\n").encode()
    assert RobotsTxt.parse(body).is_allowed("a", "http://h/open")
    assert not RobotsTxt.parse(body, max_bytes=len(head)).is_allowed("a", "http://h/open")
    # A decisive rule cut in half is read as the shorter rule it became.
    cut = RobotsTxt.parse(body, max_bytes=len(head) + len("Allow: /op"))
    assert cut.is_allowed("a", "http://h/operator")


def test_default_max_bytes_is_512_kib() -> None:
    filler = "# " + "x" * 1000 + "\n"
    head = "User-agent: *\nDisallow: /\n" + filler * 600
    assert len(head) > 512 * 1024
    assert not RobotsTxt.parse(head + "Allow: /\n").is_allowed("a", "http://h/x")


def test_sitemaps_anywhere() -> None:
    robots = RobotsTxt.parse(
        "Sitemap: http://foo.bar/a.xml\nUser-agent: a\nDisallow: /\n"
        "site-map: http://foo.bar/b.xml # second\nUser-agent: b\nSitemap:\n"
    )
    assert robots.sitemaps == ["http://foo.bar/a.xml", "http://foo.bar/b.xml"]


def test_sitemap_between_user_agents_keeps_group_open() -> None:
    robots = RobotsTxt.parse("User-agent: a\nSitemap: http://h/s.xml\nUser-agent: b\nDisallow: /\n")
    assert not robots.is_allowed("a", "http://h/x")
    assert not robots.is_allowed("b", "http://h/x")


@pytest.mark.parametrize(
    ("robots", "agent", "delay"),
    [
        ("User-agent: a\nCrawl-delay: 2.5\n", "a", 2.5),
        ("User-agent: a\nCrawl-delay: 2.5\n", "b", None),
        ("User-agent: *\nCrawl-delay: 10\nUser-agent: a\nDisallow: /x\n", "b", 10.0),
        ("User-agent: *\nCrawl-delay: 10\nUser-agent: a\nDisallow: /x\n", "a", None),
        ("User-agent: a\nCrawl-delay: soon\n", "a", None),
        ("User-agent: a\nCrawl-delay: -1\n", "a", None),
        ("User-agent: a\nCrawl-delay: nan\n", "a", None),
        ("User-agent: a\nCrawl-delay: inf\n", "a", None),
        ("User-agent: a\nCrawl-delay: x\nCrawl-delay: 3\n", "a", 3.0),
        ("User-agent: a\ncrawldelay: 1\n", "A/1.0", 1.0),
    ],
)
def test_crawl_delay(robots: str, agent: str, delay: float | None) -> None:
    assert RobotsTxt.parse(robots).crawl_delay(agent) == delay


def test_allow_all_and_disallow_all() -> None:
    assert RobotsTxt.allow_all().is_allowed("a", "http://h/x")
    assert not RobotsTxt.disallow_all().is_allowed("a", "http://h/x")
    assert RobotsTxt.disallow_all().is_allowed("a", "http://h/robots.txt")
    assert RobotsTxt.allow_all().sitemaps == []


def test_many_user_agents_do_not_grow_cache_unbounded() -> None:
    robots = RobotsTxt.parse("User-agent: *\nDisallow: /x\n")
    for i in range(500):
        assert not robots.is_allowed(f"bot{i}", "http://h/x")


def test_pathological_wildcards_are_fast() -> None:
    robots = RobotsTxt.parse("User-agent: *\nDisallow: /" + "*a" * 30 + "*b\n")
    assert robots.is_allowed("bot", "http://h/" + "a" * 5000)


def test_many_rules_compile_in_chunks() -> None:
    lines = "".join(f"Disallow: /p{i}/\n" for i in range(2000))
    robots = RobotsTxt.parse("User-agent: *\n" + lines + "Allow: /p1999/open\n")
    assert not robots.is_allowed("bot", "http://h/p5/x")
    assert robots.is_allowed("bot", "http://h/p1999/open/x")
    assert robots.is_allowed("bot", "http://h/q")


@given(st.binary(max_size=2000))
def test_parse_never_raises(body: bytes) -> None:
    robots = RobotsTxt.parse(body)
    robots.is_allowed("bot", "http://h/a")
    robots.crawl_delay("bot")


ROBOTS_ALPHABET = st.sampled_from([*"ab/*$?=%#:\n\r \tAé", "user-agent:", "disallow:"])


@given(st.lists(ROBOTS_ALPHABET, max_size=80).map("".join), st.text(max_size=60))
def test_is_allowed_never_raises(robots: str, url: str) -> None:
    parsed = RobotsTxt.parse(robots)
    parsed.is_allowed("bot", url)
    parsed.is_allowed(url, url)


PATTERN = st.lists(st.sampled_from(list("/ab*$?.%é")), max_size=8).map(lambda c: "/" + "".join(c))
RULE = st.tuples(st.booleans(), PATTERN)
PATH = st.lists(st.sampled_from(list("/ab.?é$*")), max_size=10).map(lambda c: "/" + "".join(c))


@given(st.lists(RULE, max_size=8), PATTERN, PATH)
def test_adding_allow_never_blocks(rules: list[tuple[bool, str]], extra: str, path: str) -> None:
    body = "User-agent: *\n" + "".join(
        f"{'Allow' if allow else 'Disallow'}: {p}\n" for allow, p in rules
    )
    before = RobotsTxt.parse(body).is_allowed("bot", "http://h" + path)
    after = RobotsTxt.parse(body + f"Allow: {extra}\n").is_allowed("bot", "http://h" + path)
    assert after or not before


def _reference_allowed(rules: list[tuple[bool, str]], path: str) -> bool:
    """Brute force RFC 9309 §2.2.2 over every rule, for checking the indexed matcher."""
    best: tuple[int, bool] | None = None
    for allow, pattern in rules:
        anchored = pattern.endswith("$")
        body = pattern[:-1] if anchored else pattern
        regex = ".*".join(re.escape(part) for part in body.split("*")) + ("\\Z" if anchored else "")
        if re.match(regex, path, re.DOTALL) and (best is None or (len(pattern), allow) > best):
            best = (len(pattern), allow)
    return best is None or best[1]


def _rfc_encoded(text: str, *, rule: bool) -> str:
    """RFC 9309 §2.2.2-§2.2.3 encoding for comparison, for the alphabets above: non-ASCII as
    UTF-8 escapes; a URL's "*" and "$" (a rule's are operators, but for a "$" before its end);
    "/" and "?" inside the query."""
    text = text.replace("é", "%C3%A9")
    if rule:
        anchored = text.endswith("$")
        text = (text[:-1] if anchored else text).replace("$", "%24") + ("$" if anchored else "")
    else:
        text = text.replace("*", "%2A").replace("$", "%24")
    head, mark, query = text.partition("?")
    return head + mark + query.replace("/", "%2F").replace("?", "%3F")


@given(st.lists(RULE, max_size=12), PATH)
def test_index_agrees_with_brute_force(rules: list[tuple[bool, str]], path: str) -> None:
    body = "User-agent: *\n" + "".join(f"{'Allow' if a else 'Disallow'}: {p}\n" for a, p in rules)
    encoded = [(a, _rfc_encoded(p, rule=True)) for a, p in rules]
    expected = path == "/robots.txt" or _reference_allowed(encoded, _rfc_encoded(path, rule=False))
    assert RobotsTxt.parse(body).is_allowed("bot", "http://h" + path) is expected


def test_huge_file_stays_cheap() -> None:
    wild = "".join(f"Disallow: /*x{i}$\n" for i in range(5000))
    plain = "".join(f"Disallow: /p{i}\n" for i in range(5000))
    robots = RobotsTxt.parse("User-agent: *\n" + wild + plain)
    assert not robots.is_allowed("bot", "http://h/p42/a")
    assert not robots.is_allowed("bot", "http://h/a/x4999")
    assert robots.is_allowed("bot", "http://h/q")


# --- google/robotstxt robots_test.cc, one test per TEST -------------------------------------
# Each test below is named after one TEST of Google's reference parser test file and checks
# every expectation of it against crawlspace. Where Google's reading and RFC 9309's differ, the
# expectation says which one crawlspace follows and why (see also README.md, "robots.txt:
# RFC 9309 and Google's parser"). Google's tests call OneAgentAllowedByRobots(robots, agent,
# url); ``_allowed`` is crawlspace's equivalent, checked on both str and bytes bodies.


def _allowed(robots: str, agent: str, url: str) -> bool:
    verdict = RobotsTxt.parse(robots).is_allowed(agent, url)
    assert RobotsTxt.parse(robots.encode()).is_allowed(agent, url) is verdict
    return verdict


def test_google_GoogleOnly_SystemTest() -> None:
    robots = "user-agent: FooBot\ndisallow: /\n"
    assert _allowed("", "FooBot", "")  # no rules at all
    assert _allowed(robots, "", "")  # an empty agent names no group, and there is no "*" group
    assert not _allowed(robots, "FooBot", "")  # an empty URL is the path "/"
    assert _allowed("", "", "")


def test_google_ID_LineSyntax_Line() -> None:
    url = "http://foo.bar/x/y"
    assert not _allowed("user-agent: FooBot\ndisallow: /\n", "FooBot", url)
    assert _allowed("foo: FooBot\nbar: /\n", "FooBot", url)
    # Google-only, followed: a missing colon between exactly two words is assumed. RFC 9309
    # §2.2 requires the colon, but "disallow /" cannot mean anything else, and reading it
    # only ever makes the crawler stay away from more.
    assert not _allowed("user-agent FooBot\ndisallow /\n", "FooBot", url)


def test_google_ID_LineSyntax_Groups() -> None:
    u = "http://foo.bar"
    assert _allowed(GROUPS, "FooBot", u + "/x/b")
    assert _allowed(GROUPS, "FooBot", u + "/z/d")  # FooBot's two groups are merged
    assert not _allowed(GROUPS, "FooBot", u + "/y/c")
    assert _allowed(GROUPS, "BarBot", u + "/y/c")
    assert _allowed(GROUPS, "BarBot", u + "/w/a")  # blank lines do not end a group
    assert not _allowed(GROUPS, "BarBot", u + "/z/d")
    assert _allowed(GROUPS, "BazBot", u + "/z/d")  # BazBot and FooBot share the last group
    # Rules before the first user-agent line belong to no group.
    for agent in ("FooBot", "BarBot", "BazBot"):
        assert not _allowed(GROUPS, agent, u + "/foo/bar/")


def test_google_ID_LineSyntax_Groups_OtherRules() -> None:
    # Lines other than user-agent, allow and disallow (a sitemap, an unknown key) between two
    # user-agent lines do not end the run of user-agent lines: both agents share the group.
    bodies = [
        "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n",
        "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n",
    ]
    for robots in bodies:
        assert not _allowed(robots, "FooBot", "http://foo.bar/")
        assert not _allowed(robots, "BarBot", "http://foo.bar/")


def test_google_ID_REPLineNamesCaseInsensitive() -> None:
    bodies = [
        "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n",
        "user-agent: FooBot\nallow: /x/\ndisallow: /\n",
        "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n",
    ]
    for robots in bodies:
        assert _allowed(robots, "FooBot", "http://foo.bar/x/y")
        assert not _allowed(robots, "FooBot", "http://foo.bar/a/b")


# A robots.txt in which a crawler whose name is a valid product token ([a-zA-Z_-]+) gets its
# own group (allowed), and any other crawler the "*" group (disallowed).
VALID_AGENTS = (
    "User-agent: *\nDisallow: /\n\n"
    "User-agent: Foobot\nUser-agent: Foobot-Bar\nUser-agent: Foo_Bar\nAllow: /\n"
)


@pytest.mark.parametrize(
    ("agent", "valid"),
    [
        ("Foobot", True),
        ("Foobot-Bar", True),
        ("Foo_Bar", True),
        ("", False),
        ("ツ", False),
        ("Foobot*", False),
        (" Foobot ", False),
        ("Foobot Bar", False),
        # Intentionally different: Google's IsValidUserAgentToObey rejects "Foobot/2.1", since
        # its matcher takes a bare product token. is_allowed takes the crawler's User-Agent
        # header, whose product token is the part before "/" (README, --user-agent), so
        # "Foobot/2.1" is the crawler "foobot".
        ("Foobot/2.1", True),
    ],
)
def test_google_ID_VerifyValidUserAgentsToObey(agent: str, valid: bool) -> None:
    assert _allowed(VALID_AGENTS, agent, "http://foo.bar/x") is valid


def test_google_ID_UserAgentValueCaseInsensitive() -> None:
    # "User-Agent: FOO BAR" is the group of "foo" (the value up to the first space, see
    # GoogleOnly_AcceptUserAgentUpToFirstSpace), compared without regard to case.
    for value in ("FOO BAR", "foo bar", "FoO bAr"):
        robots = f"User-Agent: {value}\nAllow: /x/\nDisallow: /\n"
        for agent in ("Foo", "foo"):
            assert _allowed(robots, agent, "http://foo.bar/x/y")
            assert not _allowed(robots, agent, "http://foo.bar/a/b")


def test_google_GoogleOnly_AcceptUserAgentUpToFirstSpace() -> None:
    # Google-only, followed: "User-Agent: Foo Bar" is no valid product token line (RFC 9309
    # §2.2.1), but it is read as "Foo" rather than dropped, so its rules still bind "Foo". A
    # crawler *named* "Foo Bar" has no valid token and gets the "*" group.
    robots = "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n"
    assert _allowed(robots, "Foo", "http://foo.bar/x/y")
    assert not _allowed(robots, "Foo Bar", "http://foo.bar/x/y")


def test_google_ID_GlobalGroups_Secondary() -> None:
    url = "http://foo.bar/x/y"
    global_ = "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n"
    only_specific = (
        "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\n"
        "user-agent: BazBot\ndisallow: /\n"
    )
    assert _allowed("", "FooBot", url)
    assert not _allowed(global_, "FooBot", url)
    assert _allowed(global_, "BarBot", url)
    assert _allowed(only_specific, "QuxBot", url)


def test_google_ID_AllowDisallow_Value_CaseSensitive() -> None:
    url = "http://foo.bar/x/y"
    assert not _allowed("user-agent: FooBot\ndisallow: /x/\n", "FooBot", url)
    assert _allowed("user-agent: FooBot\ndisallow: /X/\n", "FooBot", url)


def test_google_ID_LongestMatch() -> None:
    url = "http://foo.bar/x/page.html"
    ua = "user-agent: FooBot\n"
    assert not _allowed(ua + "disallow: /x/page.html\nallow: /x/\n", "FooBot", url)
    robots = ua + "allow: /x/page.html\ndisallow: /x/\n"
    assert _allowed(robots, "FooBot", url)
    assert not _allowed(robots, "FooBot", "http://foo.bar/x/")
    # Equal patterns: Allow wins.
    assert _allowed(ua + "disallow: \nallow: \n", "FooBot", url)
    assert _allowed(ua + "disallow: /\nallow: /\n", "FooBot", url)
    robots = ua + "disallow: /x\nallow: /x/\n"
    assert not _allowed(robots, "FooBot", "http://foo.bar/x")
    assert _allowed(robots, "FooBot", "http://foo.bar/x/")
    assert _allowed(ua + "disallow: /x/page.html\nallow: /x/page.html\n", "FooBot", url)
    # Length counts the pattern's octets, wildcards included.
    robots = ua + "allow: /page\ndisallow: /*.html\n"
    assert not _allowed(robots, "FooBot", "http://foo.bar/page.html")
    assert _allowed(robots, "FooBot", "http://foo.bar/page")
    robots = ua + "allow: /x/page.\ndisallow: /*.html\n"
    assert _allowed(robots, "FooBot", url)
    assert not _allowed(robots, "FooBot", "http://foo.bar/x/y.html")
    # The most specific group for FooBot applies, not "*" in addition.
    robots = "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n"
    assert _allowed(robots, "FooBot", "http://foo.bar/x/page")
    assert not _allowed(robots, "FooBot", "http://foo.bar/y/page")


def test_google_ID_Encoding() -> None:
    head = "User-agent: FooBot\nDisallow: /\n"
    query = "/foo/bar?qux=taz&baz=http://foo.bar?tar&par"
    assert _allowed(head + f"Allow: {query}\n", "FooBot", "http://foo.bar" + query)

    raw = head + "Allow: /foo/bar/ツ\n"
    assert _allowed(raw, "FooBot", "http://foo.bar/foo/bar/%E3%83%84")
    encoded = head + "Allow: /foo/bar/%E3%83%84\n"
    assert _allowed(encoded, "FooBot", "http://foo.bar/foo/bar/%E3%83%84")
    # RFC 9309, differing from Google: §2.2.2 says non-ASCII octets in the URI MUST be
    # percent-encoded before comparison. Google leaves that to the caller and says False here;
    # crawlspace encodes the URL itself, so an unencoded "ツ" matches either spelling.
    assert _allowed(raw, "FooBot", "http://foo.bar/foo/bar/ツ")
    assert _allowed(encoded, "FooBot", "http://foo.bar/foo/bar/ツ")

    unreserved = head + "Allow: /foo/bar/%62%61%7A\n"
    assert _allowed(unreserved, "FooBot", "http://foo.bar/foo/bar/%62%61%7A")
    # RFC 9309, differing from Google: §2.2.2's own example says "/foo/bar/%62%61%7A" matches
    # "/foo/bar/baz" (escaped unreserved characters are the characters). Google compares the
    # strings and says False; the crawl's URLs have such escapes decoded (urls.py), so an
    # undecoded rule would never match them.
    assert _allowed(unreserved, "FooBot", "http://foo.bar/foo/bar/baz")


def test_google_ID_SpecialCharacters() -> None:
    u = "http://foo.bar"
    robots = "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n"
    assert not _allowed(robots, "FooBot", u + "/foo/bar/quz")
    assert _allowed(robots, "FooBot", u + "/foo/quz")
    assert _allowed(robots, "FooBot", u + "/foo//quz")
    assert _allowed(robots, "FooBot", u + "/foo/bax/quz")
    robots = "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n"
    assert not _allowed(robots, "FooBot", u + "/foo/bar")
    assert _allowed(robots, "FooBot", u + "/foo/bar/qux")
    assert _allowed(robots, "FooBot", u + "/foo/bar/")
    assert _allowed(robots, "FooBot", u + "/foo/bar/baz")
    robots = "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n"
    assert _allowed(robots, "FooBot", u + "/foo/bar")
    assert not _allowed(robots, "FooBot", u + "/foo/quz")


def test_google_GoogleOnly_IndexHTMLisDirectory() -> None:
    robots = "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n"
    # RFC 9309, differing from Google: Google reads "Allow: /dir/index.htm..." as also allowing
    # "/dir/" (Google says True here). The RFC matches the path as written, and crawlspace keeps
    # to it: "/dir/" need not serve index.html (a listing, an application route), and a polite
    # crawler does not fetch what the site did not allow.
    assert not _allowed(robots, "foobot", "http://foo.com/allowed-slash/")
    assert not _allowed(robots, "foobot", "http://foo.com/allowed-slash/index.htm")
    assert _allowed(robots, "foobot", "http://foo.com/allowed-slash/index.html")
    assert not _allowed(robots, "foobot", "http://foo.com/anyother-url")


def test_google_GoogleOnly_LineTooLong() -> None:
    # Google's parser keeps only the first 8 * 2083 - 1 bytes of a line; crawlspace reads
    # each line whole (RFC 9309 sets no line limit; the file's 512 KiB bound applies).
    max_line = 2083 * 8
    ua = "user-agent: FooBot\n"
    long_x = "/x/" + "a" * (max_line - len("/x/") - len("disallow: ") + 1 - 3)
    robots = ua + f"disallow: {long_x}/qux\n"
    assert _allowed(robots, "FooBot", "http://foo.bar/fux")
    # RFC 9309, differing from Google: Google matches the cut-off rule "<long>/" and says
    # False. Read whole, the rule is "<long>/qux", which "<long>/fux" does not match.
    assert _allowed(robots, "FooBot", "http://foo.bar" + long_x + "/fux")

    size = max_line - len("/x/") - len("allow: ") + 1 - 3
    long_a, long_b = "/x/" + "a" * size, "/x/" + "b" * size
    robots = ua + f"disallow: /\nallow: {long_a}/qux\nallow: {long_b}/qux\n"
    assert not _allowed(robots, "FooBot", "http://foo.bar/")
    assert _allowed(robots, "FooBot", "http://foo.bar" + long_a + "/qux")
    # RFC 9309, differing from Google (True there): a cut-off Allow would allow more than the
    # site wrote; "<long>/fux" is not under "<long>/qux", so "disallow: /" decides.
    assert not _allowed(robots, "FooBot", "http://foo.bar" + long_b + "/fux")


# (robots.txt, allowed paths, disallowed paths)
DOC_CHECKS: dict[str, tuple[str, list[str], list[str]]] = {
    # Google's robots.txt documentation, "URL matching based on path values".
    "fish": (
        FISH,
        [
            "/fish",
            "/fish.html",
            "/fish/salmon.html",
            "/fishheads",
            "/fishheads/yummy.html",
            "/fish.html?id=anything",
        ],
        ["/bar", "/Fish.asp", "/catfish", "/?id=fish"],
    ),
    "fish-star": (
        FISH_STAR,
        [
            "/fish",
            "/fish.html",
            "/fish/salmon.html",
            "/fishheads",
            "/fishheads/yummy.html",
            "/fish.html?id=anything",
        ],
        ["/bar", "/Fish.bar", "/catfish", "/?id=fish"],
    ),
    "fish-slash": (
        FISH_SLASH,
        ["/fish/", "/fish/salmon", "/fish/?salmon", "/fish/salmon.html", "/fish/?id=anything"],
        ["/bar", "/fish", "/fish.html", "/Fish/Salmon.html"],
    ),
    "php": (
        PHP,
        [
            "/filename.php",
            "/folder/filename.php",
            "/folder/filename.php?parameters",
            "//folder/any.php.file.html",
            "/filename.php/",
            "/index?f=filename.php/",
        ],
        ["/bar", "/php/", "/index?php", "/windows.PHP"],
    ),
    "php-end": (
        PHP_END,
        ["/filename.php", "/folder/filename.php"],
        [
            "/bar",
            "/filename.php?parameters",
            "/filename.php/",
            "/filename.php5",
            "/php/",
            "/filename?php",
            "/aaaphpaaa",
            "//windows.PHP",
        ],
    ),
    "fish-star-php": (
        FISH_PHP,
        ["/fish.php", "/fishheads/catfish.php?parameters"],
        ["/bar", "/Fish.PHP"],
    ),
    # "Order of precedence for group-member records".
    "precedence-p": ("user-agent: FooBot\nallow: /p\ndisallow: /\n", ["/page"], []),
    "precedence-folder": (
        "user-agent: FooBot\nallow: /folder\ndisallow: /folder\n",
        ["/folder/page"],
        [],
    ),
    "precedence-htm": ("user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n", [], ["/page.htm"]),
    "precedence-root-dollar": (
        "user-agent: FooBot\nallow: /$\ndisallow: /\n",
        ["/"],
        ["/page.html"],
    ),
}


@pytest.mark.parametrize(("robots", "allowed", "disallowed"), DOC_CHECKS.values(), ids=DOC_CHECKS)
def test_google_GoogleOnly_DocumentationChecks(
    robots: str, allowed: list[str], disallowed: list[str]
) -> None:
    for path in allowed:
        assert _allowed(robots, "FooBot", "http://foo.bar" + path), path
    for path in disallowed:
        assert not _allowed(robots, "FooBot", "http://foo.bar" + path), path


@pytest.mark.parametrize(
    "robots",
    [
        "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /\n",
        "User-Agent: foo\r\nAllow: /some/path\r\nUser-Agent: bar\r\n\r\n\r\nDisallow: /\r\n",
        "User-Agent: foo\rAllow: /some/path\rUser-Agent: bar\r\r\rDisallow: /\r",
        "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /",
        "User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /",
    ],
    ids=["unix", "dos", "mac", "no-final-newline", "mixed"],
)
def test_google_ID_LinesNumbersAreCountedCorrectly(robots: str) -> None:
    # Google counts the directives (4) and line numbers (6) its parse handler sees; crawlspace
    # reports no line numbers, so what is checked is that every line ending splits lines: if
    # "Allow: /some/path" were lost, foo and bar would share a group and foo's "/x" would be
    # disallowed; if "User-Agent: bar" or "Disallow: /" were lost, bar would be allowed.
    assert _allowed(robots, "foo", "http://foo.bar/x")
    assert not _allowed(robots, "bar", "http://foo.bar/x")


@pytest.mark.parametrize(
    ("head", "parsed"),
    [
        (b"\xef\xbb\xbfUser-Agent: foo\nAllow: /AnyValue\n", True),
        (b"\xef\xbbUser-Agent: foo\nAllow: /AnyValue\n", True),
        (b"\xefUser-Agent: foo\nAllow: /AnyValue\n", True),
        # Not a BOM prefix: the first line is garbage ("\x11\xbfUser-Agent"), an unknown key.
        (b"\xef\x11\xbfUser-Agent: foo\nAllow: /AnyValue\n", False),
        # A BOM only counts at the very start: "\ufeffAllow" is an unknown key.
        (b"User-Agent: foo\n\xef\xbb\xbfAllow: /AnyValue\n", False),
    ],
    ids=["full", "partial-2", "partial-1", "broken", "in-middle"],
)
def test_google_ID_UTF8ByteOrderMarkIsSkipped(head: bytes, parsed: bool) -> None:
    # Google counts valid and unknown directives; crawlspace shows it by behaviour. With a
    # "*" group disallowing everything after Google's two lines, foo keeps its own (allowing)
    # group only if both of its lines were read as a user-agent and an allow line.
    robots = RobotsTxt.parse(head + b"User-Agent: *\nDisallow: /\n")
    assert robots.is_allowed("foo", "http://foo.bar/x") is parsed


def test_google_ID_NonStandardLineExample_Sitemap() -> None:
    loc = "http://foo.bar/sitemap.xml"
    groups = "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\n"
    assert RobotsTxt.parse(groups + f"Sitemap: {loc}\n").sitemaps == [loc]
    # A sitemap line may appear anywhere in the file.
    assert RobotsTxt.parse(f"Sitemap: {loc}\n" + groups).sitemaps == [loc]


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("", "/"),
        ("http://www.example.com", "/"),
        ("http://www.example.com/", "/"),
        ("http://www.example.com/a", "/a"),
        ("http://www.example.com/a/", "/a/"),
        ("http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/"),
        ("http://www.example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
        ("example.com", "/"),
        ("example.com/", "/"),
        ("example.com/a", "/a"),
        ("example.com/a/", "/a/"),
        ("example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
        ("a", "/"),
        ("a/", "/"),
        ("/a", "/a"),
        ("a/b", "/b"),
        ("example.com?a", "/?a"),
        ("example.com/a;b#c", "/a;b"),
        ("//a/b/c", "/b/c"),
    ],
)
def test_google_TestGetPathParamsQuery(url: str, path: str) -> None:
    # GetPathParamsQuery's counterpart is _path_of (the path and query is_allowed matches).
    assert _path_of(url) == path


@pytest.mark.parametrize(
    ("pattern", "escaped"),
    [
        ("http://www.example.com", "http://www.example.com"),
        ("/a/b/c", "/a/b/c"),
        ("á", "%C3%A1"),
        ("%aa", "%AA"),
    ],
)
def test_google_TestMaybeEscapePattern(pattern: str, escaped: str) -> None:
    # MaybeEscapePattern's counterpart is _normalize(rule=True), which every Allow/Disallow
    # value goes through. (It also decodes escaped unreserved characters, RFC 9309 §2.2.2, which
    # Google does not: "%62" is "b" here; none of Google's cases has one.)
    assert _normalize(pattern, rule=True) == escaped
