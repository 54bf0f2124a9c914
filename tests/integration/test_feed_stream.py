"""A shared frontier's feed streams (store/redis/feed_stream.py) read by `crawlspace index
--frontier`: an indexer killed with SIGKILL mid-way is given what it had not acknowledged again
when it restarts, and ends with every document once and nothing pending."""

from __future__ import annotations

import base64
import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from crawlspace.feed_codec import pack
from crawlspace.feed_format import document_id
from crawlspace.ops.search_index import SearchIndex
from crawlspace.store.redis.feed_stream import GROUP
from crawlspace.store.redis.frontier import connect
from tests.redis_servers import RedisDeployment
from tests.workers import cli, kill_9_once

BUCKETS = 16


def committed_documents(index: Path) -> int:
    try:
        db = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
        try:
            return int(db.execute("SELECT COUNT(*) FROM docs").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_a_stream_indexer_killed_mid_way_loses_and_doubles_nothing(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    shared = ["--frontier", cluster.url, "--namespace", "fs"]
    seed = [*cli("seed", *shared, "--buckets", str(BUCKETS), "-q", "http://127.0.0.1:9/")]
    subprocess.run(seed, check=True, timeout=60, stdout=subprocess.DEVNULL)
    client = connect(cluster.url)
    total = 2000
    pipe = client.pipeline(transaction=False)
    for n in range(total):
        url = f"http://h/{n}"
        meta = {"schema": 1, "kind": "upsert", "id": document_id(url), "version": n + 1}
        meta["url"] = url
        document = base64.b64encode(pack({"title": f"t{n}", "text": f"unique{n} words"}))
        fields = {"id": meta["id"], "kind": "upsert", "meta": json.dumps(meta)}
        pipe.xadd(f"{{fs:b{n % BUCKETS}}}:feed", {**fields, "document": document.decode()})
    pipe.execute()
    index = tmp_path / "index.db"
    args = [*cli("index", *shared, "--into", str(index), "--batch", "40", "-q")]
    kill_9_once(args, lambda: committed_documents(index) >= 300)
    assert 300 <= committed_documents(index) < total
    subprocess.run(args, check=True, timeout=120)
    with SearchIndex(index) as searcher:
        assert searcher.documents() == total
        (pages,) = searcher.db.execute("SELECT COUNT(*) FROM pages").fetchone()
        assert pages == total
        for n in (0, 999, total - 1):
            assert [h.url for h in searcher.search(f"unique{n}")] == [f"http://h/{n}"]
    pending = sum(
        int(client.xpending(f"{{fs:b{b}}}:feed", GROUP)["pending"]) for b in range(BUCKETS)
    )
    assert pending == 0
    client.close()
