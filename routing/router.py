"""The query router: local (fused chunk search) or global (community reports, map-reduce), with its reasons.

The decision is a small calibrated logistic regression (:mod:`routing.model`) over what the question
means (the mean of all-MiniLM-L6-v2's third encoder layer) and over evidence from the index that is not a word
list: identifiers and specific entities the index knows, entities that run through the whole corpus, and how
concentrated the question's top BM25 scores are. A question in a language MiniLM does not read goes to a second
regression over its multilingual-e5 query embedding. Without a MiniLM embedder a model over the evidence alone
decides, and the reasons say so.

Every decision carries ``confidence`` in [0, 1], the calibrated probability of the route it picked. Below
``retrieval.route_confidence_threshold`` the engine answers from both sides (:mod:`answers.both`), and with
an LLM configured it first asks the LLM classifier (:mod:`routing.llm`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal, Sequence

import numpy as np

from core.text.language import describe_language
from core.text.names import COMMON_WORDS
from retrieval.graph_fusion import default_weight
from retrieval.lexicon import EntityLexicon, as_written
from routing.model import (EMBEDDER_LANGUAGES, EMBEDDER_NAME, Evidence, LexicalScorer, LogisticModel,
                           QueryEmbeddings, RouterWeights, gather_evidence, predict, question_language,
                           shipped_weights)

Route = Literal["local", "global"]


@dataclass(frozen=True, slots=True)
class RouteDecision:
    route: Route
    reasons: tuple[str, ...]
    local_score: float  # calibrated P(local)
    global_score: float  # calibrated P(global)
    entities: tuple[str, ...] = field(default=())
    identifiers: tuple[str, ...] = field(default=())
    overridden: bool = False
    confidence: float = 1.0  # calibrated probability of ``route``
    both_sides: bool = False  # answered from the local hits and the community reports
    graph_seeds: tuple[str, ...] = field(default=())  # entities that seed the graph walk (retrieval.graph_walk)
    graph_vector_seeds: tuple[str, ...] = field(default=())  # those of them linked by the question's vector
    terms: tuple[str, ...] = field(default=())  # those of ``entities`` that name concepts, not names (Chinese
    # terms, core.text.keys.is_term: 齿轮, 主题), as an English question's lower-case nouns name none

    def to_dict(self) -> dict[str, object]:
        return {"route": self.route, "reasons": list(self.reasons), "local_score": self.local_score,
                "global_score": self.global_score, "entities": list(self.entities),
                "identifiers": list(self.identifiers), "overridden": self.overridden,
                "confidence": self.confidence, "both_sides": self.both_sides, "graph_seeds": list(self.graph_seeds),
                "graph_vector_seeds": list(self.graph_vector_seeds), "terms": list(self.terms)}


class IndexScorer:
    """Top BM25 scores of a question over a chunk index's live rows (the concentration evidence)."""

    def __init__(self, index: Any) -> None:  # a retrieval.index.ChunkIndex (duck-typed: tokenizer, bm25)
        self.index = index

    def top_scores(self, question: str, k: int) -> np.ndarray:
        bm25 = self.index.bm25
        if bm25.n_rows == 0:
            return np.zeros(0)
        top = bm25.top(self.index.tokenizer(question), k, bm25.alive)
        return np.array(sorted((s for _, s in top), reverse=True), dtype=np.float64)


def _names(items: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


_CODE_MARK = re.compile(r"[()\[\]{}<>=;`$|\\]")


def shown_entities(names: Sequence[str]) -> list[str]:
    """The names a reason may show: words the extractor or the lexicon took for entities but that are function
    words ("and"), code ("With()"), common words in capitals ("POST", "MUST"), or not words at all are left out."""
    out = []
    for name in names:
        bare = name.strip(" .,'’\"-")
        letters = [ch for ch in bare if ch.isalpha()]
        if len(letters) < 2 or _CODE_MARK.search(bare):
            continue
        words = bare.split()
        if all(w.lower().strip(".'’") in COMMON_WORDS for w in words):
            continue
        if len(words) == 1 and bare.isupper() and bare.lower() in _CAPS_WORDS:
            continue
        out.append(name)
    return list(dict.fromkeys(out))


# Words that appear in capitals as protocol verbs or requirement keywords (HTTP methods, RFC 2119), not names.
_CAPS_WORDS = frozenset("get post put patch delete head options trace connect must shall should may required "
                        "recommended optional not note warning todo fixme true false null none".split())


def _direction(model: LogisticModel | None, feature: str, default: Route) -> Route:
    """The route that the presence of an evidence feature pushes toward in the model that decided (the sign of
    its coefficient), so that a reason is only given for the route it argues for."""
    if model is None or feature not in model.features:
        return default
    coef = float(model.coef[model.features.index(feature)])
    return "global" if coef > 0 else "local"


def _reasons(ev: Evidence, p_global: float, model: str, fitted: LogisticModel | None = None) -> list[str]:
    """The reasons for the route ``p_global`` picks: what the question reads as, which model read it, and the
    evidence that argues for that route (evidence pointing the other way is weighed by the model, not shown as
    a reason)."""
    route: Route = "global" if p_global >= 0.5 else "local"
    reasons: list[str] = []
    if route == "global":
        reasons.append(f"reads as a question about the corpus as a whole (p={p_global:.2f})")
    else:
        reasons.append(f"reads as a question about specific facts in a few passages (p={1 - p_global:.2f})")
    if model == "multilingual":
        reasons.append(f"written in {describe_language(ev.language)}: read by the multilingual model "
                       "(multilingual-e5-small), which reads it where MiniLM does not")
    if model == "evidence":
        reasons.append("no MiniLM embedder is installed: decided from index evidence alone, "
                       "without reading the question's meaning")
    if ev.other_language and model != "multilingual":
        written = "mostly in a script other than Latin" if ev.language == "other" else f"in {describe_language(ev.language)}"
        reasons.append(f"written {written}, which the router's embedder reads poorly: its confidence is calibrated "
                       "on such questions")
    identifiers = shown_entities(ev.identifiers)
    specific = shown_entities(ev.specific)
    hubs = shown_entities(ev.hubs)
    if identifiers and _direction(fitted, "identifiers", "local") == route:
        reasons.append("names identifiers: " + _names(identifiers))
    if specific and _direction(fitted, "specific_known", "local") == route:
        reasons.append("names specific entities in the index: " + _names(specific))
    if hubs and _direction(fitted, "hub_known", "global") == route:
        reasons.append("names entities that run through much of the corpus: " + _names(hubs))
    if ev.concentration is not None:
        if ev.concentration >= 2.0 and route == "local":
            reasons.append(f"a few chunks match far better than the rest (top BM25 score {ev.concentration:.1f}x "
                           "the top-10 mean)")
        elif ev.concentration < 1.3 and route == "global":
            reasons.append(f"no chunk stands out lexically (top BM25 score {ev.concentration:.1f}x the top-10 mean)")
    elif not ev.has_index:
        reasons.append("no index evidence: judged from the question alone")
    return reasons


def route_question(question: str, lexicon: EntityLexicon | None = None, has_reports: bool = True, *,
                   embedding: np.ndarray | None = None, scorer: LexicalScorer | None = None,
                   weights: RouterWeights | None = None, multilingual: np.ndarray | None = None) -> RouteDecision:
    """Route ``question``. ``embedding`` is its MiniLM input (:meth:`QueryEmbeddings.question_features`; None:
    the evidence-only model); ``multilingual`` its multilingual-e5 query embedding, read instead when the question
    is in a language MiniLM does not read; ``lexicon`` and ``scorer`` give the index evidence (None: neutral
    index features)."""
    weights = weights or shipped_weights()
    lex = lexicon if lexicon is not None and len(lexicon) else None
    ev = gather_evidence(question, lex, scorer)
    p_global, model = predict(weights, ev, embedding, multilingual)
    route: Route = "global" if p_global >= 0.5 else "local"
    fitted = {"full": weights.full, "evidence": weights.evidence, "multilingual": weights.multilingual}.get(model)
    reasons = _reasons(ev, p_global, model, fitted)
    if route == "global" and not has_reports:
        reasons.append("no community reports are indexed, so the global route is unavailable")
        route = "local"
        p_global = 0.0
    confidence = round(max(p_global, 1.0 - p_global), 4)
    return RouteDecision(route, tuple(reasons), round(1.0 - p_global, 4), round(p_global, 4),
                         tuple(shown_entities(ev.specific + ev.hubs)), tuple(shown_entities(ev.identifiers)),
                         confidence=confidence, terms=tuple(shown_entities(ev.terms)))


def forced(route: Route, read: RouteDecision | None = None) -> RouteDecision:
    """The route the caller set; with ``read``, the router's own reading of the question is kept beside it (its
    probabilities and the entities it found), for the answer to use as evidence."""
    decision = RouteDecision(route, (f"route set by the caller: {route}",), 0.0, 0.0, overridden=True)
    if read is None:
        return decision
    return replace(decision, local_score=read.local_score, global_score=read.global_score, entities=read.entities,
                   identifiers=read.identifiers, terms=read.terms)


@lru_cache(maxsize=1)
def _own_minilm() -> Any | None:
    """A MiniLM for routing when the index embeds with something else (loaded once per process)."""
    from retrieval.embed import minilm_available

    if not minilm_available():
        return None
    from retrieval.minilm import MiniLMEmbedder

    return QueryEmbeddings(MiniLMEmbedder())


class Router:
    """The router bound to one index: its lexicon, its BM25 scores and a MiniLM embedder shared with the
    index's dense search, so that a question is embedded once for routing and searching."""

    def __init__(self, lexicon: EntityLexicon | None, scorer: LexicalScorer | None, embedder: Any | None,
                 weights: RouterWeights | None = None, shared: bool = False) -> None:
        self.lexicon, self.scorer, self.embedder = lexicon, scorer, embedder
        self.weights = weights or shipped_weights()
        self.shared = shared  # the embedder is the index's own: its vector serves the search too

    @classmethod
    def for_index(cls, index: Any | None, lexicon: EntityLexicon | None, embedder: Any | None = "auto",
                  weights: RouterWeights | None = None) -> "Router":
        """A router over ``index`` (a ChunkIndex, or None for no index evidence). With ``embedder="auto"``
        the index's own MiniLM is shared (wrapped so that its dense search reuses the router's vector),
        else a MiniLM is loaded when installed; None routes without an embedder."""
        shared = False
        if embedder == "auto":
            dense = getattr(index, "dense", None) if index is not None else None
            inner = getattr(dense, "embedder", None)
            if inner is not None and getattr(inner, "name", "") == EMBEDDER_NAME:
                embedder = inner if isinstance(inner, QueryEmbeddings) else QueryEmbeddings(inner)
                dense.embedder = embedder  # the dense engine now finds the router's vector for the same text
                shared = True
            else:
                embedder = _own_minilm()
        scorer = IndexScorer(index) if index is not None and len(index) else None
        return cls(lexicon, scorer, embedder, weights, shared)

    def features(self, question: str) -> np.ndarray | None:
        return None if self.embedder is None else self.embedder.question_features(question)

    def query_vector(self, question: str) -> np.ndarray | None:
        """The question's embedding for the index's own search (None when the router embeds differently)."""
        return self.embedder.embed([question])[0] if self.shared and self.embedder is not None else None

    def multilingual_features(self, question: str) -> np.ndarray | None:
        """The question's multilingual-e5 query embedding when it is in a language MiniLM does not read (and the
        multilingual model is shipped and e5 installed); else None."""
        if self.embedder is None or self.weights.multilingual is None:
            return None
        if question_language(question) in EMBEDDER_LANGUAGES:
            return None
        from retrieval.e5 import shared_e5

        e5 = shared_e5()
        return None if e5 is None else e5.embed_queries([question])[0]

    def route(self, question: str, has_reports: bool = True) -> RouteDecision:
        multilingual = self.multilingual_features(question)
        embedding = self.features(question) if multilingual is None else None
        return route_question(question, self.lexicon, has_reports, embedding=embedding, scorer=self.scorer,
                              weights=self.weights, multilingual=multilingual)


def named_only(decision: RouteDecision, walk: Any, lexicon: Any, question: str, link: Any) -> RouteDecision:
    """``decision`` with the spans the question spells an entity by without naming it (by the graph walk's
    judgement, :meth:`retrieval.graph_walk.GraphWalk.names_in`, which here judges a plain word such as `main` by
    its uses too) moved from its entities to its terms, and the names the walk links inside a longer span added
    ("Stanów Zjednoczonych" of "prezydentem Stanów Zjednoczonych"). A term counts as an entity of the question only
    where it titles a community (:func:`answers.global_answer.about_the_whole`): "What are the main topics?" does
    not name the `main` branch, while "What does the documentation say about resolution overall?" names the
    topic of a community titled "Resolution". The route itself was read from every span the lexicon spells, as
    the router was trained. ``link``: the walk's link of the question (:meth:`retrieval.index.ChunkIndex.graph_link`,
    made once for this and :func:`with_graph_seeds`)."""
    spelled = [(span, e.name) for span, e in lexicon.find_spans(question)]
    unnamed = {span for span, _ in spelled} - {span for span, _ in walk.names_in(question, spelled, plain=True)}
    not_named = {name for span, name in spelled if span in unnamed}
    inside = list(dict.fromkeys(as_written(s.matched) for s in link.seeds
                                if s.by == "name" and s.name not in not_named))
    inside = [span for span in inside if span not in decision.entities and span not in unnamed]
    if not unnamed and not inside:
        return decision
    return replace(decision, entities=tuple(e for e in decision.entities if e not in unnamed) + tuple(inside),
                   terms=tuple(dict.fromkeys([*decision.terms, *(e for e in decision.entities if e in unnamed)])))


def with_graph_seeds(decision: RouteDecision, index: Any, question: str, link: Any = None) -> RouteDecision:
    """``decision`` naming the entities the graph walk of a local
    search for ``question`` starts from, which of them were linked by the question's vector, and, for a
    generation published before entity vectors existed, that the walk links by names alone. ``link``: the
    index's :meth:`~retrieval.index.ChunkIndex.graph_link` of the question, when already made."""
    link = link if link is not None else index.graph_link(question)
    reasons = list(decision.reasons)
    # The entities it names, as the question writes them; an entity written otherwise in the index follows in
    # brackets ("packages (--package)"): the normalized names matched, not the spelling.
    spellings: dict[str, dict[str, None]] = {}
    for s in link.seeds:
        if s.by == "name":
            spellings.setdefault(as_written(s.matched), {})[s.name] = None
    named = []
    for span, names in spellings.items():
        others = [n for n in names if n.casefold() != span.casefold()]
        named.append(f"{span} ({', '.join(others)})" if others else span)
    close = [f"{s.name} (similarity {s.similarity:.2f}, standard score {s.score:.1f})"
             for s in link.seeds if s.by == "vector"]
    parts = []
    if named:
        parts.append("the entities it names: " + ", ".join(named[:5]))
    if close:
        parts.append("entities close to its meaning (linked by vector): " + ", ".join(close[:5]))
    if parts:
        reason = "the graph walk starts from " + "; ".join(parts)
        if not named and default_weight(link, 1.0, index.settings.graph_vector_strong_score) == 0:
            reason += " (too weak alone to give the graph list weight by default)"
        reasons.append(reason)
    if index.graph_walk is not None and index.graph_walk.entity_vectors is None and index.embeds_entities:
        reasons.append("this generation holds no entity vectors (published by an older version): the graph walk "
                       "links the question by entity names only")
    return replace(decision, graph_seeds=link.names, graph_vector_seeds=link.by_vector, reasons=tuple(reasons))
