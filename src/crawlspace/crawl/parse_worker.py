"""A parse worker process: ``python -m crawlspace.crawl.parse_worker FD``, started by
crawl/parse_pool.py with its end of a socket pair as file descriptor FD.

A plain interpreter running this module and what it imports (parse_jobs.py: the processors,
link admission, the WARC record builder), not a multiprocessing child: no resource-tracker
process beside the crawl, and no re-import of the script that started the crawl, so a script
without an ``if __name__ == "__main__":`` guard starts its workers like any other.
"""

from __future__ import annotations

import os
import signal
import socket
import sys

from crawlspace.crawl.parse_jobs import serve_jobs

# How much lower than the crawl a worker runs. The crawl loop is the crawl's one serial stage:
# every page waits for it several times (the fetch, the answer, the commit, the next lease),
# while a worker's job can wait its turn. When the two want one core, the kernel now gives it
# to the loop first (CFS weights: 1024 against 335). Paired on postgresql-doc-15, 5 of 6 runs
# were faster, ~1.07x pages/s at ~0.94x the CPU; python3.11-doc, CPU-bound, unchanged
# (benchmarks/README.md, "Twelfth session").
NICER_THAN_THE_CRAWL = 5


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m crawlspace.crawl.parse_worker FD", file=sys.stderr)
        return 2
    # Ctrl-C at a terminal reaches the whole process group. When its workers end is the
    # crawl's to decide (it finishes in-flight pages, then closes their sockets), so the
    # interrupt is the crawl's alone.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(NICER_THAN_THE_CRAWL)
    serve_jobs(socket.socket(fileno=int(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
