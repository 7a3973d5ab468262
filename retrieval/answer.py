"""Answering: local answers from fused chunk search, global answers by map-reduce over community reports.

The offline versions are extractive and quote whole sentences exactly: every point of an answer is
``chunk.text[start:end]`` of the chunk it cites (see :mod:`communities.sentences`), never re-joined or cleaned.

Global (map): every report of the chosen level offers its quoted findings (central to its community) and the
other whole sentences of the chunks it was written from. Each sentence is scored for the question: BM25 over
the candidate sentences, the cosine of the question with the vector of the sentence's chunk (the chunk's
vector stands for the sentences it contains, so the question is embedded once and no sentence is), and a small
prior for the report's own findings. Reports are ranked by their best sentences. Reduce: maximal marginal
relevance picks the points, penalizing sentences like ones already chosen and a report's repeated points, so
the answer spans communities; points are grouped under their report titles. When no content word of the
question occurs in the corpus and no chunk is semantically close, the answer says the corpus does not seem to
cover the question instead of listing unrelated sentences.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from communities.sentences import Sentence, chunk_is_first, mmr, normalized, sentences_of
from core.records import Report
from retrieval.bm25 import BM25Index
from retrieval.index import ChunkIndex, Hit
from retrieval.router import RouteDecision
from retrieval.tokenize import Tokenizer

# Words that frame a question about a corpus as a whole rather than name its content ("What are the main themes
# of the story?"): they are not expected to occur in the text, so their absence says nothing about coverage.
_FRAMING = frozenset("""
theme themes main story stories book books novel novella corpus document documents text texts narrative narrator
character characters summarize summarise summary overall across describe explain role roles key major central
primary common recur recurring recurrent differ different difference differences change changes changed
changing relationship relationships conflict conflicts tension tensions motive motives motivation arc develop
development significance significant important importance lesson lessons message messages idea ideas topic
topics portray portrayed portrayal depict depicted author reader readers whole throughout general kind kinds
type types example examples aspect aspects way ways tell tells show shows mean meaning happen happens
happened problem problems issue issues group groups part parts thing things overview list
notes note file files record records log logs page pages article articles paper papers transcript transcripts
email emails mail mails entry entries collection collections archive archives dataset datasets data doc docs
material materials source sources content contents report reports say says said mention mentions mentioned
discuss discusses discussed talk talks cover covers covered collectively
give compare comparing outline provide identify find walk most biggest largest greatest often frequent
frequently risk risks challenge challenges concern concerns trend trends pattern patterns insight insights
takeaway takeaways finding findings highlight highlights point points
""".split())  # the last lines: the collection itself, what it does ("what do these notes say") and what a
# question about the whole asks for ("the biggest risks", "give me an overview")
SEMANTIC_COVER = 0.35  # a chunk at least this close to the question (cosine) counts as covering it


@dataclass(frozen=True, slots=True)
class Citation:
    chunk_id: str
    source: str


@dataclass(frozen=True, slots=True)
class Quote:
    """One point of an answer: a sentence quoted from a chunk (``start``/``end`` are -1 for a written point)."""

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
    covered: bool = True
    index_generation: int | None = None  # the published index generation that answered (set by the engine)

    def to_dict(self) -> dict[str, object]:
        return {"question": self.question, "route": self.route.to_dict(), "mode": self.mode, "answer": self.text,
                "citations": [{"chunk_id": c.chunk_id, "source": c.source} for c in self.citations],
                "reports": list(self.report_ids), "points": [p.to_dict() for p in self.points],
                "covered": self.covered, "index_generation": self.index_generation}


def _source(index: ChunkIndex, chunk_id: str) -> str:
    row = index.by_id.get(chunk_id)
    return index.rows[row].source if row is not None else ""


def _citations(index: ChunkIndex, chunk_ids: Sequence[str]) -> tuple[Citation, ...]:
    return tuple(Citation(cid, _source(index, cid)) for cid in dict.fromkeys(chunk_ids))


def _query_vector(index: ChunkIndex, question: str, given: np.ndarray | None) -> np.ndarray | None:
    """The question's vector, once, when the index has a semantic embedder and chunk vectors."""
    if given is not None:
        return np.asarray(given, np.float32)
    if index.embedder is None or index.vectors is None or not getattr(index.embedder, "semantic", False):
        return None
    # As the dense search embeds it: models trained with query/passage prefixes (E5) embed queries their own way.
    embed = getattr(index.embedder, "embed_queries", index.embedder.embed)
    return embed([question])[0]


def _chunk_cosines(index: ChunkIndex, chunk_ids: Sequence[str], qv: np.ndarray | None) -> dict[str, float]:
    if qv is None or index.vectors is None:
        return {}
    rows = [index.by_id[c] for c in dict.fromkeys(chunk_ids) if c in index.by_id and index.by_id[c] < len(index.vectors.matrix)]
    if not rows:
        return {}
    sims = index.vectors.matrix[rows] @ qv.astype(np.float32)
    return {index.rows[r].chunk_id: float(s) for r, s in zip(rows, sims)}


def _lexical(question: str, texts: Sequence[str], tokenizer: Tokenizer) -> np.ndarray:
    """BM25 of each text for the question, scaled to [0, 1] (all zeros when no term matches)."""
    if not texts:
        return np.zeros(0)
    bm25 = BM25Index()
    bm25.add(tokenizer(t) for t in texts)
    bm25.commit()
    scores = np.asarray(bm25.get_scores(tokenizer(question)), np.float64)
    top = float(scores.max()) if scores.size else 0.0
    return scores / top if top > 0 else np.zeros(len(texts))


def _similarity(texts: Sequence[str], tokenizer: Tokenizer) -> np.ndarray:
    """Cosine similarity of the texts' term-count vectors (for MMR's redundancy penalty)."""
    vocab: dict[str, int] = {}
    rows = [tokenizer(t) for t in texts]
    for toks in rows:
        for t in toks:
            vocab.setdefault(t, len(vocab))
    m = np.zeros((len(texts), max(1, len(vocab))))
    for i, toks in enumerate(rows):
        for t in toks:
            m[i, vocab[t]] += 1.0
    m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    return m @ m.T


@dataclass(frozen=True, slots=True)
class Coverage:
    """Whether the corpus seems to hold what the question asks about."""

    covered: bool
    missing: tuple[str, ...]  # content words of the question found nowhere in the corpus
    best_cosine: float | None


def coverage(question: str, index: ChunkIndex, query_vector: Callable[[], np.ndarray | None]) -> Coverage:
    """Content words of the question (framing words like "themes" or "summarize" left out) that occur in no
    chunk, and the best chunk cosine. Not covered: with a semantic embedder, no chunk within ``SEMANTIC_COVER``
    of the question and more than half its content words absent; without one, every content word absent.

    The question's vector (``query_vector()``, None without a semantic embedder) and the best cosine are needed
    only when some content word is absent: a question whose words all occur is covered either way, and is not
    embedded here."""
    content: dict[str, list[str]] = {}
    for word in re.findall(r"[\w][\w.'’-]*", question):
        if word.lower().rstrip(".'’-") in _FRAMING:  # "say." at the end of a sentence is "say"
            continue
        for term in index.tokenizer(word):
            content.setdefault(term, []).append(word)
    alive = index.bm25.alive
    missing_terms = [t for t in content if not index.bm25.top([t], 1, alive)]
    best = None
    if missing_terms and index.vectors is not None and len(index.vectors.matrix):
        qv = query_vector()
        top = index.vectors.exact_top(qv, 1, alive) if qv is not None else []
        best = top[0][1] if top else None
    missing = tuple(dict.fromkeys(content[t][0] for t in missing_terms))
    if best is None:
        covered = not content or len(missing_terms) < len(content)
    else:
        # With meaning to go by: declined when no chunk is close and most of its content words occur nowhere (an
        # answer that misses some says which).
        covered = best >= SEMANTIC_COVER or not content or len(missing_terms) <= 0.5 * len(content)
    return Coverage(covered, missing, best)


def not_covered(question: str, route: RouteDecision, cover: Coverage) -> Answer:
    """The answer to a question the corpus does not seem to cover, saying why."""
    closeness = f"; no passage is close in meaning (best cosine {cover.best_cosine:.2f})" if cover.best_cosine is not None else ""
    text = ("The corpus does not seem to cover this question: "
            f"{', '.join(repr(w) for w in cover.missing)} occur nowhere in the indexed text{closeness}.")
    return Answer(question, route, "offline", text, (), covered=False)


# -- local ------------------------------------------------------------------------------------------------------
def local_answer(question: str, route: RouteDecision, index: ChunkIndex, top_k: int, n_sentences: int,
                 metadata_filter: dict | None = None, *, query_vector: np.ndarray | None = None) -> Answer:
    """Whole sentences of the top fused chunks, quoted exactly, each cited with its chunk id: ranked by BM25
    over the sentences and their chunk's fused rank, chosen by MMR so that no two repeat each other."""
    cover = coverage(question, index, lambda: _query_vector(index, question, query_vector))
    if not cover.covered:  # an off-topic question gets this, not the least unrelated sentences
        return not_covered(question, route, cover)
    hits: list[Hit] = index.search(question, top_k, metadata_filter=metadata_filter)
    if not hits:
        return Answer(question, route, "offline", "No indexed chunk matches this question.", (), covered=False)
    cands: list[Sentence] = []
    rank_prior: list[float] = []
    seen: set[str] = set()
    for rank, hit in enumerate(hits):
        for sent in sentences_of(hit.chunk_id, hit.text, chunk_is_first(hit.chunk_id)):
            key = normalized(sent.text)
            if key not in seen:
                seen.add(key)
                cands.append(sent)
                rank_prior.append(1.0 / (1.0 + rank))
    if not cands:
        hit = hits[0]
        text = hit.text.strip()
        start = hit.text.find(text)
        quote = Quote(hit.chunk_id, start, start + len(text), text)
        return Answer(question, route, "offline", f"{text} [{hit.chunk_id}]", _citations(index, [hit.chunk_id]),
                      points=(quote,))
    lex = _lexical(question, [s.text for s in cands], index.tokenizer)
    scores = lex + 0.35 * np.asarray(rank_prior)
    chosen = mmr(scores, _similarity([s.text for s in cands], index.tokenizer), n_sentences, lam=0.75)
    # Keep only sentences that match the question when some do; otherwise the top chunk's best sentences.
    if lex.max() > 0:
        chosen = [i for i in chosen if lex[i] > 0] or chosen
    quotes = tuple(Quote(cands[i].chunk_id, cands[i].start, cands[i].end, cands[i].text) for i in chosen)
    lines = [f"{q.text} [{q.chunk_id}]" for q in quotes]
    return Answer(question, route, "offline", "\n".join(lines), _citations(index, [q.chunk_id for q in quotes]),
                  points=quotes)


# -- global -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Point:
    """A candidate point of a global answer: a report's sentence and its relevance to the question."""

    report_id: str
    title: str
    text: str
    chunk_ids: tuple[str, ...]
    score: float
    start: int = -1
    end: int = -1


def _report_chunks(report: Report) -> list[str]:
    """The chunks a report was written from: the ones its findings cite, then its source passages."""
    ids = list(report.chunk_ids)
    if report.inputs:
        try:
            ids += list(json.loads(report.inputs).get("chunks", {}))
        except (ValueError, AttributeError):
            pass
    return list(dict.fromkeys(ids))


def _candidates(reports: Sequence[Report], index: ChunkIndex | None) -> list[tuple[int, Point, float]]:
    """(report position, point with score 0, finding prior) for every sentence a report offers."""
    out: list[tuple[int, Point, float]] = []
    for pos, r in enumerate(reports):
        seen: set[str] = set()
        for j, f in enumerate(r.findings):
            if f.quoted and index is not None:
                row = index.by_id.get(f.chunk_ids[0])
                # A quote whose chunk has changed since the report was written is no longer exact: skip it.
                if row is None or index.rows[row].text[f.start:f.end] != f.text:
                    continue
            key = normalized(f.text)
            if key in seen:
                continue
            seen.add(key)
            out.append((pos, Point(r.community_id, r.title, f.text, f.chunk_ids, 0.0, f.start, f.end),
                        1.0 - 0.1 * j))
        if index is None:
            continue
        for cid in _report_chunks(r):
            row = index.by_id.get(cid)
            if row is None:
                continue
            for sent in sentences_of(cid, index.rows[row].text, chunk_is_first(cid)):
                key = normalized(sent.text)
                if key not in seen:
                    seen.add(key)
                    out.append((pos, Point(r.community_id, r.title, sent.text, (cid,), 0.0, sent.start, sent.end), 0.0))
    return out


def map_reports(question: str, reports: Sequence[Report], tokenizer: Tokenizer, limit: int, *,
                index: ChunkIndex | None = None, query_vector: np.ndarray | None = None) -> list[Point]:
    """Map step: score every sentence the reports offer for the question and keep the ``limit`` best reports'
    points, best report first (a report's rank is its best point plus the mean of its next two).

    Without ``index`` only the reports' own findings are candidates and relevance is lexical."""
    cands = _candidates(reports, index)
    if not cands:
        return []
    texts = [p.text for _, p, _ in cands]
    lex = _lexical(question, texts, tokenizer)
    report_lex = _lexical(question, [f"{r.title}. {r.summary}" for r in reports], tokenizer)
    dense = np.zeros(len(cands))
    if index is not None:
        qv = _query_vector(index, question, query_vector)
        cos = _chunk_cosines(index, [p.chunk_ids[0] for _, p, _ in cands if p.chunk_ids], qv)
        if cos:
            raw = np.array([cos.get(p.chunk_ids[0], 0.0) if p.chunk_ids else 0.0 for _, p, _ in cands])
            lo, hi = float(raw.min()), float(raw.max())
            dense = (raw - lo) / (hi - lo) if hi > lo else np.zeros(len(cands))
    has_dense = bool(dense.any())
    w_lex, w_dense = (0.5, 0.35) if has_dense else (0.85, 0.0)
    rating = np.array([reports[pos].rating / 10.0 for pos, _, _ in cands])
    prior = np.array([pr for _, _, pr in cands])
    scores = (w_lex * lex + w_dense * dense + 0.1 * prior + 0.05 * rating
              + 0.1 * np.array([report_lex[pos] for pos, _, _ in cands]))
    by_report: dict[int, list[float]] = {}
    for (pos, _, _), s in zip(cands, scores):
        by_report.setdefault(pos, []).append(float(s))
    strength = {pos: (sorted(v, reverse=True)[0] + float(np.mean(sorted(v, reverse=True)[1:3] or [0.0])))
                for pos, v in by_report.items()}
    keep = sorted(strength, key=lambda pos: (-strength[pos], reports[pos].community_id))[:limit]
    order = {pos: i for i, pos in enumerate(keep)}
    ranked = sorted(((order[pos], -float(s), Point(p.report_id, p.title, p.text, p.chunk_ids, float(s), p.start, p.end))
                     for (pos, p, _), s in zip(cands, scores) if pos in order), key=lambda t: (t[0], t[1]))
    return [p for _, _, p in ranked]


def reduce_points(question: str, route: RouteDecision, points: Sequence[Point], index: ChunkIndex,
                  max_points: int, token_budget: int = 600, *, per_report: int = 3, min_share: float = 0.5) -> Answer:
    """Reduce step: MMR over the points (redundancy and a report's repeated points penalized), within a token
    budget, grouped under their report titles in order of their best point."""
    if not points:
        return Answer(question, route, "offline", "No community reports are indexed yet.", (), covered=False)
    # Points far below the best one (under ``min_share`` of its score) would only pad the answer.
    best = max(p.score for p in points)
    pts = sorted((p for p in points if p.score >= min_share * best), key=lambda p: (-p.score, p.report_id, p.start))
    sim = _similarity([p.text for p in pts], index.tokenizer)
    same = np.array([[a.report_id == b.report_id for b in pts] for a in pts], np.float64)
    # Same-report pairs count as half-similar, so a second community's point beats a near-tie from the first.
    chosen = mmr([p.score for p in pts], np.maximum(sim, 0.5 * same), max_points * 3, lam=0.7)
    picked: list[Point] = []
    used = 0
    count: dict[str, int] = {}
    said: set[str] = set()
    for i in chosen:
        p = pts[i]
        key = normalized(p.text)
        if count.get(p.report_id, 0) >= per_report or key in said:
            continue
        cost = len(p.text.split()) + 8
        if picked and used + cost > token_budget:
            continue
        picked.append(p)
        said.add(key)
        used += cost
        count[p.report_id] = count.get(p.report_id, 0) + 1
        if len(picked) >= max_points:
            break
    groups: dict[str, list[Point]] = {}
    for p in picked:
        groups.setdefault(p.report_id, []).append(p)
    lines = [f"Across the corpus, {len(groups)} {'community bears' if len(groups) == 1 else 'communities bear'} "
             "on the question:"]
    quotes: list[Quote] = []
    for rid, group in groups.items():
        lines.append("")
        lines.append(f"{group[0].title} (report {rid})")
        for p in group:
            lines.append(f"- {normalized(p.text)} [{', '.join(p.chunk_ids[:3])}]")
            quotes.append(Quote(p.chunk_ids[0] if p.chunk_ids else "", p.start, p.end, p.text, p.title))
    return Answer(question, route, "offline", "\n".join(lines),
                  _citations(index, [c for p in picked for c in p.chunk_ids[:3]]), tuple(groups), tuple(quotes))


def pick_level(reports: Sequence[Report], level: int | None) -> list[Report]:
    if not reports:
        return []
    levels = sorted({r.level for r in reports})
    chosen = level if level is not None and level in levels else levels[0]
    return [r for r in reports if r.level == chosen]


def global_answer(question: str, route: RouteDecision, reports: Sequence[Report], index: ChunkIndex,
                  level: int | None, max_reports: int, max_points: int, *,
                  query_vector: np.ndarray | None = None) -> Answer:
    """The offline global answer: map over the level's reports, reduce to diverse quoted points; says so
    plainly when the corpus does not seem to cover the question."""
    selected = pick_level(reports, level)
    if not selected:
        return Answer(question, route, "offline", "No community reports are indexed yet.", (), covered=False)
    qv = _query_vector(index, question, query_vector)
    cover = coverage(question, index, lambda: qv)
    if not cover.covered:
        return not_covered(question, route, cover)
    points = map_reports(question, selected, index.tokenizer, max_reports, index=index, query_vector=qv)
    answer = reduce_points(question, route, points, index, max_points)
    if cover.missing and (cover.best_cosine is None or cover.best_cosine < SEMANTIC_COVER):
        note = f"Not found anywhere in the corpus: {', '.join(repr(w) for w in cover.missing)}."
        answer = Answer(answer.question, answer.route, answer.mode, answer.text + "\n\n" + note, answer.citations,
                        answer.report_ids, answer.points, answer.covered)
    return answer
