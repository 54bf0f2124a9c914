"""What a parse worker process runs (crawl/stages.py spawns them): the page's processor, then the
first half of link admission (discovery/links.py prenormalize) and, where the crawl's Discovery
was installed in the worker, the rest of it, so the per-URL policy, scope and trap checks run
there and not in the crawl loop.

Parsing (parse/) returns a page's raw links; deciding which of them the crawl takes is
discovery's, and this module is where the two meet. A spawned worker imports this module, the
processors and the discovery policy only, never the crawler (~10 MB less per worker): keep its
imports that way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
import signal
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from crawlspace.archive.records import EarlierCapture, Exchange, ExchangeRecords, RecordBuilder
from crawlspace.discovery.links import Admission, Discovery, PreLinks, prenormalize
from crawlspace.errors import ParseBudgetError, ParseMemoryError
from crawlspace.feed_codec import pack
from crawlspace.heap import TRIM_AFTER_BYTES, release_free_heap
from crawlspace.parse.extract import Extractor, Page, run_extractor
from crawlspace.parse.processors import ContentProcessor, ProcessedContent
from crawlspace.pickling import by_fields

__all__ = ["FRAME", "ParseLimits", "ParsedPage", "parse_and_admit", "serve_jobs"]

# Each job and each answer travels as its pickle's length, then the pickle.
FRAME = struct.Struct("!Q")


@by_fields
@dataclass(frozen=True, slots=True)
class ParsedPage:
    """A processed page, its links normalized (``content.links`` then empty: they travel once)
    and, when they were admitted where the page was parsed, their admission (``prelinks`` then
    None: only the admission travels back)."""

    content: ProcessedContent
    prelinks: PreLinks | None
    admission: Admission | None
    records: ExchangeRecords | None = None  # the exchange's WARC records, when asked for
    # What the page embeds, normalized, when it is admitted here (page_requisites).
    requisites: PreLinks | None = None

    def admit(self, discovery: Discovery, *, parent_depth: int, header_nofollow: bool) -> Admission:
        """The page's admission: the one made where it was parsed, or made now."""
        if self.admission is not None:
            return self.admission
        assert self.prelinks is not None
        return _admit(
            discovery,
            self.prelinks,
            self.requisites,
            parent_depth,
            self.content.nofollow or header_nofollow,
        )


def _admit(
    discovery: Discovery,
    prelinks: PreLinks,
    requisites: PreLinks | None,
    parent_depth: int,
    nofollow: bool,
) -> Admission:
    admission = discovery.admit_prenormalized(
        prelinks, parent_depth=parent_depth, page_nofollow=nofollow
    )
    if requisites is not None:
        discovery.admit_requisites(requisites, parent_depth=parent_depth, into=admission)
    return admission


# The crawl's link admission, installed in each parse worker process when it starts.
_worker_discovery: Discovery | None = None


def parse_and_admit(
    processor: ContentProcessor,
    body: bytes,
    *,
    url: str,
    content_type: str | None,
    product_token: str,
    parent_depth: int,
    header_nofollow: bool,
    admit: bool = True,
    archive: tuple[RecordBuilder, Exchange, EarlierCapture | None] | None = None,
    document_chars: int | None = None,
    extractor: Extractor | None = None,
) -> ParsedPage:
    """Run ``processor`` and normalize its links; where a Discovery is installed (a parse
    worker) and ``admit`` is set, admit them as the crawl loop would. Given an ``archive``,
    build the exchange's WARC records too, where the body already is (a revisit of the capture
    named, if its payload is that one's); given ``document_chars``, the page's feed document
    with that much of its text; given an ``extractor``, the user's items."""
    records = archive[0].capture(archive[1], archive[2]) if archive is not None else None
    content = processor(body, url=url, content_type=content_type, product_token=product_token)
    if extractor is not None:  # the user's items, from the page as fetched (parse/extract.py)
        page = Page(url, body, content_type, content.title, content.text)
        items, error = run_extractor(extractor, page)
        content = dataclasses.replace(content, items=items, extract_error=error)
    if len(body) >= TRIM_AFTER_BYTES:
        release_free_heap()  # the big page's DOM, freed, would stay with this worker (heap.py)
    wants_document = document_chars is not None and content.text is not None
    anchors = content.anchors if wants_document else None
    prelinks = prenormalize(content.links, content.base_url, anchors)
    requisites = None
    if content.requisites:
        requisites = prenormalize([(ref, False) for ref in content.requisites], content.base_url)
    document = None
    if wants_document:
        assert document_chars is not None
        document = page_document(content, prelinks, document_chars)
        prelinks = prelinks.without_anchors()
    # What the loop needs travels back; the text only where its hashes were not made here.
    text = content.text if content.text_sha256 is None else None
    content = dataclasses.replace(
        content, links=[], anchors=None, text=text, document=document, requisites=[]
    )
    if _worker_discovery is None or not admit:
        return ParsedPage(content, prelinks, None, records, requisites)
    nofollow = content.nofollow or header_nofollow
    admission = _admit(_worker_discovery, prelinks, requisites, parent_depth, nofollow)
    return ParsedPage(content, None, admission, records)


def page_document(content: ProcessedContent, prelinks: PreLinks, text_chars: int) -> bytes:
    """The feed's page part (docs/feed.md), packed (feed_codec.py): title, declared language,
    the text up to ``text_chars`` characters, each distinct outlink with its anchor texts."""
    text = content.text or ""
    anchors = prelinks.anchors or [[] for _ in prelinks.urls]
    return pack(
        {
            "title": content.title,
            "lang": content.lang,
            "text": text[:text_chars],
            "text_truncated": len(text) > text_chars,
            "outlinks": [
                {"url": link_url, "anchors": texts, "nofollow": nofollow}
                for (link_url, _, nofollow), texts in zip(prelinks.urls, anchors, strict=True)
            ],
        }
    )


class _CpuBudget:
    """Each job's CPU-time budget (``parse_cpu_seconds``; 0: none), by the process's profiling
    timer (ITIMER_PROF counts the user and system time of this one-threaded process): past it
    the job raises ParseBudgetError at its next Python step. A C call (lexbor's parse of one
    document) is not cut mid-way, but every walk over the tree is Python, so a page that would
    run for minutes stops within a step of its budget."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.armed = False
        if seconds > 0:
            signal.signal(signal.SIGPROF, self._spent)

    def _spent(self, signum: int, frame: object) -> None:
        if self.armed:  # not once the job has ended (the signal may arrive just after)
            self.armed = False
            raise ParseBudgetError(f"parse used more than {self.seconds:g} s of CPU")

    def run(self, job: Callable[[], object]) -> object:
        if self.seconds <= 0:
            return job()
        self.armed = True
        signal.setitimer(signal.ITIMER_PROF, self.seconds)
        try:
            return job()
        finally:
            self.armed = False
            signal.setitimer(signal.ITIMER_PROF, 0)


@dataclass(frozen=True, slots=True)
class ParseLimits:
    """What one page's parse may use in a worker: CPU seconds (``parse_cpu_seconds``) and
    megabytes of memory beyond the worker's own (``parse_memory_mb``); 0: no limit."""

    cpu_seconds: float = 0.0
    memory_mb: int = 0


def _limit_memory(megabytes: int) -> None:
    """Cap this process's address space at its size now plus ``megabytes`` (RLIMIT_AS): past it
    an allocation fails (MemoryError), where it would otherwise grow until the kernel's
    out-of-memory killer picks a process, maybe the crawl's."""
    if megabytes <= 0:
        return
    import resource  # (POSIX only: parse workers run where the crawl does)

    size = 0
    with contextlib.suppress(OSError, ValueError), open("/proc/self/statm") as statm:
        size = int(statm.read().split()[0]) * resource.getpagesize()
    if size:
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = size + megabytes * 1024 * 1024
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def serve_jobs(channel: socket.socket) -> None:
    """A parse worker's life (crawl/parse_worker.py runs it): the first frame is the crawl's link
    admission (a Discovery, or None to admit in the crawl loop), installed, and each job's
    limits; once they are, an empty frame says the worker is ready (parse_pool.py sends a
    starting worker no job while another is ready). Then each job the crawl sends is run, in
    order, and its answer sent back with the CPU and wall seconds it took (the pool grows by
    them, parse_demand.py), until the crawl closes its end. The crawl killed with SIGKILL closes it
    too (the kernel does), so a worker never outlives its crawl by more than the job it is
    running. A job that ran out of memory is answered ParseMemoryError, and the worker ends (its
    heap may be left in pieces): the crawl starts another (parse_pool.py)."""
    global _worker_discovery  # one per worker process, set once at its start
    with channel:
        channel.setblocking(True)
        _worker_discovery, limits = _receive(channel)
        budget = _CpuBudget(limits.cpu_seconds)
        _limit_memory(limits.memory_mb)
        channel.sendall(FRAME.pack(0))
        while (job := _receive(channel)) is not None:
            began, cpu_began = time.monotonic(), time.process_time()
            answer, retire = _answer(budget, job, limits)
            cost = (time.process_time() - cpu_began, time.monotonic() - began)
            try:
                data = pickle.dumps((*answer, *cost), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # an answer or exception that cannot travel
                data = pickle.dumps((False, RuntimeError(f"parse job answer: {exc!r}"), *cost))
            channel.sendall(FRAME.pack(len(data)) + data)
            if retire:
                return


def _answer(
    budget: _CpuBudget, job: Callable[[], object], limits: ParseLimits
) -> tuple[tuple[bool, object], bool]:
    """The job's answer, (True, its value) or (False, what it raised), and whether the worker
    ends after sending it (it ran out of memory)."""
    try:
        return (True, budget.run(job)), False
    except MemoryError:
        message = f"parse needed more than {limits.memory_mb} MB of memory"
        return (False, ParseMemoryError(message)), True
    except Exception as exc:  # the crawl's to handle, as a call in the loop would raise
        return (False, exc), False


def _receive(channel: socket.socket) -> Any:
    """The next job, or None once the crawl has closed its end."""
    head = _read_exactly(channel, FRAME.size)
    if head is None:
        return None
    body = _read_exactly(channel, FRAME.unpack(head)[0])
    return None if body is None else pickle.loads(body)


def _read_exactly(channel: socket.socket, size: int) -> bytearray | None:
    buffer = bytearray(size)
    view = memoryview(buffer)
    while view:
        got = channel.recv_into(view)
        if got == 0:
            return None
        view = view[got:]
    return buffer
