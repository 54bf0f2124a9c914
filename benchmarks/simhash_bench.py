"""Simhash per page, near-duplicate lookup among 1 million stored fingerprints, and recall.

Run: python benchmarks/simhash_bench.py [--stored 1000000] [--pages 300] [--words 800]

Pages are synthetic texts of ``--words`` words from a 3,000-word vocabulary (a typical article's
extracted text is 500-1,500 words). Lookups use ``NearDuplicateIndex`` (k = 3, four 16-bit block
tables, Manku et al. 2007) and are compared with a linear scan over the same fingerprints.
The recall table shows the share of one-word edits found within k = 3 by shingle size.
"""

from __future__ import annotations

import argparse
import random
import resource
import time

from crawlspace.dedup.near_index import NearDuplicateIndex
from crawlspace.dedup.simhash import NATIVE, hamming, simhash64


def article(rng: random.Random, vocab: list[str], words: int) -> list[str]:
    return [rng.choice(vocab) for _ in range(words)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stored", type=int, default=1_000_000)
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--words", type=int, default=800)
    args = parser.parse_args()
    rng = random.Random(3)
    vocab = [f"w{rng.randrange(10**6)}" for _ in range(3000)]
    texts = [" ".join(article(rng, vocab, args.words)) for _ in range(args.pages)]

    start = time.process_time()
    hashes = [simhash64(t) for t in texts]
    per_page = (time.process_time() - start) / len(texts)

    index = NearDuplicateIndex(3)
    stored = [rng.getrandbits(64) for _ in range(args.stored)]
    start = time.process_time()
    for i, h in enumerate(stored):
        index.add(h, i)
    build = time.process_time() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # Queries: half near a stored fingerprint (1-3 bits flipped), half fresh pages.
    queries = []
    for i in range(2000):
        h = rng.choice(stored)
        for b in rng.sample(range(64), rng.randint(1, 3)):
            h ^= 1 << b
        queries.append(h if i % 2 else hashes[i % len(hashes)])
    start = time.process_time()
    found = sum(index.find(q) is not None for q in queries)
    lookup = (time.process_time() - start) / len(queries)
    start = time.process_time()
    for q in queries[:5]:
        min(hamming(q, h) for h in stored)
    scan = (time.process_time() - start) / 5

    print(f"{args.pages} pages of {args.words} words; {args.stored:,} stored fingerprints\n")
    print("| operation | per page |")
    print("|---|---:|")
    how = "compiled helper" if NATIVE else "Python, no compiled helper"
    print(f"| simhash64 (word bigrams, seeded XXH64, {how}) | {per_page * 1e3:.2f} ms |")
    print(f"| near-duplicate lookup, block index k=3 | {lookup * 1e6:.1f} µs |")
    print(f"| near-duplicate lookup, linear scan | {scan * 1e3:.0f} ms |")
    print(f"| index build, per fingerprint | {build / args.stored * 1e6:.2f} µs |")
    print(f"\nfound {found} of {len(queries) // 2} planted near-duplicates; peak RSS {rss:.0f} MiB")

    print("\n| shingle | one-word edit within k=3 (recall) | mean distance | unrelated min |")
    print("|---:|---:|---:|---:|")
    for shingle in (1, 2, 3):
        dists, unrelated = [], []
        for _ in range(100):
            words = article(rng, vocab, args.words)
            edited = list(words)
            edited[rng.randrange(len(words))] = "edited"
            a = simhash64(" ".join(words), shingle)
            dists.append(hamming(a, simhash64(" ".join(edited), shingle)))
            other = simhash64(" ".join(article(rng, vocab, args.words)), shingle)
            unrelated.append(hamming(a, other))
        recall = sum(d <= 3 for d in dists) / len(dists)
        print(f"| {shingle} | {recall:.0%} | {sum(dists) / len(dists):.2f} | {min(unrelated)} |")


if __name__ == "__main__":
    main()
