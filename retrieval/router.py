"""The query router: local (RRF chunk search) or global (community reports, map-reduce), with its reasons.

It reads the question and the index. Identifiers (error codes, config keys, versions, service names) and
entities known to the index that are specific (mentioned in a small share of chunks) point to a local
question; cues about themes, trends or the corpus as a whole point to a global one. A cue word alone does not
decide: "which services time out across regions with HTTP 504" names an identifier and goes local.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Sequence

from extraction.offline import find_entities
from extraction.resolution import normalize_name

Route = Literal["local", "global"]

_STRONG_GLOBAL = [
    r"\bacross (?:all|the|every|each|our|these|those)\b", r"\boverall\b", r"\b(?:main|key|major|central|recurring|common|dominant) (?:themes?|topics?|ideas?|issues?|patterns?|trends?|problems?|lessons?|conflicts?|messages?)\b",
    r"\bthemes?\b", r"\btrends?\b", r"\bthe (?:whole|entire) (?:corpus|story|book|collection|dataset|set|system|novel|text|document|documents)\b",
    r"\bas a whole\b", r"\bbig picture\b", r"\bhigh[- ]level\b", r"\bsummari[sz]e\b", r"\bsummary of\b", r"\bin general\b",
    r"\b(?:all|every) (?:the )?(?:services|documents|incidents|teams|systems|notes|chapters|characters|components)\b",
    r"\bwhat (?:is|are) (?:this|the|these) (?:corpus|story|book|collection|dataset|novel|novella|notes|documents) about\b", r"\bmost (?:common|frequent|important)\b",
    r"\bcorpus\b", r"\bthroughout\b",
]
_WEAK_GLOBAL = [r"\bpatterns?\b", r"\bgenerally\b", r"\btypically\b", r"\boverview\b", r"\bwhich (?:services|teams|systems)\b", r"\bcompare\b", r"\bevolv", r"\blessons?\b"]
_LOCAL_CUES = [r"^\s*(?:who|when|where) (?:is|was|did|does|are|were)\b", r"\bwhat (?:is|was|does) (?:the )?(?:value|default|error|status|version|port)\b", r"\"[^\"]+\"|“[^”]+”|`[^`]+`", r"\bhow (?:do|does|did) i\b", r"\bexact(?:ly)?\b"]
_IDENTIFIER_TYPES = {"error_code", "config_key", "version", "identifier", "service", "constant"}


@dataclass(frozen=True, slots=True)
class KnownEntity:
    name: str
    type: str
    chunks: int


@dataclass(frozen=True, slots=True)
class RouteDecision:
    route: Route
    reasons: tuple[str, ...]
    local_score: float
    global_score: float
    entities: tuple[str, ...] = field(default=())
    identifiers: tuple[str, ...] = field(default=())
    overridden: bool = False

    def to_dict(self) -> dict[str, object]:
        return {"route": self.route, "reasons": list(self.reasons), "local_score": self.local_score,
                "global_score": self.global_score, "entities": list(self.entities),
                "identifiers": list(self.identifiers), "overridden": self.overridden}


class EntityLexicon:
    """Normalized entity names known to the index, with how many chunks mention each."""

    def __init__(self, entities: Sequence[KnownEntity], total_chunks: int) -> None:
        self.total_chunks = max(1, total_chunks)
        self.by_key: dict[str, KnownEntity] = {}
        for e in entities:
            key = normalize_name(e.name, e.type)
            if len(key) >= 3 and (key not in self.by_key or self.by_key[key].chunks < e.chunks):
                self.by_key[key] = e
        self.max_words = max((k.count(" ") + 1 for k in self.by_key), default=1)

    def find(self, question: str) -> list[KnownEntity]:
        words = re.findall(r"[\w.'’\-]+", question)
        found: dict[str, KnownEntity] = {}
        i = 0
        while i < len(words):
            for n in range(min(self.max_words, len(words) - i), 0, -1):
                key = normalize_name(" ".join(words[i:i + n]), "name")
                hit = self.by_key.get(key) or self.by_key.get(normalize_name(" ".join(words[i:i + n]), "identifier"))
                if hit:
                    found[hit.name] = hit
                    i += n - 1
                    break
            i += 1
        return list(found.values())

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"total_chunks": self.total_chunks,
                                    "entities": [[e.name, e.type, e.chunks] for e in self.by_key.values()]},
                                   ensure_ascii=False))

    @classmethod
    def load(cls, path: Path) -> "EntityLexicon":
        if not path.exists():
            return cls([], 1)
        data = json.loads(path.read_text())
        return cls([KnownEntity(n, t, c) for n, t, c in data["entities"]], data["total_chunks"])


def route_question(question: str, lexicon: EntityLexicon, has_reports: bool = True) -> RouteDecision:
    q = question.strip()
    low = q.lower()
    reasons: list[str] = []
    strong = [p for p in _STRONG_GLOBAL if re.search(p, low)]
    weak = [p for p in _WEAK_GLOBAL if re.search(p, low)]
    g_score = 2.0 * len(strong) + 0.75 * len(weak)
    if strong or weak:
        cues = [re.search(p, low).group(0) for p in strong + weak]  # type: ignore[union-attr]
        reasons.append("asks about the corpus as a whole: " + ", ".join(repr(c) for c in cues))
    idents = [f.name for f in find_entities(q) if f.type in _IDENTIFIER_TYPES]
    known = lexicon.find(q)
    l_score = 2.5 * len(idents)
    if idents:
        reasons.append("names identifiers: " + ", ".join(idents))
    specific, hubs = [], []
    for e in known:
        share = e.chunks / lexicon.total_chunks
        (hubs if share > 0.25 else specific).append(e)
    l_score += 1.5 * len(specific) + 0.4 * len(hubs)
    if specific:
        reasons.append("names specific entities in the index: " + ", ".join(e.name for e in specific))
    if hubs:
        reasons.append("names entities that run through much of the corpus: " + ", ".join(e.name for e in hubs))
    local_cues = [p for p in _LOCAL_CUES if re.search(p, low)]
    l_score += 1.0 * len(local_cues)
    if local_cues:
        reasons.append("phrased as a question about a specific fact")
    if not has_reports and g_score > l_score:
        reasons.append("no community reports are indexed, so the global route is unavailable")
        return RouteDecision("local", tuple(reasons), l_score, g_score, tuple(e.name for e in known), tuple(idents))
    route: Route = "global" if g_score > l_score else "local"
    if not reasons:
        reasons.append("no global cue: searching chunks directly")
    reasons.append(f"local score {l_score:.2f} vs global score {g_score:.2f} -> {route}")
    return RouteDecision(route, tuple(reasons), l_score, g_score, tuple(e.name for e in known), tuple(idents))


def forced(route: Route) -> RouteDecision:
    return RouteDecision(route, (f"route set by the caller: {route}",), 0.0, 0.0, overridden=True)
