"""URL equivalences learned from content (frontier/url_equivalence.py): pure."""

from __future__ import annotations

from crawlspace.frontier.url_equivalence import (
    CONFIRMATIONS,
    Rules,
    active_rules,
    decode,
    encode,
    equivalent_url,
    note_names,
    observe_page,
)

H = "http://h.example"


def learn(notes: dict[str, str], path_qs: str, text: str) -> dict[str, str]:
    return {**notes, **observe_page(H + path_qs, text, notes)}


def test_parameter_order_is_learned_from_same_text() -> None:
    notes: dict[str, str] = {}
    for page in range(1, CONFIRMATIONS + 1):
        notes = learn(notes, f"/p?category=shoes&page={page}", f"text {page}")
        assert active_rules(notes) == Rules()
        notes = learn(notes, f"/p?page={page}&category=shoes", f"text {page}")
    assert CONFIRMATIONS == 2, "issue #31: at most two confirmations"
    assert active_rules(notes) == Rules(sort_query=True)
    rules = active_rules(notes)
    assert equivalent_url(H + "/p?page=9&category=hats", rules) == H + "/p?category=hats&page=9"
    assert equivalent_url(H + "/p?category=hats&page=9", rules) is None


def test_order_that_matters_is_never_merged() -> None:
    notes: dict[str, str] = {}
    for page in range(1, 6):
        notes = learn(notes, f"/s?q={page}&sort=a", f"q then sort {page}")
        notes = learn(notes, f"/s?sort=a&q={page}", f"sort then q {page}")
    assert not active_rules(notes).sort_query


def test_a_parameter_that_never_changes_the_text_is_dropped() -> None:
    notes: dict[str, str] = {}
    for page in range(3):
        notes = learn(notes, f"/item?id={page}&visit=a{page}", f"item {page}")
        notes = learn(notes, f"/item?id={page}&visit=b{page}", f"item {page}")
    rules = active_rules(notes)
    assert rules.drop_params == frozenset({"visit"})
    assert "id" not in rules.drop_params  # ids changed the text: contradictions, never hits
    assert equivalent_url(H + "/item?id=7&visit=zz", rules) == H + "/item?id=7"


def test_one_contradiction_keeps_a_rule_off() -> None:
    notes: dict[str, str] = {}
    notes = learn(notes, "/a?x=1&y=1", "same")
    notes = learn(notes, "/a?y=1&x=1", "other")  # order mattered once
    for page in range(2, 8):
        notes = learn(notes, f"/a?x={page}&y=1", f"t{page}")
        notes = learn(notes, f"/a?y=1&x={page}", f"t{page}")
    assert not active_rules(notes).sort_query


def test_a_revisit_is_no_evidence_and_notes_round_trip() -> None:
    notes = learn({}, "/a?x=1&y=2", "t")
    assert observe_page(H + "/a?x=1&y=2", "changed", notes) == {}
    assert observe_page(H + "/plain", "t", notes) == {}
    evidence = decode(notes["dust:order"])
    assert decode(encode(evidence)) == evidence
    assert decode("junk") == decode(None)


def test_note_names_are_the_query_parameters_evidence_notes() -> None:
    assert note_names("http://h.example/p?b=1&a=2&b=3") == [
        "dust:order",
        "dust:param:b",
        "dust:param:a",
    ]
    assert note_names("http://h.example/p?b=1&a=2", order=False) == [
        "dust:param:b",
        "dust:param:a",
    ]
    assert note_names("http://h.example/p?x=1") == ["dust:param:x"]
    assert note_names("http://h.example/p") == []
    assert note_names("http://h.example/p?") == []
    assert observe_page("http://h.example/p", "t" * 64, {}) == {}
