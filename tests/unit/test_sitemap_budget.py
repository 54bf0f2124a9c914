"""A host's sitemap budget (frontier/sitemap_budget.py): distinct documents counted, each once."""

from __future__ import annotations

from crawlspace.frontier.sitemap_budget import count_sitemaps

INDEX = [f"http://a/sm/{i}.xml" for i in range(2000)]


def test_an_index_of_thousands_costs_the_cap() -> None:
    count = count_sitemaps(INDEX, None, 50)
    assert count.admitted == tuple(INDEX[:50])
    assert count.over == tuple(INDEX[50:])
    assert count.note is not None
    assert len(count.note.split()) == 50


def test_documents_seen_before_are_admitted_again_without_counting() -> None:
    first = count_sitemaps(INDEX[:3], None, 5)
    assert first.note is not None
    again = count_sitemaps(INDEX[:3], first.note, 5)
    assert (again.admitted, again.over, again.note) == (tuple(INDEX[:3]), (), None)
    more = count_sitemaps(INDEX[:10], first.note, 5)
    assert more.admitted == tuple(INDEX[:5])
    assert more.over == tuple(INDEX[5:10])
    assert more.note is not None
    spent = count_sitemaps([*INDEX[:5], INDEX[99]], more.note, 5)
    assert spent.admitted == tuple(INDEX[:5]), "what it admitted, still admitted"
    assert spent.over == (INDEX[99],)
    assert spent.note is None


def test_a_repeated_document_in_one_visit_counts_once() -> None:
    count = count_sitemaps([INDEX[0], INDEX[0], INDEX[1]], None, 2)
    assert count.admitted == (INDEX[0], INDEX[0], INDEX[1])
    assert count.over == ()
