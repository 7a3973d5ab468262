"""Answering: local answers from fused chunk search, global answers by map-reduce over community reports.

The offline versions are extractive and quote whole sentences exactly: every point of an answer is
``chunk.text[start:end]`` of the chunk it cites (see :mod:`communities.sentences`), never re-joined or cleaned.

Local: the units of the top fused chunks that answer the question (whole sentences, whole Markdown lists and
tables, whole code blocks), chosen by :mod:`retrieval.answer_select`.

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
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from communities.sentences import chunk_is_first, mmr, normalized, sentences_of
from core.records import Report
from extraction.offline import find_entities
from retrieval.answer_select import select, term_similarity
from retrieval.answer_units import Unit
from retrieval.bm25 import BM25Index
from retrieval.index import ChunkIndex, Hit
from retrieval.router import RouteDecision
from retrieval.tokenize import Tokenizer

# Words that frame a question about a corpus as a whole rather than name its content ("What are the main themes
# of the story?"): they are not expected to occur in the text, so their absence says nothing about coverage.
_FRAMING = frozenset("""
theme themes main story stories book books novel novella corpus document documents text texts narrative
summarize summarise summary overall across describe explain role roles key major central
primary common recur recurring recurrent differ different difference differences change changes changed
changing relationship relationships conflict conflicts tension tensions motive motives motivation arc develop
development significance significant important importance lesson lessons message messages idea ideas topic
topics portray portrayed portrayal depict depicted whole throughout general kind kinds
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
# question about the whole asks for ("the biggest risks", "give me an overview"). What a question asks about in a
# collection of a kind ("the characters", "the author") is content: an infrastructure wiki has no characters.
# Framing words that make a question one about the collection as a whole: such a question is about whatever the
# corpus holds, so with no content word left it is covered by them (and only by them).
_SCOPE = frozenset("""
theme themes main overall across whole throughout summarize summarise summary overview recur recurring recurrent
common collectively general corpus biggest key major central trend trends pattern patterns
""".split())
SEMANTIC_COVER = 0.35  # a chunk at least this close to the question (cosine) counts as covering it
NAMES_ABSENT_COVER = 0.5  # ... and this close when nothing the question names occurs (a spelling the corpus lacks)


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
    dropped_citations: int = 0  # ids an LLM-written answer cited that were not among its passages (removed)

    def to_dict(self) -> dict[str, object]:
        return {"question": self.question, "route": self.route.to_dict(), "mode": self.mode, "answer": self.text,
                "citations": [{"chunk_id": c.chunk_id, "source": c.source} for c in self.citations],
                "reports": list(self.report_ids), "points": [p.to_dict() for p in self.points],
                "covered": self.covered, "index_generation": self.index_generation,
                "dropped_citations": self.dropped_citations}


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
    return term_similarity([tokenizer(t) for t in texts])


@dataclass(frozen=True, slots=True)
class Coverage:
    """Whether the corpus seems to hold what the question asks about."""

    covered: bool
    missing: tuple[str, ...]  # content words (or names) of the question found nowhere in the corpus
    best_cosine: float | None


def _absent(term: str, index: ChunkIndex) -> bool:
    return not index.bm25.top([term], 1, index.bm25.alive)


def _content(question: str, tokenizer: Tokenizer) -> tuple[dict[str, list[str]], bool]:
    """The question's content terms (each with the words it came from), framing words left out, and whether its
    framing makes it a question about the collection as a whole."""
    content: dict[str, list[str]] = {}
    scope = False
    for word in re.findall(r"[\w][\w.'’-]*", question):
        bare = word.lower().rstrip(".'’-")
        if bare in _FRAMING:  # "say." at the end of a sentence is "say"
            scope = scope or bare in _SCOPE
            continue
        for term in tokenizer(word):
            content.setdefault(term, []).append(word)
    return content, scope


def about_the_whole(question: str, tokenizer: Tokenizer) -> bool:
    """Whether the question asks about the collection as a whole and names nothing in it ("What are the main
    topics these docs cover?"): its answer is what the corpus holds most of, not what shares its words."""
    content, scope = _content(question, tokenizer)
    return scope and not content


def coverage(question: str, index: ChunkIndex, query_vector: Callable[[], np.ndarray | None]) -> Coverage:
    """Whether the corpus covers the question: its content words (framing words like "themes" or "summarize"
    left out) or its meaning must be close to some passage.

    - A question naming things (names, identifiers) none of which occurs anywhere is not covered unless a chunk
      is within ``NAMES_ABSENT_COVER`` in meaning ("What does Splunk charge per gigabyte?" over notes that never
      name Splunk comes within 0.38 of a note on logging; "Aschenbrodel" for a corpus's "Aschenbrödel", 0.55).
    - With a semantic embedder the closest chunk's cosine is always computed: a question is covered when it is
      within ``SEMANTIC_COVER`` or when at least half its content words occur.
    - No content word left: covered only when the framing makes it a question about the collection as a whole
      ("What are the main themes?"); an empty content set is never covered by itself.
    - Without an embedder: covered when some content word occurs."""
    content, scope = _content(question, index.tokenizer)
    missing_terms = [t for t in content if _absent(t, index)]
    names = [f.name for f in find_entities(question) if not f.at_start]
    absent_names = [n for n in names if all(_absent(t, index) for t in index.tokenizer(n))]
    best = None
    if index.vectors is not None and len(index.vectors.matrix):
        qv = query_vector()
        top = index.vectors.exact_top(qv, 1, index.bm25.alive) if qv is not None else []
        best = top[0][1] if top else None
    missing = tuple(dict.fromkeys([*absent_names, *(content[t][0] for t in missing_terms)]))
    if names and len(absent_names) == len(names) and (best is None or best < NAMES_ABSENT_COVER):
        covered = False  # everything it names is unknown here, and nothing is very close in meaning
    elif not content:
        covered = scope
    elif best is None:
        covered = len(missing_terms) < len(content)
    else:
        # With meaning to go by: declined when no chunk is close and most of its content words occur nowhere (an
        # answer that misses some says which).
        covered = best >= SEMANTIC_COVER or len(missing_terms) <= 0.5 * len(content)
    return Coverage(covered, missing, best)


def not_covered(question: str, route: RouteDecision, cover: Coverage) -> Answer:
    """The answer to a question the corpus does not seem to cover, saying why."""
    closeness = f"no passage is close in meaning (best cosine {cover.best_cosine:.2f})" if cover.best_cosine is not None else ""
    if cover.missing:
        why = f"{', '.join(repr(w) for w in cover.missing)} occur nowhere in the indexed text" + (f"; {closeness}" if closeness else "")
    else:
        why = "it names nothing the indexed text holds" + (f" and {closeness}" if closeness else "")
    text = f"The corpus does not seem to cover this question: {why}."
    return Answer(question, route, "offline", text, (), covered=False)


# -- local ------------------------------------------------------------------------------------------------------
def local_answer(question: str, route: RouteDecision, index: ChunkIndex, top_k: int, n_sentences: int,
                 metadata_filter: dict | None = None, *, query_vector: np.ndarray | None = None,
                 lexicon: object | None = None) -> Answer:
    """Units of the top fused chunks that answer the question (whole sentences, and whole lists, tables and code
    blocks), quoted exactly, each cited with its chunk id: chosen by :func:`retrieval.answer_select.select` by
    their own meaning, the question's entities, a matching heading and the kind of value asked for, not by shared
    words alone. A question asking for a value the passages do not hold is told so."""
    qv = _query_vector(index, question, query_vector)
    cover = coverage(question, index, lambda: qv)
    if not cover.covered:  # an off-topic question gets this, not the least unrelated sentences
        return not_covered(question, route, cover)
    hits: list[Hit] = index.search(question, top_k, metadata_filter=metadata_filter)
    if not hits:
        return Answer(question, route, "offline", "No indexed chunk matches this question.", (), covered=False)
    chosen = select(question, hits, index, n_sentences, qv, lexicon,
                    search=lambda text: index.search(text, top_k, metadata_filter=metadata_filter))
    if chosen.missing_value is not None:
        read = ", ".join(chosen.read)
        return Answer(question, route, "offline",
                      f"The passages that match this question best ({read}) do not state the "
                      f"{chosen.missing_value} it asks for.", _citations(index, chosen.read))
    if not chosen.units:
        hit = hits[0]
        text = hit.text.strip()
        start = hit.text.find(text)
        quote = Quote(hit.chunk_id, start, start + len(text), text)
        return Answer(question, route, "offline", f"{text} [{hit.chunk_id}]", _citations(index, [hit.chunk_id]),
                      points=(quote,))
    quotes = tuple(Quote(u.chunk_id, u.start, u.end, u.text) for u in chosen.units)
    lines = [_shown(u) for u in chosen.units]
    return Answer(question, route, "offline", "\n".join(lines), _citations(index, [q.chunk_id for q in quotes]),
                  points=quotes)


def _shown(unit: Unit) -> str:
    """A unit as a line of the answer, with its citation: a list, table or code block keeps its own lines."""
    if unit.kind == "sentence":
        return f"{unit.text} [{unit.chunk_id}]"
    return f"{unit.text.rstrip()}\n[{unit.chunk_id}]"


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


def _breadth(reports: Sequence[Report]) -> np.ndarray:
    """How much of the corpus each report's community spans: its source passages and members (log-scaled),
    scaled to [0, 1] by the broadest."""
    sizes = []
    for r in reports:
        members = 0
        if r.inputs:
            try:
                members = len(json.loads(r.inputs).get("entities", {}))
            except (ValueError, AttributeError):
                members = 0
        sizes.append(np.log1p(len(_report_chunks(r))) + 0.5 * np.log1p(members))
    b = np.asarray(sizes, np.float64)
    top = float(b.max()) if b.size else 0.0
    return b / top if top > 0 else np.zeros(len(reports))


def map_reports(question: str, reports: Sequence[Report], tokenizer: Tokenizer, limit: int, *,
                index: ChunkIndex | None = None, query_vector: np.ndarray | None = None,
                whole: bool = False) -> list[Point]:
    """Map step: score every sentence the reports offer for the question and keep the ``limit`` best reports'
    points, best report first (a report's rank is its best point plus the mean of its next two).

    Without ``index`` only the reports' own findings are candidates and relevance is lexical. With ``whole`` (a
    question about the collection as a whole that names nothing in it, :func:`about_the_whole`) words shared
    with the question mean nothing: reports rank by how much of the corpus their community spans, and their
    points by centrality (the report's own findings first)."""
    cands = _candidates(reports, index)
    if not cands:
        return []
    if whole:
        breadth = _breadth(reports)
        scores = np.array([0.6 * breadth[pos] + 0.3 * pr + 0.1 * reports[pos].rating / 10.0 for pos, _, pr in cands])
        return _ranked_points(cands, scores, reports, limit)
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
    return _ranked_points(cands, scores, reports, limit)


def _ranked_points(cands: Sequence[tuple[int, Point, float]], scores: np.ndarray, reports: Sequence[Report],
                   limit: int) -> list[Point]:
    """The points of the ``limit`` strongest reports (best point plus the mean of the next two), best first."""
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


MAX_PAGES = 4  # page titles named under a community in a global answer


def report_pages(reports: Sequence[Report], index: ChunkIndex) -> dict[str, list[str]]:
    """Per report, the titles of the pages its findings quote, most quoted first (at most :data:`MAX_PAGES`);
    empty when the index's pages do not have several titles (one book, untitled notes)."""
    def title(cid: str) -> str:
        row = index.by_id.get(cid)
        t = index.rows[row].fields.get("title") if row is not None else None
        return t.strip() if isinstance(t, str) else ""

    out = {r.community_id: [t for t, _ in Counter(title(c) for f in r.findings for c in f.chunk_ids[:1]).most_common()
                            if t][:MAX_PAGES] for r in reports}
    return out if len({t for ts in out.values() for t in ts}) > 1 else {}


def reduce_points(question: str, route: RouteDecision, points: Sequence[Point], index: ChunkIndex,
                  max_points: int, token_budget: int = 600, *, per_report: int = 3, min_share: float = 0.5,
                  pages: Mapping[str, Sequence[str]] | None = None) -> Answer:
    """Reduce step: MMR over the points (redundancy and a report's repeated points penalized), within a token
    budget, grouped under their report titles in order of their best point; ``pages``: per report, the titles
    of the pages it quotes, named after its title (what a docs site's reader knows the topics by)."""
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
        on = (pages or {}).get(rid) or []
        lines.append(f"{group[0].title} (report {rid})" + (f"; on the pages {', '.join(on)}" if on else ""))
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
    whole = about_the_whole(question, index.tokenizer)
    points = map_reports(question, selected, index.tokenizer, max_reports, index=index, query_vector=qv, whole=whole)
    # A question about the whole gets the broadest communities' central points, a few from each.
    answer = reduce_points(question, route, points, index, max_points, per_report=2 if whole else 3,
                           pages=report_pages(selected, index))
    if cover.missing and (cover.best_cosine is None or cover.best_cosine < SEMANTIC_COVER):
        note = f"Not found anywhere in the corpus: {', '.join(repr(w) for w in cover.missing)}."
        answer = Answer(answer.question, answer.route, answer.mode, answer.text + "\n\n" + note, answer.citations,
                        answer.report_ids, answer.points, answer.covered)
    return answer
