"""Bloom seen-set accelerator, simhash and the near-duplicate block index."""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlspace.dedup import simhash as simhash_module
from crawlspace.dedup.near_index import NearDuplicateIndex
from crawlspace.dedup.seen import SeenFilter
from crawlspace.dedup.simhash import (
    _WORD,
    NATIVE,
    _majority_bits,
    _shingle_hashes,
    hamming,
    python_simhash_and_sketch,
    simhash64,
    simhash_and_sketch,
    to_signed,
    to_unsigned,
)
from crawlspace.records import UrlCandidate
from crawlspace.store.sqlite import dedup as sqlite_dedup
from crawlspace.store.sqlite.store import SqliteStore

# -- Bloom: never skips a new URL -----------------------------------------------------------------

_URLS = st.lists(st.sampled_from([f"http://h{i % 3}.example/p{i}" for i in range(40)]), max_size=60)


def _colliding(url: str) -> int:
    return len(url) % 3  # forces collisions: a handful of hash values for every URL


@given(_URLS, st.booleans())
def test_bloom_definitely_new_is_never_wrong(stream: list[str], tiny: bool) -> None:
    seen = SeenFilter(4, 0.5, _colliding) if tiny else SeenFilter(1000, 0.01)
    exact: set[str] = set()
    for url in stream:
        new = seen.check_and_add(url)
        if url in exact:
            assert not new  # no false negatives
        exact.add(url)


@settings(max_examples=40, deadline=None)
@given(st.lists(_URLS, min_size=1, max_size=4))
def test_store_with_a_colliding_bloom_adds_exactly_the_new_urls(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[str]]
) -> None:
    path = tmp_path_factory.mktemp("seen") / "crawl.db"
    tiny = SeenFilter(4, 0.5, _colliding)
    with_bloom = SqliteStore(path, seen_filter=tiny)
    plain = SqliteStore(path.with_name("plain.db"))
    exact: set[str] = set()
    try:
        for batch in batches:
            cands = [UrlCandidate(u, u.split("/p")[0], 1, source="link") for u in batch]
            got = with_bloom.add(cands, 0.0)
            want = plain.add(cands, 0.0)
            assert got.added == want.added == len(set(batch) - exact)
            exact |= set(batch)
        rows = {r[0] for r in with_bloom._db.execute("SELECT url FROM urls")}
        assert rows == exact
        queued = with_bloom._db.execute("SELECT SUM(queued) FROM hosts").fetchone()[0] or 0
        assert queued == len(exact)
    finally:
        with_bloom.close()
        plain.close()


def test_bloom_is_rebuilt_on_resume_and_counts(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    store = SqliteStore(path, seen_filter=SeenFilter(100, 0.01))
    cands = [UrlCandidate(f"http://a.example/{i}", "http://a.example", 1) for i in range(10)]
    assert store.add(cands, 0.0).added == 10
    store.close()
    # A fresh filter is filled from the file: a URL of the earlier run is "maybe seen".
    seen = SeenFilter(100, 0.01)
    store = SqliteStore(path, seen_filter=seen)
    assert not seen.check_and_add("http://a.example/3")
    result = store.add([*cands[:5], UrlCandidate("http://a.example/new", "http://a.example", 1)], 0)
    assert (result.added, result.already_seen) == (1, 5)
    counters = dict(store._db.execute("SELECT name, value FROM counters").fetchall())
    assert counters["seen.bloom_definitely_new"] >= 11
    assert counters["seen.bloom_maybe_seen"] >= 5
    store.close()


def test_rows_the_filter_missed_fall_back_to_the_upsert(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    other = SqliteStore(path)  # another writer of the same file, without a filter
    a, b = "http://a.example", "http://b.example"
    other.add([UrlCandidate(f"{a}/x", a, 1), UrlCandidate(f"{b}/y", b, 1)], 0.0)
    seen = SeenFilter(100, 0.01)
    store = SqliteStore(path, seen_filter=seen)
    seen._bloom.clear()  # simulate a filter that lacks those rows
    batch = [f"{a}/x", f"{a}/new", f"{b}/y", f"{b}/new", f"{b}/new2"]
    admitted: list[str] = []
    with store._transaction() as db:
        result = store.add_in(
            db,
            [UrlCandidate(u, u.rsplit("/", 1)[0], 1, source="link") for u in batch],
            0.0,
            admitted_urls=admitted,
        )
    assert (result.added, result.already_seen) == (3, 2)
    assert sorted(admitted) == [f"{a}/new", f"{b}/new", f"{b}/new2"]
    queued = dict(store._db.execute("SELECT host_key, queued FROM hosts").fetchall())
    assert queued == {a: 2, b: 3}
    assert store._db.execute("SELECT COUNT(*) FROM urls").fetchone()[0] == 5
    store.close()
    other.close()


def test_a_big_store_rebuilds_its_filter_in_the_background_without_false_news(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "crawl.db"
    store = SqliteStore(path)
    cands = [UrlCandidate(f"http://a.example/{i}", "http://a.example", 1) for i in range(3000)]
    store.add(cands, 0.0)
    store.close()
    monkeypatch.setattr(sqlite_dedup, "SYNC_REBUILD_MAX", 100)
    monkeypatch.setattr(sqlite_dedup, "_REBUILD_CHUNK", 250)
    seen = SeenFilter(10_000, 0.01)
    store = SqliteStore(path, seen_filter=seen)
    try:
        # Whatever the rebuild has reached, a stored URL is never "definitely new".
        result = store.add(
            [cands[2999], UrlCandidate("http://a.example/n", "http://a.example", 1)], 0
        )
        assert (result.added, result.already_seen) == (1, 1)
        deadline = time.monotonic() + 20
        while not seen.complete and time.monotonic() < deadline:
            time.sleep(0.01)
        assert seen.complete
        assert not any(seen.check_and_add(c.url) for c in cands)
        assert seen.check_and_add("http://a.example/brand-new")
    finally:
        store.close()


# -- simhash --------------------------------------------------------------------------------------

_rng = random.Random(7)
_VOCAB = [
    "".join(_rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(_rng.randint(3, 9)))
    for _ in range(2000)
]


def _article(seed: int, words: int = 600) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(_VOCAB) for _ in range(words)]


def test_near_identical_pages_are_within_k() -> None:
    base = _article(1)
    text = " ".join(base)
    one_word = list(base)
    one_word[250] = "different"
    dated = " ".join(["Published", "2026-12-01", *base, "updated", "3", "December", "2026"])
    dated2 = " ".join(["Published", "2026-12-02", *base, "updated", "4", "December", "2026"])
    h = simhash64(text)
    assert hamming(h, simhash64(" ".join(one_word))) <= 3
    assert hamming(simhash64(dated), simhash64(dated2)) <= 3
    assert simhash64(text) == h  # deterministic across calls (and processes: XXH3)
    assert simhash64(text.upper()) == h  # case does not matter


def _ad_swap(base: list[str]) -> tuple[str, str]:
    ad_a = [*base[:300], "buy", "cheap", "shoes", "today", "free", "shipping", *base[300:]]
    ad_b = [*base[:300], "new", "phone", "plans", "from", "nine", "dollars", *base[300:]]
    return " ".join(ad_a), " ".join(ad_b)


def test_most_pages_differing_by_a_swapped_ad_are_within_k() -> None:
    # Swapping a 6-word ad in a 600-word page changes 14 of ~1,200 shingle votes, so the
    # distance is a distribution, not a bound: about two thirds of such pairs are within k = 3
    # for a good 64-bit hash (67% with BLAKE2b per shingle, 63% with XXH3 mixing, 69% with
    # seeded XXH3, measured on 300 pairs), and unrelated pages never are (below).
    within = sum(
        hamming(*map(simhash64, _ad_swap(_article(seed)))) <= 3 for seed in range(100, 200)
    )
    assert within >= 55


def test_unrelated_pages_are_far_apart() -> None:
    hashes = [simhash64(" ".join(_article(seed))) for seed in range(2, 30)]
    for i, a in enumerate(hashes):
        for b in hashes[i + 1 :]:
            assert hamming(a, b) > 3


@given(st.lists(st.integers(0, (1 << 64) - 1), min_size=1, max_size=40))
def test_bit_votes_match_counting_each_bit(hashes: list[int]) -> None:
    expected = sum(
        1 << bit for bit in range(64) if 2 * sum(h >> bit & 1 for h in hashes) > len(hashes)
    )
    assert _majority_bits(hashes) == expected


@given(st.text())
def test_shingle_hashes_hash_each_word_as_its_own_utf8(text: str) -> None:
    words = _WORD.findall(text.lower())
    if not words:
        return
    encoded = [w.encode("utf-8", "surrogatepass") for w in words]
    expected = [xxhash.xxh64_intdigest(e) for e in encoded]
    if len(encoded) >= 2:
        pairs = zip(encoded[1:], expected[:-1], strict=True)
        expected = [xxhash.xxh64_intdigest(e, h) for e, h in pairs]
    assert _shingle_hashes(words, 2) == expected


def test_shingle_hashes_depend_on_word_order_and_count_every_occurrence() -> None:
    assert len(_shingle_hashes(["a", "b", "a", "b"], 2)) == 3
    assert len(_shingle_hashes(["a", "b", "c", "d"], 3)) == 2
    assert len(_shingle_hashes(["only"], 2)) == 1  # fewer words than a shingle: the words
    ab, ba = _shingle_hashes(["a", "b", "a"], 2)
    assert ab != ba
    assert _shingle_hashes(["a", "b"], 2) == [ab]


native = pytest.mark.skipif(
    not NATIVE, reason="the compiled helper was not built (no C compiler): Python computes all"
)
# Words of many scripts, separators of several kinds, digits, underscores, a lone surrogate.
_ALPHABET = "ab _-.,\u00e9\u00df\u0130\u03a3\u4e2d\u0660\u00a0\u2014\U0001f600\ud800"
_MIXED = st.text(st.sampled_from(list(_ALPHABET)), max_size=400)


@native
@given(st.binary(max_size=100), st.integers(0, (1 << 64) - 1))
def test_the_helpers_xxh64_is_xxh64(data: bytes, seed: int) -> None:
    assert simhash_module._shingles is not None
    assert simhash_module._shingles.xxh64(data, seed) == xxhash.xxh64_intdigest(data, seed)


@native
@settings(max_examples=300)
@given(st.one_of(st.text(max_size=300), _MIXED))
def test_the_compiled_helper_computes_the_python_fingerprints(text: str) -> None:
    assert simhash_and_sketch(text) == python_simhash_and_sketch(text)
    for shingle in (1, 3):
        assert simhash_and_sketch(text, shingle) == python_simhash_and_sketch(text, shingle)


@native
def test_the_compiled_helper_on_long_texts_and_repeats() -> None:
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(300)]
    for words in (50, 257, 2000, 20000):  # below and above the sketch's 4K, the 255-hash batches
        text = " ".join(rng.choice(vocabulary) for _ in range(words))
        assert simhash_and_sketch(text) == python_simhash_and_sketch(text)
    repeated = "same words " * 5000  # few distinct pairs among many: the full-sort fallback
    assert simhash_and_sketch(repeated) == python_simhash_and_sketch(repeated)


def test_simhash_edge_cases() -> None:
    assert simhash64("") == 0
    assert simhash64("one") == simhash64("ONE")
    assert 0 <= simhash64("a b c d e f g") < 1 << 64
    for h in (0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1):
        assert -(1 << 63) <= to_signed(h) < 1 << 63
        assert to_unsigned(to_signed(h)) == h


# -- near-duplicate index -------------------------------------------------------------------------


def _flip(h: int, bits: int, rng: random.Random) -> int:
    for b in rng.sample(range(64), bits):
        h ^= 1 << b
    return h


def test_index_finds_exactly_what_brute_force_finds() -> None:
    rng = random.Random(11)
    stored = [rng.getrandbits(64) for _ in range(1500)]
    # Plant near neighbours so that every distance 0..5 occurs.
    stored += [_flip(stored[i], i % 6, rng) for i in range(300)]
    for k in (0, 1, 3, 5):
        index = NearDuplicateIndex(k)
        for ident, h in enumerate(stored):
            index.add(h, ident)
        queries = [_flip(rng.choice(stored), rng.randint(0, 6), rng) for _ in range(300)]
        queries += [rng.getrandbits(64) for _ in range(50)]
        for q in queries:
            want = sorted((hamming(q, h), i) for i, h in enumerate(stored) if hamming(q, h) <= k)
            got = index.find_all(q)
            assert sorted((d, i) for i, d in got) == want
            nearest = index.find(q)
            assert nearest == (None if not want else (want[0][1], want[0][0]))


@given(st.integers(0, (1 << 64) - 1), st.lists(st.integers(0, 63), max_size=4, unique=True))
def test_pigeonhole_never_misses_within_three(h: int, bits: list[int]) -> None:
    index = NearDuplicateIndex(3)
    index.add(h, 1)
    q = h
    for b in bits:
        q ^= 1 << b
    assert (index.find(q) is not None) == (len(bits) <= 3)


def _insert_fetch(db_path: Path, url_id: int, simhash: int) -> None:
    with sqlite3.connect(db_path) as db:
        db.execute(
            "INSERT INTO fetches (url_id, version, url, final_url, status, fetched_at,"
            " duration_ms, bytes, truncated, noindex, simhash)"
            " VALUES (?, 1, 'http://a.example/', 'http://a.example/', 200, 0, 1, 10, 0, 0, ?)",
            (url_id, to_signed(simhash)),
        )


def test_fingerprints_of_another_simhash_scheme_stay_out_of_the_near_index(
    tmp_path: Path,
) -> None:
    db_path = tmp_path / "crawl.db"
    SqliteStore(db_path).close()
    # A crawl.db written before this version's hash recipe: no scheme recorded, one fingerprint.
    with sqlite3.connect(db_path) as db:
        db.execute("DELETE FROM meta WHERE key LIKE 'simhash_%'")
    _insert_fetch(db_path, 1, 0x1234)
    index = NearDuplicateIndex(3)
    SqliteStore(db_path, near_index=index).close()
    assert len(index) == 0  # an old-scheme fingerprint is not comparable with new ones
    _insert_fetch(db_path, 2, 0xABCD)  # written by this version
    index = NearDuplicateIndex(3)
    SqliteStore(db_path, near_index=index).close()
    assert len(index) == 1
    assert index.find(0xABCD) is not None


def test_known_urls_are_settled_in_bulk_and_the_rest_keep_their_paths(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "crawl.db", seen_filter=SeenFilter(1000, 0.01))
    h = "http://a.example"
    try:
        known = [UrlCandidate(f"{h}/k{i}", h, 1, source="link") for i in range(1200)]
        assert store.add(known, 0.0).added == 1200
        with store._transaction() as db:
            store.record_excluded(db, [(f"{h}/deep", "depth")], 9, 0.0)
        mapped = UrlCandidate(
            f"{h}/k7", h, 1, source="sitemap_entry", lastmod="2026-01-02", changefreq="daily"
        )
        batch = [
            *known,  # more than one lookup chunk of known URLs: all seen
            UrlCandidate(f"{h}/deep", h, 1, source="link"),  # a shallower path re-admits it
            UrlCandidate(f"{h}/new", h, 1, source="link"),
            UrlCandidate(f"{h}/new", h, 1, source="link"),  # twice in one batch
            mapped,  # known, but its sitemap metadata is kept
        ]
        result = store.add(batch, 1.0)
        assert (result.added, result.already_seen) == (2, 1200 + 2)
        rows = dict(store._db.execute("SELECT url, state FROM urls").fetchall())
        assert rows[f"{h}/deep"] == rows[f"{h}/new"] == "queued"
        assert store._db.execute(
            "SELECT lastmod, changefreq FROM urls WHERE url = ?", (f"{h}/k7",)
        ).fetchone() == ("2026-01-02", "daily")
        queued = store._db.execute("SELECT queued FROM hosts WHERE host_key = ?", (h,))
        assert queued.fetchone()[0] == 1202
    finally:
        store.close()


def test_near_index_truncate_forgets_exactly_the_later_entries() -> None:
    rng = random.Random(11)
    base = [rng.getrandbits(64) for _ in range(200)]
    # Near copies of earlier entries, so later entries share buckets with kept ones.
    later = [fp ^ (1 << rng.randrange(64)) for fp in base[:100]] + [
        rng.getrandbits(64) for _ in range(50)
    ]
    index = NearDuplicateIndex(3)
    for n, fp in enumerate(base + later):
        index.add(fp, n)
    index.truncate(len(base))
    fresh = NearDuplicateIndex(3)
    for n, fp in enumerate(base):
        fresh.add(fp, n)
    assert len(index) == len(base)
    for fp in base + later:
        assert index.find_all(fp) == fresh.find_all(fp)
    index.add(later[0], 999)  # still usable: new entries are found
    assert index.find(later[0]) == (999, 0)


def test_near_index_stops_storing_at_its_cap_but_still_answers() -> None:
    rng = random.Random(5)
    stored = [rng.getrandbits(64) for _ in range(10)]
    index = NearDuplicateIndex(3, max_entries=10)
    for n, fp in enumerate(stored):
        index.add(fp, n)
    late = rng.getrandbits(64)
    index.add(late, 99)  # full: not stored, counted
    assert len(index) == 10
    assert index.full_skips == 1
    assert index.find(late) is None
    assert index.find(stored[3] ^ 0b101) == (3, 2)  # the stored ones still match


def test_the_bloom_path_and_a_resume_see_other_parameter_orders(tmp_path: Path) -> None:
    """Links the filter calls definitely new are first resolved by their seen key (urls.py
    seen_key): another order of a stored URL is seen, in this run and after a resume, and a
    crawl.db from before the seen_key column gains it."""
    path = tmp_path / "crawl.db"
    a = "http://a.example"

    def links(*paths: str) -> list[UrlCandidate]:
        return [UrlCandidate(a + p, a, 1, source="link") for p in paths]

    store = SqliteStore(path, seen_filter=SeenFilter(100, 0.01))
    store.close()
    db = sqlite3.connect(path)
    db.executescript("DROP INDEX urls_seen_key; ALTER TABLE urls DROP COLUMN seen_key;")
    db.close()
    store = SqliteStore(path, seen_filter=SeenFilter(100, 0.01))
    first = store.add(links("/p?b=1&a=2", "/p?a=2&b=1", "/plain"), 0.0)
    assert (first.added, first.already_seen) == (2, 1)
    store.close()
    store = SqliteStore(path, seen_filter=SeenFilter(100, 0.01))
    again = store.add(links("/p?a=2&b=1", "/p?b=1&a=2", "/q?y&x"), 0.0)
    assert (again.added, again.already_seen) == (1, 2)
    rows = dict(store._db.execute("SELECT url, seen_key FROM urls").fetchall())
    assert rows == {
        f"{a}/p?b=1&a=2": f"{a}/p?a=2&b=1",
        f"{a}/plain": None,
        f"{a}/q?y&x": f"{a}/q?x&y",
    }
    # Exclusions too: two orders of a refused URL are one row, and a stored URL's other order
    # is that URL (seen), not a second row.
    with store._transaction() as db:
        excluded = [(f"{a}/t?y=1&x=1", "query_params"), (f"{a}/t?x=1&y=1", "query_params")]
        store.record_excluded(db, [*excluded, (f"{a}/p?a=2&b=1", "query_params")], 1, 0.0)
    urls = [u for (u,) in store._db.execute("SELECT url FROM urls WHERE url LIKE '%/t?%'")]
    assert urls == [f"{a}/t?y=1&x=1"]
    (count,) = store._db.execute("SELECT COUNT(*) FROM urls WHERE url LIKE '%/p?%'").fetchone()
    assert count == 1
    store.close()
