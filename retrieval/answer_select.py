"""Choosing what a local answer quotes: the units of the top passages that answer the question.

Candidates are the units (:mod:`retrieval.answer_units`) of the few best passages of the fused search (and of a
passage BM25 or the dense list ranks first, wherever the fusion put it among the hits). Each is
scored by what makes a passage's sentence an answer rather than a sentence that shares words with it:

- its own meaning: the cosine of its vector with the question's (embedded in one batch, only the candidates,
  cached by text), not its chunk's;
- the question's entities in it (names and identifiers the offline extractor finds in the question, and the
  index's known entities), and more than one of them together (a relation between them);
- sitting under a heading that the question's words match, first under it, and reading as a definition of a
  question term ("A gauge is ...", "``counter``: ..."); for a "what is X?" (or "what is X for?") question, more
  so when X itself is the defined subject, and most on the page or section titled X, where any sentence whose
  subject is X ("``package-lock.json`` is automatically generated ...") counts as its definition;
- holding the kind of thing the question asks for (a number, a date, a name, a place: a name or a path) that the
  question does not already contain: an answer adds something;
- BM25 over the candidates and its passage's rank, as weaker signals.

Selection: a chain of hops first (a multi-hop answer shows every hop): the bridge, the best unit naming the
question's entities, then the best unit of another passage by its score and by how well it names what the
bridge adds (read in every other passage, the bridge's own left out), and so on for each further hop; then
maximal marginal relevance (:func:`communities.sentences.mmr`) over the rest, keeping only units near the best. When the question asks for a value (a number or a date) and no
candidate holds one, the selection says so instead of quoting what is near it.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import unicodedata
import weakref
from collections import Counter, OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Literal, Sequence

import numpy as np

from communities.sentences import chunk_is_first, mmr, normalized
from extraction.offline import COMMON_WORDS, find_entities
from retrieval.answer_units import Unit, answer_units
from retrieval.language import uncovered

Wanted = Literal["number", "date", "name", "place"]
PASSAGES = 5  # candidates come from this many of the best passages
HOP_PASSAGES = 3  # passages each hop's search may add
HOPS = 1  # searches after the first one, each from the chain's last link
MAX_CANDIDATES = 96  # units embedded per question at most
# How the signals are weighed (each signal is in [0, 1]; dense and lexical are min-max and max scaled over the
# candidates). Without a semantic embedder the lexical signal takes the dense one's place.
WEIGHTS = {"dense": 0.45, "lexical": 0.35, "lexical_alone": 0.5, "entities": 0.2, "pair": 0.1, "heading": 0.45,
           "definition": 0.25, "subject": 0.3, "holds": 0.15, "rank": 0.3, "hop": 0.2}
TITLE_SHARE = 0.45  # a title line counts this share of a matching section heading
KEEP_SHARE = 0.5  # a unit scoring under this share of the best one does not pad the answer
WHY_CAUSE_BONUS = 0.2  # for a "why" question, a candidate saying "because", "due to" ... gains this share of the best
DUPLICATE = 0.95  # a unit this similar to a quoted one is the same point again (an overlapping chunk, other words)
HOP_KEEP_SHARE = 0.45  # the second hop's best unit is quoted only from this share of the best unit's score

# What a question asks for, by its question words (English, Polish, Chinese: the languages the router reads).
_WANTS: tuple[tuple[Wanted, re.Pattern[str]], ...] = (
    # "When does the prepare script run?" asks in which case, not for a date: "when" before a present-tense or
    # modal auxiliary, or "when to", is no date question ("When was it founded?", "When did it open?" are).
    ("date", re.compile(r"\bwhen\b(?!\s+(?:do|does|should|can|could|will|would|must|might|may|to)\b)|\b(?:what|which|in which) (?:year|date|month|day|decade|century)\b|\bkiedy\b|"
                        r"\bw (?:którym|jakim) roku\b|何时|什么时候|哪一?年", re.I)),
    ("number", re.compile(r"\bhow (?:many|much|long|old|far|tall|high|big|large|often)\b|\bnumber of\b|"
                          r"\bwhat (?:is the )?(?:percentage|price|cost|amount|population|size|port|version)\b|"
                          r"\bile\b|\bilu\b|多少|几", re.I)),
    ("name", re.compile(r"^\W*(?:who|whom|whose)\b|\b(?:who|whom|whose)\b|\bkto\b|\bkogo\b|\bkomu\b|谁", re.I)),
    ("place", re.compile(r"\bwhere\b|\b(?:which|what) (?:city|country|state|town|county|province|region|"
                         r"folder|directory)\b|"
                         r"\bgdzie\b|哪里|哪儿|在哪", re.I)),
)
# A place in technical text is a path: "{prefix}/lib/node_modules", "~/.npmrc", "C:\\Users", "/etc/hosts".
_PATH = re.compile(r"(?:[\w{}~$%.-]*[/\\][\w{}$%.-]+){2,}|~[/\\][\w.-]+|(?<![\w/])\.[a-z][\w-]*rc\b|\b[A-Z]:\\\w")
_LINKS = re.compile(r"\]\([^)\s]*\)|\b(?:https?|ftp)://\S+|\bwww\.\S+")  # a link's target is no place it names
_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")
_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b")
_MONTH = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December|"
                    r"stycznia|lutego|marca|kwietnia|maja|czerwca|lipca|sierpnia|września|października|listopada|"
                    r"grudnia|styczniu|lutym|marcu|kwietniu|maju|czerwcu|lipcu|sierpniu|wrześniu|październiku|"
                    r"listopadzie|grudniu)\b|[0-9一二三四五六七八九十]+月|[0-9]+年")
_NUMBER_WORDS = re.compile(r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
                           r"forty|fifty|hundred|thousand|million|billion|dozen|jeden|jedna|dwa|dwie|trzy|cztery|"
                           r"pięć|sześć|siedem|osiem|dziewięć|dziesięć|sto|tysiąc|milion)\b|[一二两三四五六七八九十百千万亿]",
                           re.I)
_CAPITAL = re.compile(r"\b[^\W\d_][\w'’.-]*", re.UNICODE)
# A definition opens with its term: "A gauge is a metric ...", "Gauges are the ...", "`counter`: a cumulative ...",
# "Licznik to ..." (the term is at most four words; the copula is followed by an article, or it is a colon or dash).
_TERM = r"^\W{0,3}(?:(?:an?|the)\s+)?[`*_\"“]*((?:[\w.’'-]+\s+){0,3}[\w.’'-]+?)[`*_\"”]*\s*(?:\([^)]{0,60}\)\s*)?"
_DEFINITION = re.compile(_TERM + r"(?:(?:is|are|refers to|means|denotes)\s+(?:an?|the|one|any)\b|"
                         r"(?:jest|to|są)\s|[:—–]\s)", re.I)
# On the page titled by the asked term, a sentence whose subject is the term says what it is, whatever follows
# the copula ("`package-lock.json` is automatically generated for ...").
_SUBJECT = re.compile(_TERM + r"(?:is|are|jest|są)\s", re.I)


# A question asking what a term is: "What is a Dispatcher?", "What are gauges?", "What does idempotent mean?",
# "Define backpressure", "Co to jest licznik?", "Czym jest ...?", "调度器是什么？" (the term is at most four words).
_ASKS_TERM = (
    # "What is package-lock.json for?", "What are workspaces used for?": what X is, as its page says.
    # A term may hold dots ("Node.js", "package-lock.json"); a sentence's own full stop ends it.
    re.compile(r"^\W*what\s+(?:is|are)\s+(?:an?\s+|the\s+)?(?P<t>[^?,;]+?)\s+(?:used\s+)?for\s*[?.]*\s*$", re.I),
    re.compile(r"^\W*(?:what|who)(?:\s+(?:is|are)|['’]s)\s+(?:an?\s+|the\s+)?(?P<t>[^?,;]+?)\s*[?.]*\s*$", re.I),
    re.compile(r"^\W*what\s+(?:does|do)\s+(?:an?\s+|the\s+)?(?P<t>[^?.,;]+?)\s+(?:mean|stand for|do)\s*[?.]*\s*$", re.I),
    re.compile(r"^\W*(?:define|explain)\s+(?:an?\s+|the\s+)?(?P<t>[^?.,;]+?)\s*[?.]*\s*$", re.I),
    re.compile(r"^\W*(?:co to (?:jest|są)|czym (?:jest|są))\s+(?P<t>[^?.,;]+?)\s*[?.]*\s*$", re.I),
    re.compile(r"^\W*(?P<t>[^?？。，,]{1,20}?)\s*(?:是什么|是甚么|指什么)\W*$"),
)


def asked_term(question: str) -> str | None:
    """The term a "what is X?" question asks to define (None: not such a question, or X is more than a term)."""
    for pattern in _ASKS_TERM:
        m = pattern.match(question.strip())
        if m:
            term = m.group("t").strip(" `*_\"'“”")
            # "the population of Kansas", "the speed of light" ask for a value, not what a term means.
            if not term or len(term.split()) > 4 or any(w.lower() in COMMON_WORDS for w in term.split()):
                return None
            return term
    return None


# A question comparing two terms: "What is the difference between npm ci and npm install?", "How does X differ
# from Y?", "X vs Y?", "Compare X and Y", "When should I use X instead of Y?" (each term at most four words).
_T = r"[`*_\"“]*(?:an?\s+|the\s+)?(?P<{}>[^?,;]+?)[`*_\"”]*"
_COMPARES = tuple(re.compile(p.format(a=_T.format("a"), b=_T.format("b")), re.I) for p in (
    r"\bdifferences?\s+between\s+(?:using\s+)?{a}\s+and\s+(?:using\s+)?{b}\s*[?.]*\s*$",
    r"^\W*how\s+(?:does|do|is|are)\s+{a}\s+(?:differ|different)\s+(?:from|than)\s+{b}\s*[?.]*\s*$",
    r"^\W*what\s+(?:does|do)\s+{a}\s+do\s+differently\s+(?:from|than)\s+{b}\s*[?.]*\s*$",
    r"^\W*compare\s+{a}\s+(?:and|with|to)\s+{b}\s*[?.]*\s*$",
    r"\b(?:use|choose|pick|prefer)\s+{a}\s+(?:instead\s+of|rather\s+than|over)\s+{b}\s*[?.]*\s*$",
    r"^\W*{a}\s+(?:vs\.?|versus)\s+{b}\s*[?.]*\s*$",
))


def compared_terms(question: str) -> tuple[str, str] | None:
    """The two terms a question compares (None: not such a question, or a side is more than a term)."""
    for pattern in _COMPARES:
        m = pattern.search(question.strip())
        if m:
            a, b = (m.group(g).strip(" `*_\"'“”") for g in ("a", "b"))
            if a and b and a.casefold() != b.casefold() and all(len(t.split()) <= 4 for t in (a, b)):
                return a, b
    return None


# A how-to question: "How do I run a script defined in package.json?", "How can I deprecate a version?".
_HOW_TO = re.compile(r"^\W*how\s+(?:do|can|should|could|would|may)\s+(?:i|you|we|one)\s+(?P<t>[^?]+?)\s*[?.]*\s*$", re.I)
TASK_WORDS = 4  # the longest task phrase tried as a page title


def task_phrases(question: str) -> list[str]:
    """For a how-to question, the task's phrases that may title the page that documents it, longest first: its
    verb with up to three of the content words after it ("run script defined", "run script", "run")."""
    m = _HOW_TO.match(question.strip())
    if not m:
        return []
    words = re.findall(r"[\w.'’-]+", m.group("t"))
    if not words:
        return []
    content = [words[0]] + [w for w in words[1:] if w.lower() not in COMMON_WORDS]
    return [" ".join(content[:n]) for n in range(min(TASK_WORDS, len(content)), 0, -1)]


def task_pages(index: Any, question: str) -> list["_Passage"]:
    """The opening passages of the pages a how-to question's task titles (:func:`titled`), by its longest phrase
    that titles one; none for a one-word task that is a common word ("set", "use"): too many pages say it."""
    for phrase in task_phrases(question):
        if " " not in phrase and phrase.lower() in COMMON_WORDS:
            break
        pages = titled(index, phrase)
        if pages:
            return pages
    return []


def _names_term(text: str, term: str) -> bool:
    """Whether ``text`` names ``term``, its words joined by spaces, hyphens, underscores or code marks."""
    words = [re.escape(w) for w in re.findall(r"[\w.'’-]+", _folded(term))]
    return bool(words) and re.search(r"(?<![\w-])" + r"[\s`_-]+".join(words) + r"(?![\w-])", _folded(text)) is not None


# A question asking for a cause ("Why did ...?", "What caused ...?") is answered by the sentence that explains
# the event the question names, and an explanation follows what it explains ("... returned HTTP 504 ... The
# billing-service waits on PostgreSQL, and the primary had reached max_connections."), or says so in words.
_WHY = re.compile(r"^\W*(?:why\b|what (?:caused|causes|led to|leads to|made)\b|how come\b|for what reason\b|"
                  r"dlaczego\b|czemu\b|为什么)", re.I)
_CAUSE = re.compile(r"\b(?:because|due to|caused by|as a result|owing to|the reason|root cause|led to|leads to|"
                    r"result(?:s|ed)? in|ponieważ|z powodu)\b|因为|由于", re.I)


def asks_why(question: str) -> bool:
    """Whether ``question`` asks for a cause (see ``_WHY``)."""
    return bool(_WHY.search(question))


def wanted(question: str) -> Wanted | None:
    """The kind of value the question asks for, from its question words (None: not one of these)."""
    for kind, pattern in _WANTS:
        if pattern.search(question):
            return kind
    return None


def _holds(kind: Wanted, text: str, question_words: set[str]) -> bool:
    """Whether ``text`` holds a value of ``kind`` that the question does not already contain."""
    if kind == "date":
        return any(m.group(0) not in question_words for m in _YEAR.finditer(text)) or bool(_MONTH.search(text))
    if kind == "number":
        return (any(m.group(0) not in question_words for m in _DIGITS.finditer(text))
                or any(m.group(0).lower() not in question_words for m in _NUMBER_WORDS.finditer(text)))
    if kind == "place" and any(m.group(0) not in question_words for m in _PATH.finditer(_LINKS.sub(" ", text))):
        return True
    words = _CAPITAL.findall(text)[1:]  # a sentence's first word is capitalized whatever it is
    return any(w[:1].isupper() and w.lower().strip(".'’") not in question_words and w.lower() not in COMMON_WORDS
               for w in words)


@dataclass(frozen=True, slots=True)
class Selection:
    """What a local answer quotes, best first, and what it lacks."""

    units: tuple[Unit, ...]
    missing_value: Wanted | None = None  # the question asks for this kind of value and no candidate holds one
    read: tuple[str, ...] = ()  # the passages whose units were candidates


class _VectorMemo:
    """Unit vectors by embedder and text, kept in memory (least recently used out), so that a unit embedded for
    one question is not embedded again for the next."""

    def __init__(self, size: int = 20_000) -> None:
        self.size, self._lock, self._items = size, threading.Lock(), OrderedDict()  # type: ignore[var-annotated]

    def vectors(self, embedder: Any, texts: Sequence[str], disk: Any = None) -> np.ndarray:
        name = getattr(embedder, "name", type(embedder).__name__)
        keys = [hashlib.blake2b(t.encode("utf-8"), digest_size=12).hexdigest() for t in texts]
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for k in keys:
                if (name, k) in self._items:
                    self._items.move_to_end((name, k))
                    out[k] = self._items[(name, k)]
        todo = [k for k in dict.fromkeys(keys) if k not in out]
        if todo and disk is not None:
            out.update(disk.get_many("unit:" + name, todo, embedder.dim))
            todo = [k for k in todo if k not in out]
        if todo:
            by_key = dict(zip(keys, texts))
            fresh = embedder.embed([by_key[k] for k in todo])
            new = {k: np.asarray(v, np.float32) for k, v in zip(todo, fresh)}
            if disk is not None:
                disk.put_many("unit:" + name, new)
            out.update(new)
        with self._lock:
            for k in keys:
                self._items[(name, k)] = out[k]
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return np.stack([out[k] for k in keys])


_MEMO = _VectorMemo()


def _bm25(question_terms: list[str], token_lists: list[list[str]], k1: float = 1.5, b: float = 0.75) -> np.ndarray:
    """BM25 of each token list for the terms, scaled to [0, 1] by the best (all zeros when none matches).

    The candidates are a few dozen units, so the IDF is Lucene's ``log(1 + (N - df + 0.5) / (df + 0.5))``, which
    stays positive: Okapi's ``log((N - df + 0.5) / (df + 0.5))`` is zero or negative for a term that half the
    candidates hold (the name every unit of a passage sits under), so it would count for nothing."""
    n = len(token_lists)
    if not n or not question_terms:
        return np.zeros(n)
    counts = [Counter(toks) for toks in token_lists]
    lengths = np.array([len(toks) for toks in token_lists], np.float64)
    norm = k1 * (1.0 - b + b * lengths / max(float(lengths.mean()), 1e-9))
    scores = np.zeros(n)
    for term in question_terms:
        tf = np.array([c.get(term, 0) for c in counts], np.float64)
        df = int((tf > 0).sum())
        if df:
            scores += math.log(1.0 + (n - df + 0.5) / (df + 0.5)) * tf * (k1 + 1.0) / (tf + norm)
    top = float(scores.max())
    return scores / top if top > 0 else np.zeros(n)


def _minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def question_entities(question: str, lexicon: Any = None) -> list[str]:
    """The names and identifiers in the question (offline extractor), and the index's entities it names."""
    names = [f.name for f in find_entities(question) if not f.at_start or f.type != "name"]
    if lexicon is not None:
        names += [e.name for e in lexicon.find(question)]
    return list(dict.fromkeys(n for n in names if len(n) >= 2))


@lru_cache(maxsize=65_536)
def _folded(text: str) -> str:
    """Lower case without accents, so that "Aschenbrodel" finds "Aschenbrödel"."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(ch))


def _mentions(text: str, name: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(_folded(name)) + r"(?!\w)", _folded(text)) is not None


@dataclass
class _Pool:
    """The candidate units and, for each, the rank of the passage it came from; the opening passages of the
    pages titled by the term a "what is X?" question asks about (:func:`titled`)."""

    units: list[Unit]
    rank: list[float]
    seen: set[str]
    titled: frozenset[str] = frozenset()
    compared: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())  # pages titled by either side
    task: frozenset[str] = frozenset()  # pages titled by a how-to question's task

    def add(self, hits: Sequence[Any], first_rank: float) -> None:
        for r, hit in enumerate(hits):
            for u in answer_units(hit.chunk_id, hit.text, chunk_is_first(hit.chunk_id)):
                key = normalized(u.text)
                if key not in self.seen:
                    self.seen.add(key)
                    self.units.append(u)
                    self.rank.append(first_rank + r)


@dataclass
class _Scored:
    score: np.ndarray
    relevant: np.ndarray  # names the question's entities or words
    holds: np.ndarray
    ent: np.ndarray  # share of the question's entities it names
    hop: np.ndarray  # how well it names what the bridge sentence adds (0 without a second hop)
    vecs: np.ndarray | None


def _score(question: str, pool: _Pool, index: Any, query_vector: np.ndarray | None, lexicon: Any,
           bridge: str = "", bridge_chunk: str = "") -> _Scored:
    units, tok = pool.units, index.tokenizer
    q_terms = tok(question)
    q_set = set(q_terms)
    lex = _bm25(q_terms, [tok(u.text) for u in units])
    # A second hop's passages are read for what the bridge sentence adds to the question: the entities it names
    # that the question does not (in the text, or as the heading the unit sits under).
    b_names = bridge_entities(question, bridge) if bridge else []
    b_terms = [t for name in b_names for t in tok(name) if t not in q_set]
    # The bridge's own passage names what the bridge adds by construction: the hop is read in the others only
    # (BM25 over them, so that its own passage does not make the bridge's names look common).
    hop = np.zeros(len(units))
    others = [i for i, u in enumerate(units) if u.chunk_id != bridge_chunk]
    if b_terms and others:
        toks = [tok(f"{units[i].heading} {units[i].text}") for i in others]
        hop[others] = _bm25(b_terms, toks)
        # A unit names what the bridge adds when it holds at least half of one of its names' words: one word
        # shared with "deployctl apply --canary 10" ("apply") is no hop to it.
        names = [set(tok(n)) - q_set for n in b_names]
        for k, i in enumerate(others):
            have = set(toks[k])
            if not any(n and 2 * len(n & have) >= len(n) for n in names):
                hop[i] = 0.0
    prior = 1.0 / (1.0 + np.asarray(pool.rank, np.float64))
    ents = question_entities(question, lexicon)
    q_words = {w.lower().strip(".'’") for w in re.findall(r"[\w'’.-]+", question)} | set(_DIGITS.findall(question))
    kind = wanted(question)
    ent, pair, head, definition, holds, subject = (np.zeros(len(units)) for _ in range(6))
    term = asked_term(question)
    term_toks = set(tok(term)) if term else set()
    sides = compared_terms(question)
    for i, u in enumerate(units):
        inside = [e for e in ents if _mentions(u.text, e)]
        under = [e for e in ents if e not in inside and _mentions(u.heading, e)]
        if ents:
            ent[i] = (len(inside) + 0.5 * len(under)) / len(ents)
        pair[i] = float(len(inside) >= 2)
        h_terms = set(tok(u.heading)) if u.heading else set()
        if h_terms and q_set:
            # A heading that the question names ("Gauge" for "... a counter and a gauge?"), or whose words the
            # question all uses: what follows it, first of all, answers it.
            share = len(h_terms & q_set) / min(len(h_terms), len(q_set))
            # A section heading is more specific evidence than the document's title line above every sentence.
            head[i] = share * (1.0 if u.first_under_heading else 0.6) * (TITLE_SHARE if u.title else 1.0)
        m = _DEFINITION.match(u.text) if u.kind == "sentence" else None
        if m and set(tok(m.group(1))) & q_set:
            definition[i] = 1.0
            # A "what is X?" question is answered by the sentence whose subject is X itself ("Dispatcher is
            # the core API ..."), above all on the page or section titled by X; not by one that names X in
            # passing or defines a neighbour of it.
            if term_toks and set(tok(m.group(1))) == term_toks:
                subject[i] = 1.0 + float(set(tok(u.heading)) == term_toks or u.chunk_id in pool.titled)
        elif term_toks and u.chunk_id in pool.titled and u.kind == "sentence":
            m = _SUBJECT.match(u.text)
            if m and set(tok(m.group(1))) == term_toks:
                subject[i] = 2.0  # the page titled by X says what X is: as a definition there would
        if sides is not None:
            # A comparison is answered by a unit that speaks of both sides: naming both, or on the page of one
            # naming the other ("This command is similar to npm install, except ..." on the page titled npm-ci),
            # the more so there.
            on = [u.chunk_id in pool.compared[0], u.chunk_id in pool.compared[1]]
            named = [_names_term(f"{u.heading} {u.text}", t) for t in sides]
            if (named[0] or on[0]) and (named[1] or on[1]):
                subject[i] = 1.0 + float((on[0] and named[1]) or (on[1] and named[0]))
        if u.chunk_id in pool.task and u.kind in ("sentence", "code"):
            # The page documenting the task: what opens its sections (the synopsis, the description's first
            # sentence) says how, the rest of it less so.
            subject[i] = max(subject[i], 2.0 if u.first_under_heading else 0.5)
        if kind is not None:
            holds[i] = float(_holds(kind, u.text, q_words))
    dense = np.zeros(len(units))
    vecs = None
    embedder = getattr(index, "embedder", None)
    semantic = embedder is not None and getattr(embedder, "semantic", False)
    if query_vector is not None and semantic and _reads(index, question):
        texts = [f"{u.heading}: {u.text}" if u.heading else u.text for u in units]
        vecs = _MEMO.vectors(embedder, texts, getattr(index, "vector_cache", None))
        dense = _minmax(vecs @ np.asarray(query_vector, np.float32))
    w = WEIGHTS
    w_dense, w_lex = (w["dense"], w["lexical"]) if vecs is not None else (0.0, w["lexical_alone"])
    score = (w_dense * dense + w_lex * lex + w["entities"] * ent + w["pair"] * pair + w["heading"] * head
             + w["definition"] * definition + w["subject"] * subject + w["holds"] * holds + w["rank"] * prior
             + w["hop"] * hop)
    return _Scored(score, (ent > 0) | (lex > 0) | (hop > 0), holds, ent, hop, vecs)


def bridge_entities(question: str, bridge: str) -> list[str]:
    """The names and identifiers of the bridge sentence that the question does not name: where the next hop is."""
    asked = question.lower()
    return list(dict.fromkeys(f.name for f in find_entities(bridge) if f.name.lower() not in asked and len(f.name) > 2))


def _hop_query(question: str, bridge: str, lexicon: Any) -> str:
    """The second hop's query: the bridge's new entities in place of the question's own."""
    rest = question
    for name in question_entities(question, lexicon):
        rest = re.sub(re.escape(name), " ", rest, flags=re.I)
    names = bridge_entities(question, bridge)
    return f"{' '.join(names)} {rest}" if names else f"{question} {bridge}"


def _reads(index: Any, question: str) -> bool:
    """Whether the embedder reads the question's language (as the dense search decides: a MiniLM vector of a
    Chinese question says little, so the units are then scored without it)."""
    covered = getattr(index, "embedder_languages", None)
    language = getattr(index, "query_language", None)
    return covered is None or language is None or not uncovered([language(question)], covered)


def _bridge(pool: _Pool, scored: _Scored) -> int | None:
    """The unit that holds the question's entities best (the first hop), else the top passage's best unit."""
    named = [i for i in range(len(pool.units)) if scored.ent[i] > 0]
    if named:
        return max(named, key=lambda i: (0.5 * scored.ent[i] + scored.score[i], -i))
    first = [i for i, r in enumerate(pool.rank) if r == 0 and scored.relevant[i]]
    return max(first, key=lambda i: (scored.score[i], -i)) if first else None


def _bound(pool: _Pool, question: str, index: Any, bridge: str = "", keep: Sequence[Unit] = ()) -> None:
    """Keep at most ``MAX_CANDIDATES`` units (the lexically and rank-wise likeliest, and the units of ``keep``),
    bounding what is embedded."""
    if len(pool.units) <= MAX_CANDIDATES:
        return
    tok = index.tokenizer
    lex = _bm25(tok(f"{question} {bridge}"), [tok(u.text) for u in pool.units])
    lex[[i for i, u in enumerate(pool.units) if u in set(keep)]] = np.inf
    keep_at = sorted(np.argsort(-(lex + 1.0 / (1.0 + np.asarray(pool.rank))), kind="stable")[:MAX_CANDIDATES])
    pool.units, pool.rank = [pool.units[i] for i in keep_at], [pool.rank[i] for i in keep_at]


@dataclass(frozen=True, slots=True)
class _Passage:
    chunk_id: str
    text: str


_TITLES: "weakref.WeakKeyDictionary[Any, tuple[int, dict[frozenset[str], list[int]]]]" = weakref.WeakKeyDictionary()


def _words_of(tokens: frozenset[str]) -> frozenset[str]:
    """``tokens`` without the compounds whose parts are among them (as they are, or stemmed: "deprec")."""
    def parts_in(t: str) -> bool:
        return all(any(q != t and p.startswith(q) for q in tokens) for p in t.split("-") if p)
    return frozenset(t for t in tokens if not ("-" in t and parts_in(t)))


def titled(index: Any, term: str) -> list[_Passage]:
    """The opening passages of the documents titled by ``term`` (their first line, a ``#`` heading or a title
    line, or their front matter's ``title`` says the term, give or take one word: "Dispatcher", "Class: Client",
    "package-lock.json"). Titles are read once per index size and kept beside the index."""
    rows = getattr(index, "rows", None)
    if not rows:
        return []
    tok = index.tokenizer
    cached = _TITLES.get(index)
    if cached is None or cached[0] != len(rows):
        by_title: dict[frozenset[str], list[int]] = {}
        for i, row in enumerate(rows):
            if not chunk_is_first(row.chunk_id):
                continue
            line = row.text.lstrip().split("\n", 1)[0].strip().lstrip("#").strip()
            meta = row.fields.get("title")  # front matter's title (its first line is then a section heading)
            for title in {line, meta.strip() if isinstance(meta, str) else ""}:
                if 0 < len(title) <= 120:
                    by_title.setdefault(frozenset(tok(title)), []).append(i)
        cached = (len(rows), by_title)
        _TITLES[index] = cached
    want = set(tok(term))
    if not want:
        return []
    alive = getattr(getattr(index, "bm25", None), "alive", None)
    # A compound token beside its parts ("npm-run-script" with npm, run, script) is not one more word; a page
    # titled by the term exactly comes before one with a word more ("npm-install" before "npm-install-test").
    out: dict[int, int] = {}  # row -> the title's words beyond the term
    for title, ids in cached[1].items():
        if not want <= title:
            continue
        extra = len(_words_of(title) - want)
        if extra <= 1:
            out.update((i, extra) for i in ids if alive is None or (i < len(alive) and alive[i]))
    return [_Passage(rows[i].chunk_id, rows[i].text) for i in sorted(out, key=lambda i: (out[i], i))[:2]]


def select(question: str, hits: Sequence[Any], index: Any, n: int, query_vector: np.ndarray | None,
           lexicon: Any = None, search: Callable[[str], Sequence[Any]] | None = None) -> Selection:
    """Choose up to ``n`` units of the top ``hits`` (retrieval.index.Hit, best first) for ``question``.

    With ``search`` (the fused search, same filter), a second hop: the question with the best sentence of the
    top passage (the bridge) is searched again, and up to ``HOP_PASSAGES`` passages it finds that the first
    search did not rank near the top join the candidates."""
    # The passages the fusion ranks first, and any that BM25 or the dense list ranks first: both text engines
    # agreeing on a passage is evidence the graph list's order below it must not hide from the answer.
    top = list(hits[:PASSAGES]) + [h for h in hits[PASSAGES:] if 1 in (getattr(h, "sparse_rank", None),
                                                                        getattr(h, "dense_rank", None))]
    term = asked_term(question)
    pages = titled(index, term) if term else []
    sides = compared_terms(question) if term is None else None
    side_pages = [titled(index, t) for t in sides] if sides else [[], []]
    tasks = task_pages(index, question) if term is None and sides is None else []
    if pages or sides or tasks:
        # "What is X?": the page titled X is read first, wherever the search ranked it; "X vs Y?": both pages;
        # "How do I run a script?": the page titled by the task ("npm-run-script").
        have = {h.chunk_id for h in top}
        first = [p for p in pages + side_pages[0] + side_pages[1] + tasks if p.chunk_id not in have]
        top = list({p.chunk_id: p for p in first}.values()) + top
    pool = _Pool([], [], set(), frozenset(p.chunk_id for p in pages),
                 (frozenset(p.chunk_id for p in side_pages[0]), frozenset(p.chunk_id for p in side_pages[1])),
                 frozenset(p.chunk_id for p in tasks))
    pool.add(top, 0)
    _bound(pool, question, index)
    read = [h.chunk_id for h in top]
    if not pool.units:
        return Selection((), None, tuple(read))
    scored = _score(question, pool, index, query_vector, lexicon)
    # The chain of hops: the bridge (the best unit naming the question's entities, else the top passage's best),
    # then, hop by hop, the best unit of a passage not yet in the chain, by its score and by how well it names
    # what the previous link adds (that passage may be one the first search already ranked high, or one the
    # hop's own search found). A link joins only when it bears on the question about as well as the rest that
    # is kept: a passage a hop query found by a link's incidental words must not pad the answer.
    at = _bridge(pool, scored)
    chain: list[Unit] = []
    link = pool.units[at] if at is not None else None
    for step in range(HOPS):
        if link is None:
            break
        more = [] if search is None else [
            h for h in search(_hop_query(question, link.text, lexicon)) if h.chunk_id not in read][:HOP_PASSAGES]
        if more:
            pool.add(more, 1 + step)  # ranked just below the passages the chain came from
            _bound(pool, question, index, link.text, keep=[*chain, link])
            read += [h.chunk_id for h in more]
        scored = _score(question, pool, index, query_vector, lexicon, link.text, link.chunk_id)
        if not chain:
            at = _bridge(pool, scored)
            if at is None:
                break
            chain.append(pool.units[at])
        if len(chain) >= n:
            break
        used = {u.chunk_id for u in chain}
        score = scored.score
        mine = [i for i, u in enumerate(pool.units) if u.chunk_id not in used and scored.relevant[i]]
        nxt = max(mine, key=lambda i: (score[i] + scored.hop[i], -i)) if mine else None
        if nxt is None or score[nxt] + scored.hop[nxt] < HOP_KEEP_SHARE * float(score.max()):
            break
        chain.append(pool.units[nxt])
        link = pool.units[nxt]
    if not chain and at is not None:
        chain.append(pool.units[at])
    units, score = pool.units, scored.score
    kind = wanted(question)
    if kind in ("number", "date") and not scored.holds.any():
        return Selection((), kind, tuple(read))
    position = {u: i for i, u in enumerate(units)}
    chosen = [position[u] for u in chain if u in position]
    if asks_why(question) and chosen:
        # The sentence after the one that names the event, in its passage, explains it more often than not; a
        # candidate that says "because" or "due to" counts as explaining too.
        first = units[chosen[0]]
        after = [i for i, u in enumerate(units) if u.chunk_id == first.chunk_id and u.start >= first.end
                 and u.kind == "sentence"] if first.kind == "sentence" else []
        if after:
            chosen.insert(1, min(after, key=lambda i: units[i].start))
        score = score.copy()
        bonus = WHY_CAUSE_BONUS * float(score.max())  # of the best score before any bonus, for every candidate
        for i, u in enumerate(units):
            if scored.relevant[i] and _CAUSE.search(u.text):
                score[i] += bonus
    if scored.vecs is not None:
        sim = scored.vecs @ scored.vecs.T
    else:
        sim = term_similarity([index.tokenizer(u.text) for u in units])
    best = float(score.max())
    eligible = score >= KEEP_SHARE * best
    for i in chosen:
        eligible[i] = True
    order = mmr(score, sim, n, lam=0.75, eligible=eligible, start=chosen, max_similarity=DUPLICATE)
    return Selection(tuple(units[i] for i in order), None, tuple(read))


def term_similarity(token_lists: list[list[str]]) -> np.ndarray:
    """Cosine similarity of token lists as term-count vectors (redundancy between quoted units)."""
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
