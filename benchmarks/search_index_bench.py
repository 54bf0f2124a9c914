"""Full-text index for ``crawlspace index`` / ``crawlspace search``: tantivy vs SQLite FTS5.

Run: python benchmarks/search_index_bench.py [--docs N] [--copies C] [--engines tantivy,fts5]
     [--repeat R] [--queries 200] [--fts5-synchronous FULL|NORMAL] [--tantivy-threads T]

Corpus: the real HTML pages of python3.11-doc (/usr/share/doc/python3.11/html, 530 pages) and
postgresql-doc-15 (/usr/share/doc/postgresql-doc-15/html, 1,169 pages), extracted once with
selectolax's ``LexborHTMLParser`` (title = ``<title>`` text; text = body text without
script/style, whitespace collapsed). A document is ``id`` (sha256 of its file:// URL, 32 hex),
``url``, ``title``, ``text``, ``lang`` ("en"). ``--copies C`` repeats the corpus C times under
distinct URLs and ids (``--copies 4`` gives ~6,800 documents). No network.

Each engine run is a fresh subprocess on a fresh temporary directory (so imports, peak RSS and the
page cache of one engine do not leak into the other), and measures:

1. Indexing: every document goes through the upsert path an incremental indexer uses (it does not
   know whether a page is new), in batches of 100 with one commit per batch; wall time and CPU
   (``time.process_time``: all threads, so tantivy's background merges count) per document, the
   final settle (tantivy: wait for merges + GC; FTS5: WAL checkpoint) included; bytes on disk per
   document after the settle.
2. Upsert: ~10% of the documents (at most 500) are re-added with changed text, batched and
   committed; the old text must be gone (a word that only the old version had finds nothing),
   the new one found, the document count unchanged.
   - tantivy: ``delete_documents_by_term("id", id)`` on a ``raw``-tokenized id field, then
     ``add_document``; the delete applies at the commit, in the same opstamp order.
   - FTS5: an external-content table (``pages`` is an ordinary rowid table with ``id TEXT UNIQUE``
     holding url/title/text/lang once; ``pages_fts`` is ``fts5(title, text, content='pages',
     tokenize='porter unicode61')`` kept in step by the three triggers of the SQLite manual);
     the write is ``INSERT ... ON CONFLICT(id) DO UPDATE`` (SQLite's UPSERT: one statement, the
     update trigger deletes the old tokens and inserts the new ones). A plain fts5 table cannot
     look up an ``UNINDEXED`` id column without a full scan, and a contentless table cannot give
     ``snippet()`` (``contentless_delete`` needs SQLite 3.43).
3. Delete by id: another ~10% (disjoint), batched and committed; cost per delete; the deleted
   documents must be found neither by id nor by a word only they contain.
4. Search: ``--queries`` queries of 1-2 words from the corpus vocabulary (common, mid-frequency
   and rare single words, and word pairs from one page), all words required, over title+text,
   BM25, top 10, each hit with id/url/title and a highlighted snippet of the text (tantivy:
   ``SnippetGenerator``, 150 chars; FTS5: ``snippet()``, 24 tokens) on a separately opened
   reader; one untimed warm-up pass, then median and p95 of the timed pass. A word found in
   exactly one page must find exactly that page (with ``--copies C``: exactly its C copies) first.
   The top-10 lists of the two engines are compared (overlap@10, same top-1). "Ranking only"
   times the same queries returning the top 10 addresses/rowids alone (no stored fields, no
   snippet), which separates the engine's BM25 top-k from the per-hit snippet work.
5. Concurrency: with 50 documents added but not committed, a second process opens the index:
   how many documents its reader sees and whether it can get a writer.
6. Import time (``python -X importtime -c "import X"``, best of 5) and installed size.

Settings: the FTS5 file gets the crawl database's pragmas (WAL, busy_timeout, 64 MiB cache) but
``synchronous=FULL`` by default, so a commit is as durable as tantivy's (which fsyncs);
``--fts5-synchronous NORMAL`` is the crawl database's own setting. The tantivy writer uses one
indexing thread by default (``--tantivy-threads 0`` lets tantivy choose: on a 2-core machine
that was slower with a commit per 100 documents, each commit writing one segment per thread).

The tokenizer notes at the end show what each default analyzer makes of the same sample text.
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import importlib.metadata
import json
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from selectolax.lexbor import LexborHTMLParser

ROOTS = (Path("/usr/share/doc/python3.11/html"), Path("/usr/share/doc/postgresql-doc-15/html"))
BATCH = 100
TOP_K = 10
PROBE_DOCS = 50
UPDATE_CAP = 500
MARKER = "zqxrevisionmarker"  # a token no page contains, added to every upserted page
TOKEN = re.compile(r"[^\W_]+")  # unicode61 and tantivy's SimpleTokenizer both split on non-alnum
TOKENIZER_SAMPLE = "Connections running café naïve PostgreSQL's e-mail x86_64 3.11 über"


@dataclass(frozen=True)
class Doc:
    id: str
    url: str
    title: str
    text: str
    lang: str = "en"


@dataclass(frozen=True)
class Plan:
    """What every engine run does, decided once by the parent process."""

    base: list[Doc]
    copies: int
    queries: list[list[str]]
    unique: list[tuple[str, int]]  # (word in exactly one base page, that page's index)
    upsert: list[int]  # base page indexes; all their copies are upserted
    upsert_word: tuple[str, int]  # a unique word of an upserted page, removed by the upsert
    delete: list[int]  # base page indexes; all their copies are deleted
    delete_word: tuple[str, int]


# --- Corpus ------------------------------------------------------------------------------------


def doc_id(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()[:32]


def extract(path: Path) -> Doc:
    tree = LexborHTMLParser(path.read_bytes().decode("utf-8", "replace"))
    title_node = tree.css_first("title")
    title = " ".join(title_node.text().split()) if title_node is not None else ""
    tree.strip_tags(["script", "style"])
    body = tree.body
    text = " ".join(body.text(separator=" ").split()) if body is not None else ""
    url = path.as_uri()
    return Doc(doc_id(url), url, title, text)


def load_base(limit: int | None) -> tuple[list[Doc], float]:
    paths = sorted(p for root in ROOTS for p in root.rglob("*.html"))
    if not paths:
        sys.exit(f"no HTML under {', '.join(map(str, ROOTS))}: apt-get install the doc packages")
    random.Random(1).shuffle(paths)  # so --docs N mixes both corpora
    if limit is not None:
        paths = paths[:limit]
    start = time.perf_counter()
    docs = [extract(p) for p in paths]
    return docs, time.perf_counter() - start


def copy_of(doc: Doc, copy: int) -> Doc:
    if copy == 0:
        return doc
    url = f"{doc.url}?copy={copy}"
    return Doc(doc_id(url), url, doc.title, doc.text, doc.lang)


def all_docs(plan: Plan) -> list[Doc]:
    return [copy_of(d, c) for c in range(plan.copies) for d in plan.base]


def copy_ids(plan: Plan, base_index: int) -> set[str]:
    return {copy_of(plan.base[base_index], c).id for c in range(plan.copies)}


def remove_word(s: str, word: str) -> str:
    return re.sub(rf"(?i)(?<![^\W_]){re.escape(word)}(?![^\W_])", " ", s)


def revised(doc: Doc, word: str) -> Doc:
    """The page's next version: the marker added, ``word`` gone."""
    return Doc(
        doc.id,
        doc.url,
        remove_word(doc.title, word),
        f"{MARKER} {remove_word(doc.text, word)}",
        doc.lang,
    )


def words_of(doc: Doc) -> set[str]:
    return {w for w in TOKEN.findall(f"{doc.title} {doc.text}".lower()) if w.isascii()}


def make_plan(base: list[Doc], copies: int, n_queries: int, seed: int) -> Plan:
    rng = random.Random(seed)
    page_words = [words_of(d) for d in base]
    df: Counter[str] = Counter()
    for ws in page_words:
        df.update(w for w in ws if w.isalpha() and 3 <= len(w) <= 30)
    vocab = sorted(df)

    # Words in exactly one page whose stem cannot be shared with another vocabulary word: no
    # other word starts with its first len-3 letters (so "foobars" is not kept if "foobar" exists).
    def stem_alone(w: str) -> bool:
        p = w[: max(5, len(w) - 3)]
        i = bisect.bisect_left(vocab, p)
        return i + 1 >= len(vocab) or not vocab[i + 1].startswith(p)

    owner: dict[str, int] = {}
    for i, ws in enumerate(page_words):
        for w in ws:
            if df.get(w) == 1 and len(w) >= 6:
                owner[w] = i
    unique_words = [w for w in sorted(owner) if stem_alone(w)]
    rng.shuffle(unique_words)
    by_page: dict[int, str] = {}
    for w in unique_words:
        by_page.setdefault(owner[w], w)
    pages_with_unique = list(by_page)
    if len(pages_with_unique) < 3:
        sys.exit("corpus too small: fewer than 3 pages with a unique word (raise --docs)")

    common = [w for w in vocab if df[w] >= 50] or vocab
    mid = [w for w in vocab if 5 <= df[w] < 50] or vocab
    rare = [w for w in vocab if df[w] <= 2] or vocab
    queries: list[list[str]] = []
    for i in range(n_queries):
        kind = i % 10
        if kind < 3:
            queries.append([rng.choice(common)])
        elif kind < 5:
            queries.append([rng.choice(mid)])
        elif kind < 7:
            queries.append([rng.choice(rare)])
        else:  # two words of one page, neither trivial
            pool = sorted(w for w in page_words[rng.randrange(len(base))] if df.get(w, 0) >= 3)
            queries.append(rng.sample(pool, 2) if len(pool) >= 2 else [rng.choice(mid)])

    n_update = max(1, min(UPDATE_CAP, len(base) * copies // 10) // copies)
    upsert_page, delete_page = pages_with_unique[0], pages_with_unique[1]
    rest = [i for i in range(len(base)) if i not in (upsert_page, delete_page)]
    rng.shuffle(rest)
    upsert = [upsert_page, *rest[: n_update - 1]]
    delete = [delete_page, *rest[n_update - 1 : 2 * n_update - 2]]
    checks = pages_with_unique[2:22]
    return Plan(
        base=base,
        copies=copies,
        queries=queries,
        unique=[(by_page[i], i) for i in checks],
        upsert=upsert,
        upsert_word=(by_page[upsert_page], upsert_page),
        delete=delete,
        delete_word=(by_page[delete_page], delete_page),
    )


def save_plan(plan: Plan, path: Path) -> None:
    path.write_text(json.dumps(asdict(plan)))


def read_plan(path: Path) -> Plan:
    raw = json.loads(path.read_text())
    return Plan(
        base=[Doc(**d) for d in raw["base"]],
        copies=raw["copies"],
        queries=raw["queries"],
        unique=[(w, i) for w, i in raw["unique"]],
        upsert=raw["upsert"],
        upsert_word=(raw["upsert_word"][0], raw["upsert_word"][1]),
        delete=raw["delete"],
        delete_word=(raw["delete_word"][0], raw["delete_word"][1]),
    )


# --- Engines -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    id: str
    url: str
    title: str
    snippet: str


class Engine(Protocol):
    def upsert(self, docs: Sequence[Doc]) -> None: ...  # not committed
    def delete(self, ids: Sequence[str]) -> None: ...  # not committed
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def settle(self) -> None: ...
    def open_reader(self) -> None: ...
    def refresh(self) -> None: ...  # make the reader see the last commit
    def search(self, words: Sequence[str]) -> list[Hit]: ...
    def rank(self, words: Sequence[str]) -> int: ...  # top 10 addresses only: no fetch, no snippet
    def count(self, words: Sequence[str]) -> int: ...
    def count_id(self, id_: str) -> int: ...
    def num_docs(self) -> int: ...
    def close(self) -> None: ...


class TantivyEngine:
    """One ``IndexWriter`` for the process (tantivy's rule), a separate ``Index`` to read."""

    def __init__(self, path: Path, threads: int, heap: int) -> None:
        import tantivy

        self.t = tantivy
        self.path = path
        self.threads = threads
        self.heap = heap
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("id", stored=True, tokenizer_name="raw")
        sb.add_text_field("url", stored=True, tokenizer_name="raw")
        sb.add_text_field("title", stored=True, tokenizer_name="en_stem")
        sb.add_text_field("text", stored=True, tokenizer_name="en_stem")
        sb.add_text_field("lang", stored=True, tokenizer_name="raw")
        self.schema = sb.build()
        self.index = tantivy.Index(self.schema, path=str(path))
        self.writer = self.index.writer(heap, threads)
        self.reader: Any = None

    def upsert(self, docs: Sequence[Doc]) -> None:
        for d in docs:
            self.writer.delete_documents_by_term("id", d.id)
            self.writer.add_document(
                self.t.Document(id=d.id, url=d.url, title=d.title, text=d.text, lang=d.lang)
            )

    def delete(self, ids: Sequence[str]) -> None:
        for i in ids:
            self.writer.delete_documents_by_term("id", i)

    def commit(self) -> None:
        self.writer.commit()

    def rollback(self) -> None:
        self.writer.rollback()

    def settle(self) -> None:
        self.writer.wait_merging_threads()  # consumes the writer (and its lock)
        self.writer = self.index.writer(self.heap, self.threads)
        self.writer.garbage_collect_files()

    def open_reader(self) -> None:
        self.reader = self.t.Index.open(str(self.path))

    def refresh(self) -> None:
        self.reader.reload()

    def _query(self, words: Sequence[str]) -> Any:
        return self.reader.parse_query(
            " ".join(words), ["title", "text"], conjunction_by_default=True
        )

    def search(self, words: Sequence[str]) -> list[Hit]:
        query = self._query(words)
        searcher = self.reader.searcher()
        result = searcher.search(query, TOP_K, count=False)
        snippets = self.t.SnippetGenerator.create(searcher, query, self.schema, "text")
        snippets.set_max_num_chars(150)
        hits = []
        for _score, address in result.hits:
            doc = searcher.doc(address)
            hits.append(
                Hit(
                    doc["id"][0],
                    doc["url"][0],
                    doc["title"][0],
                    snippets.snippet_from_doc(doc).to_html(),
                )
            )
        return hits

    def rank(self, words: Sequence[str]) -> int:
        return len(self.reader.searcher().search(self._query(words), TOP_K, count=False).hits)

    def count(self, words: Sequence[str]) -> int:
        return int(self.reader.searcher().search(self._query(words), 1, count=True).count)

    def count_id(self, id_: str) -> int:
        query = self.t.Query.term_query(self.schema, "id", id_)
        return int(self.reader.searcher().search(query, 1, count=True).count)

    def num_docs(self) -> int:
        return int(self.reader.searcher().num_docs)

    def segments(self) -> int:
        return int(self.reader.searcher().num_segments)

    def close(self) -> None:
        self.writer.wait_merging_threads()


FTS5_SCHEMA = """
CREATE TABLE pages(
  doc INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, url TEXT NOT NULL,
  title TEXT NOT NULL, text TEXT NOT NULL, lang TEXT NOT NULL);
CREATE VIRTUAL TABLE pages_fts USING fts5(
  title, text, content='pages', content_rowid='doc', tokenize='porter unicode61');
CREATE TRIGGER pages_ai AFTER INSERT ON pages BEGIN
  INSERT INTO pages_fts(rowid, title, text) VALUES (new.doc, new.title, new.text);
END;
CREATE TRIGGER pages_ad AFTER DELETE ON pages BEGIN
  INSERT INTO pages_fts(pages_fts, rowid, title, text)
  VALUES ('delete', old.doc, old.title, old.text);
END;
CREATE TRIGGER pages_au AFTER UPDATE ON pages BEGIN
  INSERT INTO pages_fts(pages_fts, rowid, title, text)
  VALUES ('delete', old.doc, old.title, old.text);
  INSERT INTO pages_fts(rowid, title, text) VALUES (new.doc, new.title, new.text);
END;
"""
FTS5_UPSERT = """
INSERT INTO pages(id, url, title, text, lang) VALUES (?, ?, ?, ?, ?)
ON CONFLICT(id) DO UPDATE SET
  url = excluded.url, title = excluded.title, text = excluded.text, lang = excluded.lang
"""
FTS5_SEARCH = """
SELECT p.id, p.url, p.title, snippet(pages_fts, 1, '<b>', '</b>', '…', 24)
FROM pages_fts JOIN pages AS p ON p.doc = pages_fts.rowid
WHERE pages_fts MATCH ? ORDER BY rank LIMIT ?
"""


def fts5_match(words: Sequence[str]) -> str:
    return " ".join('"{}"'.format(w.replace('"', '""')) for w in words)  # implicit AND


class Fts5Engine:
    """The crawl database's settings (WAL, busy_timeout) on its own file; a read-only reader."""

    def __init__(self, path: Path, synchronous: str) -> None:
        self.path = path / "index.db"
        self.db = sqlite3.connect(self.path)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(f"PRAGMA synchronous={synchronous}")
        self.db.execute("PRAGMA busy_timeout=10000")
        self.db.execute("PRAGMA cache_size=-65536")
        self.db.executescript(FTS5_SCHEMA)
        self.db.commit()
        self.reader: sqlite3.Connection | None = None

    def upsert(self, docs: Sequence[Doc]) -> None:
        self.db.executemany(FTS5_UPSERT, [(d.id, d.url, d.title, d.text, d.lang) for d in docs])

    def delete(self, ids: Sequence[str]) -> None:
        self.db.executemany("DELETE FROM pages WHERE id = ?", [(i,) for i in ids])

    def commit(self) -> None:
        self.db.commit()

    def rollback(self) -> None:
        self.db.rollback()

    def settle(self) -> None:
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def open_reader(self) -> None:
        self.reader = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)

    def refresh(self) -> None:
        pass  # each statement outside a transaction reads the last commit

    def _r(self) -> sqlite3.Connection:
        assert self.reader is not None
        return self.reader

    def search(self, words: Sequence[str]) -> list[Hit]:
        rows = self._r().execute(FTS5_SEARCH, (fts5_match(words), TOP_K)).fetchall()
        return [Hit(*row) for row in rows]

    def rank(self, words: Sequence[str]) -> int:
        sql = "SELECT rowid FROM pages_fts WHERE pages_fts MATCH ? ORDER BY rank LIMIT ?"
        return len(self._r().execute(sql, (fts5_match(words), TOP_K)).fetchall())

    def count(self, words: Sequence[str]) -> int:
        sql = "SELECT count(*) FROM pages_fts WHERE pages_fts MATCH ?"
        return int(self._r().execute(sql, (fts5_match(words),)).fetchone()[0])

    def count_id(self, id_: str) -> int:
        return int(
            self._r().execute("SELECT count(*) FROM pages WHERE id = ?", (id_,)).fetchone()[0]
        )

    def num_docs(self) -> int:
        return int(self._r().execute("SELECT count(*) FROM pages").fetchone()[0])

    def integrity(self) -> bool:
        try:
            self.db.execute("INSERT INTO pages_fts(pages_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError:
            return False
        return True

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
        self.db.close()


# --- One engine run (a subprocess) -------------------------------------------------------------


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def vm_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def timed_batches(
    engine: Engine, items: Sequence[Any], apply: Any
) -> tuple[float, float]:  # (wall, cpu) seconds
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(items), BATCH):
        apply(items[i : i + BATCH])
        engine.commit()
    return time.perf_counter() - wall, time.process_time() - cpu


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_engine(name: str, plan: Plan, workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    docs = all_docs(plan)
    n = len(docs)
    rss_base = vm_kib("VmHWM")
    engine: Engine
    if name == "tantivy":
        engine = TantivyEngine(workdir, args.tantivy_threads, args.tantivy_heap)
    else:
        engine = Fts5Engine(workdir, args.fts5_synchronous)
    out: dict[str, Any] = {"engine": name, "docs": n}

    # 1. Indexing, upsert path, a commit per 100 documents, then the settle.
    wall, cpu = timed_batches(engine, docs, engine.upsert)
    w0, c0 = time.perf_counter(), time.process_time()
    engine.settle()
    settle_wall, settle_cpu = time.perf_counter() - w0, time.process_time() - c0
    out["index_wall_us"] = (wall + settle_wall) / n * 1e6
    out["index_cpu_us"] = (cpu + settle_cpu) / n * 1e6
    out["settle_s"] = settle_wall
    out["bytes_per_doc"] = dir_size(workdir) / n
    out["index_mb"] = dir_size(workdir) / 1e6
    engine.open_reader()
    engine.refresh()
    out["indexed"] = engine.num_docs()
    if isinstance(engine, TantivyEngine):
        out["segments"] = engine.segments()

    # 4. Search (on the full index): warm-up, then timed; unique-word checks.
    for q in plan.queries:
        engine.search(q)
    latencies, tops, highlighted, hits_total, empty = [], [], 0, 0, 0
    for q in plan.queries:
        t0 = time.perf_counter()
        hits = engine.search(q)
        latencies.append(time.perf_counter() - t0)
        tops.append([h.id for h in hits])
        hits_total += len(hits)
        highlighted += sum("<b>" in h.snippet for h in hits)
        empty += not hits
    out["search_p50_ms"] = statistics.median(latencies) * 1e3
    out["search_p95_ms"] = percentile(latencies, 0.95) * 1e3
    out["search_max_ms"] = max(latencies) * 1e3
    out["tops"] = tops
    ranking = []
    for q in plan.queries:
        t0 = time.perf_counter()
        engine.rank(q)
        ranking.append(time.perf_counter() - t0)
    out["rank_p50_ms"] = statistics.median(ranking) * 1e3
    out["rank_p95_ms"] = percentile(ranking, 0.95) * 1e3
    out["highlighted"] = highlighted / max(1, hits_total)
    out["empty_queries"] = empty
    first_ok = exact_ok = 0
    for word, page in plan.unique:
        expected = copy_ids(plan, page)
        hits = engine.search([word])
        first_ok += bool(hits) and hits[0].id in expected
        exact_ok += {h.id for h in hits} == expected
    out["unique_first"] = f"{first_ok}/{len(plan.unique)}"
    out["unique_exact"] = f"{exact_ok}/{len(plan.unique)}"

    # 2. Upsert: ~10% of the pages get a new version; batched, committed.
    word, page = plan.upsert_word
    before = engine.count([word])
    new = [revised(copy_of(plan.base[i], c), word) for c in range(plan.copies) for i in plan.upsert]
    wall, cpu = timed_batches(engine, new, engine.upsert)
    out["upsert_wall_us"] = wall / len(new) * 1e6
    out["upsert_cpu_us"] = cpu / len(new) * 1e6
    out["upserted"] = len(new)
    engine.refresh()
    after_hits = engine.search([word])
    out["upsert_ok"] = (
        before == plan.copies
        and not after_hits
        and engine.count([MARKER]) == len(new)
        and engine.num_docs() == n
    )
    out["upsert_detail"] = (
        f"old word {before}->{len(after_hits)} hits, marker {engine.count([MARKER])}/{len(new)},"
        f" docs {engine.num_docs()}/{n}"
    )

    # 3. Delete by id: another ~10%, batched, committed.
    word, page = plan.delete_word
    before = engine.count([word])
    gone = [copy_of(plan.base[i], c).id for c in range(plan.copies) for i in plan.delete]
    wall, cpu = timed_batches(engine, gone, engine.delete)
    out["delete_wall_us"] = wall / len(gone) * 1e6
    out["delete_cpu_us"] = cpu / len(gone) * 1e6
    out["deleted"] = len(gone)
    engine.refresh()
    by_id = sum(engine.count_id(i) for i in gone)
    after = engine.count([word])
    out["delete_ok"] = before == plan.copies and after == 0 and by_id == 0
    out["delete_ok"] = out["delete_ok"] and engine.num_docs() == n - len(gone)
    out["delete_detail"] = (
        f"word {before}->{after} hits, by id {by_id}, docs {engine.num_docs()}/{n - len(gone)}"
    )
    if isinstance(engine, Fts5Engine):
        out["integrity"] = engine.integrity()

    # 5. A second process while the writer is mid-batch (50 added, not committed).
    committed = engine.num_docs()
    engine.upsert([copy_of(d, plan.copies + 1) for d in plan.base[:PROBE_DOCS]])
    probe = subprocess.run(
        [sys.executable, __file__, "--probe", name, str(workdir)],
        capture_output=True,
        text=True,
        check=True,
    )
    out["probe"] = json.loads(probe.stdout)
    out["probe"]["committed"] = committed
    engine.rollback()
    engine.refresh()
    out["probe"]["after_rollback"] = engine.num_docs()
    engine.close()
    out["rss_extra_mb"] = (vm_kib("VmHWM") - rss_base) / 1024
    return out


def probe(engine: str, path: Path) -> dict[str, Any]:
    """Run in a second process: what a reader and a would-be writer see right now."""
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    if engine == "tantivy":
        import tantivy

        index = tantivy.Index.open(str(path))
        out["reader_sees"] = index.searcher().num_docs
        t0 = time.perf_counter()
        try:
            index.writer(50_000_000, 1)
            out["writer"] = "acquired"
        except ValueError as e:
            out["writer"] = str(e).split(".")[0][:60]
    else:
        db = sqlite3.connect(path / "index.db", timeout=0.5)
        out["reader_sees"] = db.execute("SELECT count(*) FROM pages").fetchone()[0]
        t0 = time.perf_counter()
        try:
            db.execute("BEGIN IMMEDIATE")
            out["writer"] = "acquired"
        except sqlite3.OperationalError as e:
            out["writer"] = str(e)
    out["writer_wait_s"] = round(time.perf_counter() - t0, 3)
    return out


# --- Parent: corpus, runs, environment facts, table ---------------------------------------------


def import_ms(module: str, runs: int = 5) -> float:
    best = float("inf")
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"import {module}"],
            capture_output=True,
            text=True,
            check=True,
        )
        for line in proc.stderr.splitlines():
            parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
            if len(parts) == 3 and parts[2] == module:
                best = min(best, int(parts[1]) / 1000)
    return best


def installed_mb(dist: str) -> float:
    paths = [Path(str(f.locate())) for f in importlib.metadata.distribution(dist).files or []]
    return sum(p.stat().st_size for p in paths if p.is_file()) / 1e6


def tokenizer_notes(engines: Sequence[str]) -> list[str]:
    notes = [f"sample: {TOKENIZER_SAMPLE!r}"]
    if "tantivy" in engines:
        import tantivy

        t, f = tantivy.Tokenizer, tantivy.Filter
        en_stem = (  # what tantivy registers as "en_stem"
            tantivy.TextAnalyzerBuilder(t.simple())
            .filter(f.remove_long(40))
            .filter(f.lowercase())
            .filter(f.stemmer("english"))
            .build()
        )
        notes.append(f"tantivy en_stem  : {' '.join(en_stem.analyze(TOKENIZER_SAMPLE))}")
    if "fts5" in engines:
        db = sqlite3.connect(":memory:")
        db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        db.execute("INSERT INTO t(x) VALUES (?)", (TOKENIZER_SAMPLE,))
        terms = [r[0] for r in db.execute("SELECT term FROM v ORDER BY offset")]
        notes.append(f"fts5 porter u61  : {' '.join(terms)}")
    return notes


def fmt(values: list[float], digits: int) -> str:
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:,.{digits}f}"
    return f"{med:,.{digits}f} [{min(values):,.{digits}f}-{max(values):,.{digits}f}]"


def overlap(a: list[list[str]], b: list[list[str]]) -> tuple[float, float]:
    both = [(x, y) for x, y in zip(a, b, strict=True) if x or y]
    at10 = statistics.mean(len(set(x) & set(y)) / max(len(x), len(y)) for x, y in both)
    top1 = statistics.mean(bool(x and y and x[0] == y[0]) for x, y in both)
    return at10, top1


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=None, help="base pages (default: all)")
    parser.add_argument("--copies", type=int, default=1, help="corpus copies, distinct ids")
    parser.add_argument("--engines", default="tantivy,fts5")
    parser.add_argument("--repeat", type=int, default=1, help="fresh runs per engine")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fts5-synchronous", default="FULL", choices=["FULL", "NORMAL"])
    parser.add_argument("--tantivy-threads", type=int, default=1, help="0 = tantivy's choice")
    parser.add_argument("--tantivy-heap", type=int, default=128_000_000)
    parser.add_argument("--probe", nargs=2, metavar=("ENGINE", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--run", nargs=3, metavar=("ENGINE", "PLAN", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(probe(args.probe[0], Path(args.probe[1]))))
        return
    if args.run:
        result = run_engine(args.run[0], read_plan(Path(args.run[1])), Path(args.run[2]), args)
        print(json.dumps(result))
        return

    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if unknown := set(engines) - {"tantivy", "fts5"}:
        parser.error(f"unknown engines: {', '.join(sorted(unknown))}")
    base, extract_s = load_base(args.docs)
    plan = make_plan(base, args.copies, args.queries, args.seed)
    text_mb = sum(len(d.text.encode()) for d in base) * args.copies / 1e6
    print(
        f"corpus: {len(base)} pages x {args.copies} = {len(base) * args.copies} docs, "
        f"{text_mb:.1f} MB text; lexbor extraction {extract_s:.1f} s; "
        f"{len(plan.queries)} queries, {len(plan.unique)} unique-word checks, "
        f"upsert {len(plan.upsert) * args.copies}, delete {len(plan.delete) * args.copies}"
    )
    passthrough = [
        f"--fts5-synchronous={args.fts5_synchronous}",
        f"--tantivy-threads={args.tantivy_threads}",
        f"--tantivy-heap={args.tantivy_heap}",
    ]
    results: dict[str, list[dict[str, Any]]] = {e: [] for e in engines}
    with tempfile.TemporaryDirectory(prefix="search-index-bench-") as tmp:
        plan_path = Path(tmp) / "plan.json"
        save_plan(plan, plan_path)
        for run in range(args.repeat):
            for e in engines:  # alternate engines between repeats
                workdir = Path(tmp) / f"{e}-{run}"
                workdir.mkdir()
                proc = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--run",
                        e,
                        str(plan_path),
                        str(workdir),
                        *passthrough,
                    ],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if proc.returncode:
                    sys.exit(f"{e} run failed:\n{proc.stderr}")
                results[e].append(json.loads(proc.stdout))
                shutil.rmtree(workdir)

    numeric = [  # (label, result key, decimals): the median over the runs, [min-max] if several
        ("index wall us/doc (upsert path, commit/100)", "index_wall_us", 0),
        ("index CPU us/doc (all threads)", "index_cpu_us", 0),
        ("  incl. final settle, s", "settle_s", 2),
        ("on disk bytes/doc", "bytes_per_doc", 0),
        ("on disk MB", "index_mb", 1),
        ("upsert wall us/doc (commit/100)", "upsert_wall_us", 0),
        ("upsert CPU us/doc", "upsert_cpu_us", 0),
        ("delete wall us/doc (commit/100)", "delete_wall_us", 0),
        ("delete CPU us/doc", "delete_cpu_us", 0),
        ("search p50 ms (top10 + stored + snippet)", "search_p50_ms", 2),
        ("search p95 ms", "search_p95_ms", 2),
        ("search max ms", "search_max_ms", 2),
        ("ranking only p50 ms (top10 addresses)", "rank_p50_ms", 2),
        ("ranking only p95 ms", "rank_p95_ms", 2),
        ("writer process extra peak RSS MB", "rss_extra_mb", 0),
    ]
    rows: list[tuple[str, dict[str, str]]] = [
        (label, {e: fmt([r[key] for r in results[e]], digits) for e in engines})
        for label, key, digits in numeric
    ]
    first = {e: results[e][0] for e in engines}
    rows += [
        ("hits with a highlight", {e: f"{first[e]['highlighted']:.0%}" for e in engines}),
        ("queries with no hit", {e: str(first[e]["empty_queries"]) for e in engines}),
        (
            "unique word: found first / exact set",
            {e: f"{first[e]['unique_first']} / {first[e]['unique_exact']}" for e in engines},
        ),
        (
            "upsert replaces (verified)",
            {e: str(all(r["upsert_ok"] for r in results[e])) for e in engines},
        ),
        (
            "delete by id (verified)",
            {e: str(all(r["delete_ok"] for r in results[e])) for e in engines},
        ),
    ]
    # Only the engines run: tantivy is not a dependency (--engines fts5 runs without it).
    modules = {"tantivy": "tantivy", "fts5": "sqlite3"}
    imports = {e: import_ms(modules[e]) for e in engines}
    sizes = {e: "0 (stdlib)" if e == "fts5" else f"{installed_mb('tantivy'):.1f}" for e in engines}
    rows.append(("import ms (-X importtime, best of 5)", {e: f"{imports[e]:.1f}" for e in engines}))
    rows.append(("installed MB", {e: sizes[e] for e in engines}))
    name_w = max(len(label) for label, _ in rows) + 2
    col_w = max(12, *(len(v) + 2 for _, cells in rows for v in cells.values()))
    print()
    print("metric".ljust(name_w) + "".join(e.rjust(col_w) for e in engines))
    for label, cells in rows:
        print(label.ljust(name_w) + "".join(cells[e].rjust(col_w) for e in engines))

    print()
    for e in engines:
        r = results[e][0]
        p = r["probe"]
        extra = f", {r['segments']} segments after settle" if "segments" in r else ""
        if "integrity" in r:
            extra += f", integrity-check {'ok' if r['integrity'] else 'FAILED'}"
        print(f"{e}: upsert {r['upsert_detail']}; delete {r['delete_detail']}{extra}")
        print(
            f"{e}: mid-batch ({PROBE_DOCS} uncommitted, {p['committed']} committed): another"
            f" process's reader sees {p['reader_sees']}; its writer: {p['writer']!r} after"
            f" {p['writer_wait_s']} s; after rollback {p['after_rollback']}"
        )
    if len(engines) == 2:
        at10, top1 = overlap(results[engines[0]][0]["tops"], results[engines[1]][0]["tops"])
        print(
            f"result agreement over {len(plan.queries)} queries: overlap@10 {at10:.0%}, "
            f"same top-1 {top1:.0%}"
        )
    for line in tokenizer_notes(engines):
        print(line)
    if "tantivy" in engines:
        print(f"tantivy {importlib.metadata.version('tantivy')}; ", end="")
    print(
        f"SQLite {sqlite3.sqlite_version}; fts5 synchronous={args.fts5_synchronous}; "
        f"tantivy writer threads={args.tantivy_threads or 'auto'}"
    )


if __name__ == "__main__":
    main()
