"""Global answers, offline: map over the community reports of one level, reduce to diverse quoted points.

Map: every report of the chosen level offers its quoted findings (central to its community) and the other whole
sentences of the chunks it was written from. Each sentence is scored for the question: BM25 over the candidate
sentences, the cosine of the question with the vector of the sentence's chunk (the chunk's vector stands for the
sentences it contains, so the question is embedded once and no sentence is), and a small prior for the report's
own findings. Reports are ranked by their best sentences. A question about the collection as a whole (the router
is sure it is global, and it names nothing the index knows) is answered by the broadest communities instead,
whatever words it shares with them. Reduce: maximal marginal relevance picks the points, penalizing sentences
like ones already chosen and a report's repeated points, so the answer spans communities; points are grouped
under their report titles. An answer about the whole also names the corpus's sections (its top folders, each with its
share of the text and its largest pages), so "What are the main topics?" of a documentation site names the site's
parts, not only the communities that came out of them.

A question whose names (the index's known names and the shapes of names, :mod:`core.text.shapes`) all occur
nowhere, with no chunk close in meaning, is declined: the corpus does not cover it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

import numpy as np

from answers.answer import Answer, Quote, citations_of, query_vector as _query_vector
from answers.messages import ENGLISH as IN_ENGLISH, answer_language, listed, say
from answers.sections import corpus_sections, describe_sections
from communities.sentences import chunk_is_first, mmr, normalized, sentences_of
from core.records import Finding, Report
from core.settings import kind_weight
from core.text import cjk, shapes, spans
from core.text.language import detect_language
from core.text.script import CJK_RUN, has_cjk
from core.text.sentences import title_line
from core.text.glue import ENGLISH, glue_for
from retrieval.bm25 import BM25Index
from retrieval.index import ChunkIndex
from routing.router import RouteDecision
from retrieval.tokenize import Tokenizer

NAMES_ABSENT_COVER = 0.5  # a chunk this close in meaning covers a question whose names all occur nowhere
WHOLE_CONFIDENCE = 0.9  # the router's P(global) from which a question naming nothing known is about the whole
# A specific question most of whose IDF mass is in terms the corpus never uses asks about something else: absent
# terms have the largest IDF, so a question with one rare word missing still keeps a quarter of its mass.
ABSENT_SHARE = 0.75


def term_similarity(token_lists: list[list[str]]) -> np.ndarray:
    """Cosine similarity of token lists as term-count vectors (redundancy between quoted points)."""
    vocab: dict[str, int] = {}
    for toks in token_lists:
        for t in toks:
            vocab.setdefault(t, len(vocab))
    m = np.zeros((len(token_lists), max(1, len(vocab))))
    for i, toks in enumerate(token_lists):
        for t in toks:
            m[i, vocab[t]] += 1.0
    m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    return m @ m.T


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


@dataclass(frozen=True, slots=True)
class Coverage:
    """Whether the corpus seems to hold what the question names."""

    covered: bool
    missing: tuple[str, ...]  # the question's names found nowhere in the corpus
    best_cosine: float | None


def _absent(term: str, index: ChunkIndex) -> bool:
    return not index.bm25.top([term], 1, index.bm25.alive)


def coverage(question: str, index: ChunkIndex, vector: Callable[[], np.ndarray | None],
             route: RouteDecision | None = None) -> Coverage:
    """Whether the corpus covers a global question. Not when every name it holds occurs nowhere and no chunk is
    within ``NAMES_ABSENT_COVER`` in meaning ("What does Splunk charge per gigabyte?" over notes that never name
    Splunk); nor when the router reads it as a question about specific things (P(global) under one half) and
    :data:`ABSENT_SHARE` of its IDF mass is in terms the corpus never uses, with no chunk that close ("What is the recipe for
    chocolate cake?" of a novel). A question the router reads as one about the whole is about whatever the
    corpus holds: its framing words ("themes") need not occur."""
    names = list(shapes.names(question))
    absent = [n for n in names if all(_absent(t, index) for t in index.tokenizer(n))]
    language = detect_language(question)  # (read once, as a whole: one word alone does not tell its language)
    tokens = {w: index.tokenizer(w, language) for w in question_words(question)}
    terms = list(dict.fromkeys(t for ts in tokens.values() for t in ts))
    df = index.bm25.document_frequency(terms) if terms else np.zeros(0)
    idf = np.log1p((max(1, len(index)) - df + 0.5) / (df + 0.5))
    oov = float(idf[df == 0].sum() / idf.sum()) if idf.size and idf.sum() > 0 else 0.0
    specific = route is not None and route.global_score < 0.5
    best = None
    if (absent or (specific and oov >= ABSENT_SHARE)) and index.vectors is not None and len(index.vectors.matrix):
        qv = vector()
        top = index.vectors.exact_top(qv, 1, index.bm25.alive) if qv is not None else []
        best = top[0][1] if top else None
    close = best is not None and best >= NAMES_ABSENT_COVER
    covered = close or ((not names or len(absent) < len(names)) and not (specific and oov >= ABSENT_SHARE))
    unseen = {t for t, d in zip(terms, df) if d == 0}
    never = [w for w, ts in tokens.items() if ts and set(ts) <= unseen]
    missing = absent or (never if specific and oov >= ABSENT_SHARE else [])
    return Coverage(covered, tuple(missing), best)


def question_words(question: str) -> list[str]:
    """The question's words, as :func:`coverage` weighs them: a run in a CJK script cut by the segmenter
    (:func:`core.text.cjk.words`), so that its terms are the bigrams inside its words, not those that straddle
    two words (什么 + 关系 gives 么关, which no corpus need hold), and no word of one character (和, 是: the index
    holds a character as a term only where it stands alone); any other text by its spaces and punctuation."""
    out: list[str] = []
    pos = 0
    for m in CJK_RUN.finditer(question):
        out += [w.text for w in spans.words(question[pos:m.start()])]
        out += [w for w in cjk.words(m.group(0)) if len(w) >= 2]  # (a character alone is indexed only alone)
        pos = m.end()
    return out + [w.text for w in spans.words(question[pos:])]


def not_covered(question: str, route: RouteDecision, cover: Coverage) -> Answer:
    """The answer to a question the corpus does not seem to cover, saying why."""
    why = (say("missing", question, words=listed(cover.missing, question)) if cover.missing
           else say("most_missing", question))
    if cover.best_cosine is not None:
        why += say("far", question, b=cover.best_cosine)
    return Answer(question, route, "offline", say("not_covered", question, why=why), (), covered=False)


def about_the_whole(route: RouteDecision, reports: Sequence[Report] = ()) -> bool:
    """Whether a question asks about the collection as a whole: the router is sure it reads as global (also when
    the caller set the route: its reading is kept), and it names no entity the index knows. Its answer is then
    what the corpus holds most of, not what shares its words.

    A concept term (a Chinese common noun the index holds, :func:`core.text.keys.is_term`) names an entity here
    only when it titles one of the ``reports``, the corpus's communities: it is then a topic of the corpus
    ("文档整体上如何讨论蒸汽机？" of a corpus with a community about 蒸汽机 asks about that). A term that titles
    none is one the question frames itself with, as an English question's lower-case nouns ("What are the main
    topics of these documents?") name nothing: "這批文件大致涵蓋哪些主題？" is about the whole, though one paragraph
    of the corpus repeats 主題 and the extractor made it a term. A word the question spells an entity by without
    naming it (:func:`routing.router.named_only`: "main" of "the main topics", where `main` is a branch in a code
    span) is such a term too: it names a topic only where it leads a community's title (its part before a colon,
    as a whole word, in any case: "resolution" of "Resolution: uv lock and PubGrub"; not "main" of "Locking
    environments: SHA and main")."""
    framing = {t for t in route.terms if not any(_titles(t, r.title) for r in reports)}
    names = (set(route.entities) | set(route.terms)) - framing
    return route.global_score >= WHOLE_CONFIDENCE and not names and not route.identifiers


def _titles(term: str, title: str) -> bool:
    """Whether ``title``'s lead (before its first colon) holds ``term``: anywhere in it for Chinese (no spaces
    between words), else as a whole word in any case."""
    title = re.split(r"[:：]", title, maxsplit=1)[0]
    if has_cjk(term):
        return term in title
    return re.search(rf"(?<!\w){re.escape(term.casefold())}(?!\w)", title.casefold()) is not None


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


def _without_title_line(f: Finding, text: str, title: object) -> Finding:
    """A quoted finding without the document's ``title`` line, which a report written before sentences left it
    out (:func:`communities.sentences.whole_sentences`) glued to its first sentence."""
    end = title_line(text, title) if chunk_is_first(f.chunk_ids[0]) else 0
    if not f.start < end < f.end:
        return f
    start = end + len(text[end:f.end]) - len(text[end:f.end].lstrip())
    return replace(f, text=text[start:f.end], start=start)


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
                f = _without_title_line(f, index.rows[row].text, index.rows[row].fields.get("title"))
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
            text, title = index.rows[row].text, index.rows[row].fields.get("title")
            for sent in sentences_of(cid, text, chunk_is_first(cid), title):
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
                whole: bool = False, kind_weights: Mapping[str, float] | None = None) -> list[Point]:
    """Map step: score every sentence the reports offer for the question and keep the ``limit`` best reports'
    points, best report first (a report's rank is its best point plus the mean of its next two).

    Without ``index`` only the reports' own findings are candidates and relevance is lexical. With ``whole`` (a
    question about the collection as a whole that names nothing in it, :func:`about_the_whole`) words shared
    with the question mean nothing: reports rank by how much of the corpus their community spans, and their
    points by centrality (the report's own findings first), by the kinds of their pages (``kind_weights``,
    :func:`core.settings.kind_weight`): a report's breadth counts at the mean kind of its points' pages (a
    community of changelog lines comes after one of guides as broad), and a point at its page's kind over the
    best kind among its report's points (a community quotes its guide's sentence before its changelog's line,
    and one of changelog lines alone keeps them)."""
    cands = _candidates(reports, index)
    if not cands:
        return []
    if whole:
        breadth = _breadth(reports)
        kind = np.array([_kind_weight(index, p.chunk_ids, kind_weights) for _, p, _ in cands])
        of: dict[int, list[float]] = {}
        for (pos, _, _), k in zip(cands, kind):
            of.setdefault(pos, []).append(float(k))
        mean = {pos: float(np.mean(ks)) for pos, ks in of.items()}
        best = {pos: max(ks) or 1.0 for pos, ks in of.items()}
        scores = np.array([(0.6 * breadth[pos] * mean[pos] + 0.3 * pr + 0.1 * reports[pos].rating / 10.0) * k / best[pos]
                           for (pos, _, pr), k in zip(cands, kind)])
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


def _kind_weight(index: ChunkIndex | None, chunk_ids: Sequence[str], weights: Mapping[str, float] | None) -> float:
    """How much a point quoted from ``chunk_ids[0]`` counts by its page's kind (1 without an index or a kind)."""
    row = index.by_id.get(chunk_ids[0]) if index is not None and chunk_ids else None
    return kind_weight(index.rows[row].fields.get("kind"), weights) if row is not None else 1.0


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
        return Answer(question, route, "offline", say("no_reports", question), (), covered=False)
    # Points far below the best one (under ``min_share`` of its score) would only pad the answer.
    best = max(p.score for p in points)
    pts = sorted((p for p in points if p.score >= min_share * best), key=lambda p: (-p.score, p.report_id, p.start))
    sim = term_similarity([index.tokenizer(p.text) for p in pts])
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
    # The answer's own words are English; asked in another language, it gives the corpus's words alone: the report
    # titles (joined in the corpus's language), their pages joined by punctuation, and the quotes.
    english = answer_language(question) == IN_ENGLISH
    glue = ENGLISH if english else glue_for([question])
    lines = [f"Across the corpus, {len(groups)} {'community bears' if len(groups) == 1 else 'communities bear'} "
             "on the question:"] if english else []
    quotes: list[Quote] = []
    for rid, group in groups.items():
        if lines:
            lines.append("")
        on = (pages or {}).get(rid) or []
        where = (f"; on the pages {', '.join(on)}" if english else f" — {glue.comma.join(on)}") if on else ""
        lines.append(f"{group[0].title} (report {rid}){where}")
        for p in group:
            lines.append(f"- {normalized(p.text)} [{', '.join(p.chunk_ids[:3])}]")
            quotes.append(Quote(p.chunk_ids[0] if p.chunk_ids else "", p.start, p.end, p.text, p.title))
    return Answer(question, route, "offline", "\n".join(lines),
                  citations_of(index, [c for p in picked for c in p.chunk_ids[:3]]), tuple(groups), tuple(quotes))


def pick_level(reports: Sequence[Report], level: int | None) -> list[Report]:
    if not reports:
        return []
    levels = sorted({r.level for r in reports})
    chosen = level if level is not None and level in levels else levels[0]
    return [r for r in reports if r.level == chosen]


def global_answer(question: str, route: RouteDecision, reports: Sequence[Report], index: ChunkIndex,
                  level: int | None, max_reports: int, max_points: int, *,
                  query_vector: np.ndarray | None = None, kind_weights: Mapping[str, float] | None = None) -> Answer:
    """The offline global answer: map over the level's reports, reduce to diverse quoted points; says so
    plainly when the corpus does not seem to cover the question."""
    selected = pick_level(reports, level)
    if not selected:
        return Answer(question, route, "offline", say("no_reports", question), (), covered=False)
    qv = _query_vector(index, question, query_vector)
    cover = coverage(question, index, lambda: qv, route)
    if not cover.covered:
        return not_covered(question, route, cover)
    whole = about_the_whole(route, reports)
    points = map_reports(question, selected, index.tokenizer, max_reports, index=index, query_vector=qv, whole=whole,
                         kind_weights=kind_weights)
    # A question about the whole gets the broadest communities' central points, a few from each.
    answer = reduce_points(question, route, points, index, max_points, per_report=2 if whole else 3,
                           pages=report_pages(selected, index))
    sections = describe_sections(corpus_sections(index), question) if whole else ""
    note = say("nowhere", question, words=listed(cover.missing, question)) if cover.missing else ""
    if sections or note:
        text = "\n\n".join(part for part in (sections, answer.text, note) if part)
        answer = Answer(answer.question, answer.route, answer.mode, text, answer.citations, answer.report_ids,
                        answer.points, answer.covered)
    return answer
