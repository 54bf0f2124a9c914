"""What the crawl has learned about a host, in the one small host note ("learned") that every
lease and every admission of the host's links reads: the URL families found to be traps
(frontier/trap_yield.py), the active rel=canonical rewrites (frontier/canonical.py) and the URL
equivalences settled by content (frontier/url_equivalence.py). The evidence behind each lives in
notes of its own, read only when a fetched page may add to it; this note holds conclusions only,
so reading it costs the same however much evidence a host has. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Final

from crawlspace.frontier.canonical import Rewrite, apply_rewrite
from crawlspace.frontier.url_equivalence import Rules, equivalent_url

__all__ = ["CANONICAL_VARIANT", "EQUIVALENT_URL", "NOTE", "Learned", "rules_text", "traps_text"]

NOTE: Final = "learned"
CANONICAL_VARIANT: Final = "canonical_variant"
EQUIVALENT_URL: Final = "equivalent_url"


@dataclass(frozen=True, slots=True)
class Learned:
    traps: dict[str, str] = field(default_factory=dict)  # URL family -> reason
    rewrites: tuple[Rewrite, ...] = ()
    equivalence: Rules = Rules()  # noqa: RUF009 - frozen, so sharing is safe

    def __bool__(self) -> bool:
        return bool(self.traps or self.rewrites or self.equivalence)

    def apply(self, url: str) -> tuple[str, str] | None:
        """(the form of ``url`` to crawl, the reason the variant is excluded), or None when
        ``url`` is its own form: a canonical rewrite first, then the equivalences."""
        target = apply_rewrite(url, self.rewrites)
        reason = CANONICAL_VARIANT
        if target is None:
            target, reason = url, EQUIVALENT_URL
        final = equivalent_url(target, self.equivalence) or target
        return None if final == url else (final, reason)

    def with_trap(self, family: str, reason: str) -> Learned:
        return replace(self, traps={**self.traps, family: reason})

    def with_rewrites(self, rewrites: tuple[Rewrite, ...]) -> Learned:
        return replace(self, rewrites=rewrites)

    def with_equivalence(self, rule: str, active: bool) -> Learned:
        """``rule`` is "order" or "param:NAME" (url_equivalence.py note names, unprefixed)."""
        rules = self.equivalence
        if rule == "order":
            return replace(self, equivalence=replace(rules, sort_query=active))
        name = rule.removeprefix("param:")
        drop = rules.drop_params | {name} if active else rules.drop_params - {name}
        return replace(self, equivalence=replace(rules, drop_params=frozenset(drop)))

    def encode(self) -> str:
        lines = [f"trap {family} {reason}" for family, reason in sorted(self.traps.items())]
        lines += [f"rewrite {r.source} {r.target}" for r in self.rewrites]
        lines += ["sort"] if self.equivalence.sort_query else []
        lines += [f"drop {name}" for name in sorted(self.equivalence.drop_params)]
        return "\n".join(lines)

    @classmethod
    def decode(cls, text: str | None) -> Learned:
        traps: dict[str, str] = {}
        rewrites: list[Rewrite] = []
        sort_query, drop = False, set()
        for line in (text or "").split("\n"):
            kind, _, rest = line.partition(" ")
            fields = rest.split(" ")
            if kind == "trap" and len(fields) == 2:
                traps[fields[0]] = fields[1]
            elif kind == "rewrite" and len(fields) == 2:
                rewrites.append(Rewrite(fields[0], fields[1]))
            elif kind == "sort":
                sort_query = True
            elif kind == "drop" and rest:
                drop.add(rest)
        return cls(traps, tuple(rewrites), Rules(sort_query, frozenset(drop)))


def rules_text(text: str | None) -> str:
    """The URL rules as ``export --what hosts`` shows them: "/print/->/a/ sort -visit"."""
    learned = Learned.decode(text)
    rules = [f"{r.source}->{r.target}" for r in learned.rewrites]
    rules += ["sort"] if learned.equivalence.sort_query else []
    rules += [f"-{name}" for name in sorted(learned.equivalence.drop_params)]
    return " ".join(rules)


def traps_text(text: str | None) -> str:
    """The flagged families as ``export --what hosts`` shows them: "FAMILY=REASON ..." sorted."""
    traps = Learned.decode(text).traps
    return " ".join(f"{family}={reason}" for family, reason in sorted(traps.items()))
