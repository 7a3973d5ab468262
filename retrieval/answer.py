"""Answering: local answers from fused chunk search, global answers by map-reduce over community reports.

The offline versions are extractive: every sentence of an answer is copied from a chunk or a report finding,
and cites where it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from extraction.offline import split_sentences
from retrieval.bm25 import BM25Index
from retrieval.index import ChunkIndex, Hit
from retrieval.router import RouteDecision
from retrieval.tokenize import Tokenizer
from core.records import Report


@dataclass(frozen=True, slots=True)
class Citation:
    chunk_id: str
    source: str


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    route: RouteDecision
    mode: str
    text: str
    citations: tuple[Citation, ...]
    report_ids: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"question": self.question, "route": self.route.to_dict(), "mode": self.mode, "answer": self.text,
                "citations": [{"chunk_id": c.chunk_id, "source": c.source} for c in self.citations],
                "reports": list(self.report_ids)}


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def local_answer(question: str, route: RouteDecision, index: ChunkIndex, top_k: int, n_sentences: int,
                 metadata_filter: dict | None = None) -> Answer:
    """The sentences of the top fused chunks that share the most terms with the question, each cited."""
    hits: list[Hit] = index.search(question, top_k, metadata_filter=metadata_filter)
    if not hits:
        return Answer(question, route, "offline", "No indexed chunk matches this question.", ())
    q_terms = set(index.tokenizer(question))
    scored: list[tuple[float, int, str, Hit]] = []
    for rank, hit in enumerate(hits):
        for s, e in split_sentences(hit.text):
            sent = _clean(hit.text[s:e])
            if len(sent) < 12:
                continue
            overlap = len(q_terms & set(index.tokenizer(sent)))
            if overlap:
                # Term overlap first, then the chunk's fused rank.
                scored.append((overlap + hit.rrf_score * 10, -rank, sent, hit))
    scored.sort(key=lambda t: (-t[0], -t[1]))
    chosen: list[tuple[str, Hit]] = []
    for _, _, sent, hit in scored:
        if sent not in (c[0] for c in chosen):
            chosen.append((sent, hit))
        if len(chosen) >= n_sentences:
            break
    if not chosen:
        chosen = [(_clean(hits[0].text)[:400], hits[0])]
    lines = [f"{sent} [{hit.chunk_id}]" for sent, hit in chosen]
    cites: dict[str, Citation] = {}
    for _, hit in chosen:
        cites.setdefault(hit.chunk_id, Citation(hit.chunk_id, hit.source))
    return Answer(question, route, "offline", "\n".join(lines), tuple(cites.values()))


@dataclass(frozen=True, slots=True)
class Point:
    report_id: str
    title: str
    text: str
    chunk_ids: tuple[str, ...]
    score: float


def map_reports(question: str, reports: Sequence[Report], tokenizer: Tokenizer, limit: int) -> list[Point]:
    """Map step: rank reports for the question (BM25 over report text, then importance) and score their points."""
    if not reports:
        return []
    docs = [tokenizer(" ".join([r.title, r.summary] + [f.text for f in r.findings])) for r in reports]
    bm25 = BM25Index()
    bm25.add(docs)
    bm25.commit()
    q = tokenizer(question)
    rel = bm25.get_scores(q)
    top_rel = float(rel.max()) if rel.size and rel.max() > 0 else 1.0
    ranked = sorted(range(len(reports)), key=lambda i: (-(rel[i] / top_rel + reports[i].rating / 10), reports[i].community_id))
    points: list[Point] = []
    q_terms = set(q)
    for i in ranked[:limit]:
        r = reports[i]
        base = rel[i] / top_rel + r.rating / 10
        for j, f in enumerate(r.findings):
            overlap = len(q_terms & set(tokenizer(f.text)))
            points.append(Point(r.community_id, r.title, f.text, f.chunk_ids, base + 0.5 * overlap - 0.05 * j))
    return points


def reduce_points(question: str, route: RouteDecision, points: Sequence[Point], index: ChunkIndex,
                  max_points: int, token_budget: int = 600) -> Answer:
    """Reduce step: the best points across reports, one line each, within a token budget, citing chunks."""
    if not points:
        return Answer(question, route, "offline", "No community reports are indexed yet.", ())
    chosen: list[Point] = []
    used = 0
    per_report: dict[str, int] = {}
    for p in sorted(points, key=lambda p: (-p.score, p.report_id)):
        if per_report.get(p.report_id, 0) >= 2:
            continue
        cost = len(p.text.split()) + 8
        if used + cost > token_budget or len(chosen) >= max_points:
            break
        chosen.append(p)
        used += cost
        per_report[p.report_id] = per_report.get(p.report_id, 0) + 1
    lines = [f"Across the corpus, {len({p.report_id for p in chosen})} communities carry the answer:"]
    cites: dict[str, Citation] = {}
    for p in chosen:
        lines.append(f"- {p.title}: {_clean(p.text)} [{', '.join(p.chunk_ids[:3])}] (report {p.report_id})")
        for cid in p.chunk_ids[:3]:
            row = index.by_id.get(cid)
            source = index.rows[row].source if row is not None else ""
            cites.setdefault(cid, Citation(cid, source))
    return Answer(question, route, "offline", "\n".join(lines), tuple(cites.values()),
                  tuple(dict.fromkeys(p.report_id for p in chosen)))


def pick_level(reports: Sequence[Report], level: int | None) -> list[Report]:
    if not reports:
        return []
    levels = sorted({r.level for r in reports})
    chosen = level if level is not None and level in levels else levels[0]
    return [r for r in reports if r.level == chosen]


def global_answer(question: str, route: RouteDecision, reports: Sequence[Report], index: ChunkIndex,
                  level: int | None, max_reports: int, max_points: int) -> Answer:
    selected = pick_level(reports, level)
    return reduce_points(question, route, map_reports(question, selected, index.tokenizer, max_reports), index, max_points)
