"""URL equivalences learned per host from content (DUST: Bar-Yossef, Keidar and Schonfeld, "Do
not crawl in the DUST", WWW 2007). Pure; the crawl (crawl/host_rules.py) keeps the evidence as
host notes and applies what was learned.

Two kinds of "different URL, same page" are learned from the extracted-text hashes of fetched
pages, each by comparing pages that differ in one respect only:

- **parameter order** (``order``): two fetched URLs with the same query parameters in another
  order. Same text: a confirmation that order does not matter on the host; other text: a
  contradiction. Learned only when the crawl keeps orders apart (config ``query_order =
  "learned"``); by default the seen set ignores order (urls.py seen_key) and no two orders
  are fetched to compare.
- **a parameter that changes nothing** (``param:NAME``): two fetched URLs that differ only in the
  value of NAME. Same text confirms that NAME is noise on the host (a session or tracking
  parameter not on the default strip list); other text contradicts.

A rule with ``CONFIRMATIONS`` confirmations and no contradiction is active: the host's links are
admitted in their equivalent form (query sorted; NAME dropped) and a variant is excluded with the
reason ``equivalent_url``. Until then URLs are kept as linked, because order and parameters do
matter on some sites: a wrong merge loses pages, a missed one costs a few duplicate fetches.

Evidence is bounded: at most ``MAX_SAMPLES`` sample pages per rule, and the names of pages
with more than ``MAX_PARAMS`` parameters are not tracked; a page only confirms once a sibling
shows up. Each rule is one host note (``dust:order``, ``dust:param:NAME``), read by name for the
pages that have such parameters; what is settled is copied into the host's small "learned"
note (frontier/learned.py), which is what leases and admissions read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit, urlunsplit

import xxhash

__all__ = [
    "CONFIRMATIONS",
    "NOTE_PREFIX",
    "Evidence",
    "Rules",
    "active_rules",
    "decode",
    "encode",
    "equivalent_url",
    "note_names",
    "observe_page",
    "settled",
]

NOTE_PREFIX: Final = "dust:"  # host notes: "dust:order", "dust:param:NAME"
CONFIRMATIONS: Final = 2
# Sample pages remembered per rule, oldest dropped: a sibling may be fetched long after its
# pair (a catalog page 1 linking 40 pages in one order, "next" links in the other).
MAX_SAMPLES: Final = 256
MAX_PARAMS: Final = 8  # pages with more parameters are not evidence


@dataclass
class Evidence:
    """A rule's confirmations and contradictions, and sample pages: key -> (variant, hash)."""

    hits: int = 0
    misses: int = 0
    samples: dict[str, tuple[str, str]] = field(default_factory=dict)

    def observe(self, key: str, variant: str, text_hash: str) -> bool:
        """Compare a page with the sample of its key; True when the evidence changed. Samples
        are kept as short hashes (~40 bytes each): a note holds hundreds."""
        key, variant, text_hash = _short(key), _short(variant), text_hash[:16]
        seen = self.samples.get(key)
        if seen is None:
            self.samples[key] = (variant, text_hash)
            while len(self.samples) > MAX_SAMPLES:
                del self.samples[next(iter(self.samples))]
            return True
        if seen[0] == variant:
            return False  # the same URL again (a revisit): no evidence
        if seen[1] == text_hash:
            self.hits += 1
        else:
            self.misses += 1
        return True


def _short(text: str) -> str:
    return xxhash.xxh3_64_hexdigest(text.encode("utf-8", "surrogatepass"))


def encode(evidence: Evidence) -> str:
    """A note's text: "hits misses" then one "key\\tvariant\\thash" line per sample."""
    lines = [f"{evidence.hits} {evidence.misses}"]
    lines += [f"{key}\t{variant}\t{h}" for key, (variant, h) in evidence.samples.items()]
    return "\n".join(lines)


def decode(text: str | None) -> Evidence:
    if not text:
        return Evidence()
    head, *rows = text.split("\n")
    try:
        hits, misses = (int(f) for f in head.split(" "))
    except ValueError:
        return Evidence()
    samples = {}
    for row in rows:
        parts = row.split("\t")
        if len(parts) == 3:
            samples[parts[0]] = (parts[1], parts[2])
    return Evidence(hits, misses, samples)


def _params(query: str) -> list[str]:
    """The query's parameters as written ("a=1", "flag"), in order."""
    return [p for p in query.split("&") if p]


def _name(param: str) -> str:
    return param.partition("=")[0]


def _sorted(params: list[str]) -> list[str]:
    return sorted(params, key=_name)  # stable: repeated names keep their order


def _with_query(url: str, params: list[str]) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "&".join(params), ""))


def note_names(url: str, *, order: bool = True) -> list[str]:
    """The host notes that hold evidence a fetch of ``url`` may add to (``order``: parameter
    order's too, which a crawl that ignores order has no use for)."""
    if "?" not in url:  # no query, as most URLs: urlsplit cost ~5 µs a lease for nothing
        return []
    params = _params(urlsplit(url).query)
    if not params or len(params) > MAX_PARAMS:
        return []
    names = list(dict.fromkeys(_name(p) for p in params))
    order_note = [NOTE_PREFIX + "order"] if order and len(names) > 1 else []
    return order_note + [f"{NOTE_PREFIX}param:{name}" for name in names]


def observe_page(
    url: str, text_hash: str, notes: Mapping[str, str], *, order: bool = True
) -> dict[str, str]:
    """The host notes a fetched page with ``text_hash`` changes ({} when none); ``notes`` holds
    those of ``note_names(url, order=order)`` that exist."""
    if "?" not in url:
        return {}
    params = _params(urlsplit(url).query)
    if not params or len(params) > MAX_PARAMS:
        return {}
    names = list(dict.fromkeys(_name(p) for p in params))
    changed: dict[str, str] = {}
    if order and len(names) > 1:
        written = ",".join(_name(p) for p in params)
        evidence = decode(notes.get(NOTE_PREFIX + "order"))
        if evidence.observe(_with_query(url, _sorted(params)), written, text_hash):
            changed[NOTE_PREFIX + "order"] = encode(evidence)
    for name in names:
        note = f"{NOTE_PREFIX}param:{name}"
        value = "&".join(p for p in params if _name(p) == name)
        rest = [p for p in params if _name(p) != name]
        evidence = decode(notes.get(note))
        if evidence.observe(_with_query(url, rest), value, text_hash):
            changed[note] = encode(evidence)
    return changed


@dataclass(frozen=True, slots=True)
class Rules:
    sort_query: bool = False
    drop_params: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return self.sort_query or bool(self.drop_params)


def settled(text: str) -> bool:
    """A rule's evidence has enough confirmations and no contradiction."""
    try:
        hits, misses = (int(f) for f in text.partition("\n")[0].split(" "))
    except ValueError:
        return False
    return hits >= CONFIRMATIONS and not misses


def active_rules(notes: Mapping[str, str]) -> Rules:
    """What the evidence in ``notes`` settled: sort the query, drop these parameters."""
    settled_names = [
        n[len(NOTE_PREFIX) :]
        for n, text in notes.items()
        if n.startswith(NOTE_PREFIX) and settled(text)
    ]
    drop = frozenset(n[len("param:") :] for n in settled_names if n.startswith("param:"))
    return Rules("order" in settled_names, drop)


def equivalent_url(url: str, rules: Rules) -> str | None:
    """The form of ``url`` the host's rules admit, when it differs from ``url``."""
    if not rules:
        return None
    parts = urlsplit(url)
    params = _params(parts.query)
    if not params:
        return None
    kept = [p for p in params if _name(p) not in rules.drop_params]
    if rules.sort_query:
        kept = _sorted(kept)
    new = _with_query(url, kept)
    return None if new == urlunsplit((*parts[:4], "")) else new
