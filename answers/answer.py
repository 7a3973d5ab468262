"""Answers: the records every answering path returns, and local answers read from the ranked passages.

An offline answer is extractive and quotes whole units exactly: every point is ``chunk.text[start:end]`` of the
chunk it cites (sentences, whole Markdown lists and tables, whole code blocks; :mod:`answers.units`), never
re-joined or cleaned. The units are chosen by the reader (:mod:`answers.reader`), which also decides whether
they answer the question at all: below its calibrated threshold the answer declines and says what came closest
and where, instead of quoting what merely shares words with the question.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from answers.messages import say
from answers.reader import Reader, Reading
from answers.units import Unit
from core.records import document_of
from core.text.shorten import shorten
from retrieval.hits import Hit
from retrieval.index import ChunkIndex
from routing.router import RouteDecision


@dataclass(frozen=True, slots=True)
class Citation:
    chunk_id: str
    source: str


@dataclass(frozen=True, slots=True)
class Quote:
    """One point of an answer: a unit quoted from a chunk (``start``/``end`` are -1 for a written point)."""

    chunk_id: str
    start: int
    end: int
    text: str
    title: str = ""  # the report the point came from (global answers)

    def to_dict(self) -> dict[str, object]:
        return {"chunk_id": self.chunk_id, "start": self.start, "end": self.end, "text": self.text,
                "title": self.title}


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    route: RouteDecision
    mode: str
    text: str
    citations: tuple[Citation, ...]
    report_ids: tuple[str, ...] = ()
    points: tuple[Quote, ...] = field(default=())
    covered: bool = True  # False: declined (the corpus does not seem to answer it)
    index_generation: int | None = None  # the published index generation that answered (set by the engine)
    dropped_citations: int = 0  # ids an LLM-written answer cited that were not among its passages (removed)
    confidence: float | None = None  # the reader's calibrated P(the corpus answers the question)

    def to_dict(self) -> dict[str, object]:
        return {"question": self.question, "route": self.route.to_dict(), "mode": self.mode, "answer": self.text,
                "citations": [{"chunk_id": c.chunk_id, "source": c.source} for c in self.citations],
                "reports": list(self.report_ids), "points": [p.to_dict() for p in self.points],
                "covered": self.covered, "confidence": self.confidence, "index_generation": self.index_generation,
                "dropped_citations": self.dropped_citations}


def source_of(index: ChunkIndex, chunk_id: str) -> str:
    row = index.by_id.get(chunk_id)
    return index.rows[row].source if row is not None else ""


def citations_of(index: ChunkIndex, chunk_ids: Sequence[str]) -> tuple[Citation, ...]:
    return tuple(Citation(cid, source_of(index, cid)) for cid in dict.fromkeys(chunk_ids))


def query_vector(index: ChunkIndex, question: str, given: np.ndarray | None) -> np.ndarray | None:
    """The question's vector in the index's own space, once, when the index has a semantic embedder."""
    if given is not None:
        return np.asarray(given, np.float32)
    if index.embedder is None or index.vectors is None or not getattr(index.embedder, "semantic", False):
        return None
    # As the dense search embeds it: models trained with query/passage prefixes (E5) embed queries their own way.
    embed = getattr(index.embedder, "embed_queries", index.embedder.embed)
    return embed([question])[0]


_READER: dict[str, Reader] = {}


def default_reader() -> Reader:
    """The process's reader with the shipped weights (built on first use)."""
    if "reader" not in _READER:
        _READER["reader"] = Reader()
    return _READER["reader"]


def shown(unit: Unit) -> str:
    """A unit as a line of the answer, with its citation: a list, table or code block keeps its own lines."""
    if unit.kind == "sentence":
        return f"{unit.text} [{unit.chunk_id}]"
    return f"{unit.text.rstrip()}\n[{unit.chunk_id}]"


SECTION = "\u00a7 "  # opens the line that names the section of the points below it
LABEL_MAX = 120  # characters of a heading shown in a section's line


def quoted_text(units: Sequence[Unit]) -> str:
    """The quoted units, each section's under a "§ heading" line of its own (blank lines around it): a sentence
    such as "If this variable is set, ..." names its subject only in the heading above it. A new section starts
    where the document or the heading changes. A unit whose chunk holds no heading above it (or only its
    document's title line, which the citation names) continues the section before when it is of the same
    document (a later chunk of the section, most often); of another document, after a labelled unit, it is
    labelled with its document, so that it is not read as part of the section before. An answer with no heading
    reads as before. The label is the document's own text; the answer's points stay the units alone."""
    parts: list[str] = []
    previous: tuple[str, str] | None = None
    labelled = False
    for u in units:
        document = document_of(u.chunk_id)
        heading = "" if u.title else shorten(u.heading, LABEL_MAX)
        if not heading and previous is not None and previous[0] == document:
            heading = previous[1]  # no heading in its chunk: the same document's section goes on
        if (document, heading) != previous and (heading or labelled):
            parts.append(("\n" if parts else "") + f"{SECTION}{heading or document}\n")
            labelled = True
        previous = (document, heading)
        parts.append(shown(u))
    return "\n".join(parts)


def declined(question: str, route: RouteDecision, index: ChunkIndex, reading: Reading) -> Answer:
    """The answer to a question the passages do not seem to answer: what came closest and where."""
    text = say("declined", question, p=reading.probability, t=reading.threshold)
    cited: list[str] = []
    if reading.closest is not None:
        close = reading.closest
        where = source_of(index, close.chunk_id) or close.chunk_id
        excerpt = " ".join(close.text.split())
        excerpt = excerpt if len(excerpt) <= 300 else excerpt[:297].rsplit(" ", 1)[0] + " ..."
        text += "\n" + say("closest", question, where=where, excerpt=excerpt, chunk=close.chunk_id)
        cited.append(close.chunk_id)
    return Answer(question, route, "offline", text, citations_of(index, cited), covered=False,
                  confidence=round(reading.probability, 4))


def read_hits(question: str, index: ChunkIndex, top_k: int, n_units: int, metadata_filter: dict | None = None, *,
              lexicon: Any = None, reader: Reader | None = None) -> tuple[list[Hit], Reading | None]:
    """The question's ranked passages and what the reader makes of them (None when nothing matches)."""
    outcome = index.search_detailed(question, top_k, metadata_filter=metadata_filter)
    if not outcome.hits:
        return outcome.hits, None
    return outcome.hits, (reader or default_reader()).read(question, outcome.hits, index, n_units, lexicon,
                                                            hops=outcome.hops, metadata_filter=metadata_filter)


def local_answer(question: str, route: RouteDecision, index: ChunkIndex, top_k: int, n_sentences: int,
                 metadata_filter: dict | None = None, *, lexicon: Any = None, reader: Reader | None = None,
                 query_vector: np.ndarray | None = None) -> Answer:
    """The units of the top fused passages that answer the question, quoted exactly, each cited with its chunk
    id; or a decline that names the closest passage. (``query_vector`` is accepted for the callers that have
    one; the reader reads every question with its own multilingual vector.)"""
    hits, reading = read_hits(question, index, top_k, n_sentences, metadata_filter, lexicon=lexicon, reader=reader)
    if reading is None:
        return Answer(question, route, "offline", say("no_match", question), (), covered=False)
    return answer_from(question, route, index, reading)


def answer_from(question: str, route: RouteDecision, index: ChunkIndex, reading: Reading) -> Answer:
    """The offline answer a reading gives: its units quoted, or a decline."""
    if not reading.answered or not reading.units:
        return declined(question, route, index, reading)
    quotes = tuple(Quote(u.chunk_id, u.start, u.end, u.text) for u in reading.units)
    return Answer(question, route, "offline", quoted_text(reading.units),
                  citations_of(index, [q.chunk_id for q in quotes]), points=quotes,
                  confidence=round(reading.probability, 4))
