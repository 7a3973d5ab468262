"""The entity lexicon: the names the index knows, with how many chunks mention each, and the names a question holds.

A question links an entity when one of its spans, tried longest first over :func:`core.text.spans.words` (a CJK
character is a word, so a Chinese name is found inside a run of characters), has the same key as a known name
(:func:`core.text.keys.normalize_name`, CJK characters closed up); in a Polish question each span is also tried
in its base form. The router reads it as evidence, the graph walk seeds from it, and the reader scores with it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from core.text import spans
from core.text.keys import normalize_name
from core.text.language import detect_language
from core.records import Entity, GraphSnapshot
from core.text.lemma import BASE_FORM_TYPES, forms, polish_name
from core.text.spans import word_count


@dataclass(frozen=True, slots=True)
class KnownEntity:
    name: str
    type: str
    chunks: int
    base: str = ""  # the name's base form when it is another (a Polish name, keyed by it: see polish_bases)


def polish_bases(entities: Iterable[Entity], polish: Callable[[str], bool]) -> dict[str, str]:
    """Name -> base form (:func:`core.text.lemma.polish_name`) of each entity that a Polish chunk mentions
    (``polish``: whether a chunk id is one) and whose base form is another. A Polish document's names are merged by
    their base forms but named as the text writes them (:func:`extraction.resolution.resolve`: "Zjednoczone
    Królestwo", not its words lemmatized one by one), so a question finds such an entity by either form."""
    out: dict[str, str] = {}
    for e in entities:
        if e.type in BASE_FORM_TYPES and any(polish(c) for c in e.chunk_ids):
            base = polish_name(e.name)
            if base != e.name:
                out[e.name] = base
    return out


def polish_chunks(index: Any) -> Callable[[str], bool]:
    """Whether a chunk id is one of a loaded chunk index's Polish rows (a retrieval.index.ChunkIndex)."""
    rows, row_of = index.rows, index.by_id
    return lambda cid: (r := row_of.get(cid)) is not None and rows[r].language == "pl"


def lexicon_for(snapshot: GraphSnapshot, index: Any) -> "EntityLexicon":
    """The names the index (a retrieval.index.ChunkIndex) knows, each with how many chunks mention it and its
    base form where a question may give that (:func:`polish_bases`)."""
    bases = polish_bases(snapshot.entities, polish_chunks(index))
    return EntityLexicon([KnownEntity(e.name, e.type, len(e.chunk_ids), bases.get(e.name, ""))
                          for e in snapshot.entities], len(index))


_ARTICLE = re.compile(r"^(?:a|an|the)\s+(?=\S)")  # lower case: "The Hague" keeps its article


def as_written(span: str) -> str:
    """The question's words that named an entity, as a reason shows them: without the sentence's full stop
    ("Mercer.") or a leading article ("the registry", which names "registry": names are matched without one)."""
    return _ARTICLE.sub("", span.rstrip(".'’")) or span


def long_enough(key: str) -> bool:
    """Whether a normalized name is long enough to be linked by itself: three letters, or two words. Length is
    counted in :func:`core.text.spans.words`, where a character of a script written without spaces (Chinese,
    Japanese, Korean) is a word, so 香港 (two words) is a name while "US" or a lone 港 is too short to tell from
    the words around it."""
    return len(key) >= 3 or word_count(key) >= 2


# What saved keys were made with: a lexicon or walk saved under another reads its names again. Raise KEYS_VERSION
# when normalize_name, walk_key, spans.closed or polish_name change what they give; the Unicode data and the
# Polish dictionary are named here (a Python or simplemma upgrade).
KEYS_VERSION = 2  # 2: polish_name gives a base form to names the dictionary does not know


def keys_made_with() -> str:
    from importlib.metadata import PackageNotFoundError, version
    import unicodedata

    try:
        lemmas = version("simplemma")
    except PackageNotFoundError:
        lemmas = "none"
    from core.text.polish_endings import TABLE

    endings = hashlib.blake2b(TABLE.read_bytes(), digest_size=6).hexdigest()  # the guessed base forms' rules
    return f"keys {KEYS_VERSION}, unicode {unicodedata.unidata_version}, simplemma {lemmas}, endings {endings}"


def _key(name: str, kind: str) -> str:
    """A name's key in the lexicon: :func:`normalize_name`, CJK characters closed up (:func:`spans.closed`)."""
    return spans.closed(normalize_name(name, kind))


class EntityLexicon:
    """Normalized entity names known to the index, with how many chunks mention each."""

    def __init__(self, entities: Sequence[KnownEntity], total_chunks: int) -> None:
        self.total_chunks = max(1, total_chunks)
        self.by_key: dict[str, KnownEntity] = {}
        for e in entities:
            for key in {_key(e.name, e.type), _key(e.base, e.type)} if e.base else (_key(e.name, e.type),):
                if long_enough(key) and (key not in self.by_key or self.by_key[key].chunks < e.chunks):
                    self.by_key[key] = e
        self.max_words = max((word_count(k) for k in self.by_key), default=1)
        self.entities = list({id(e): e for e in self.by_key.values()}.values())  # each once (a name, its base form)
        # name -> base form (polish_bases) of the names it knows (what it saves, so a loaded lexicon has the same)
        self.bases = {e.name: e.base for e in self.entities if e.base}

    def __len__(self) -> int:
        return len(self.entities)

    def find(self, question: str) -> list[KnownEntity]:
        return [e for _, e in self.find_spans(question)]

    def find_spans(self, question: str) -> list[tuple[str, KnownEntity]]:
        """The entities the question names, each once, with the question's words that named it first (the
        entity may be written otherwise: "packages" names "--package" by its normalized name). Spans are tried
        longest first over :func:`core.text.spans.words`, so a Chinese name is found inside a run of characters; in a
        Polish question each span is also tried in its base form (:func:`core.text.lemma.forms`)."""
        words = spans.words(question)
        language = detect_language(question)
        found: dict[str, tuple[str, KnownEntity]] = {}
        i = 0
        while i < len(words):
            for n in range(min(self.max_words, len(words) - i), 0, -1):
                span = spans.join(words[i:i + n])
                hit = next((h for form in forms(span, language)
                            for h in (self.by_key.get(_key(form, "name")), self.by_key.get(_key(form, "identifier")))
                            if h), None)
                if hit:
                    found.setdefault(hit.name, (as_written(span), hit))
                    i += n - 1
                    break
            i += 1
        return list(found.values())

    def to_json(self) -> dict[str, Any]:
        """The lexicon with its keys, so that loading it normalizes no name again."""
        number = {id(e): i for i, e in enumerate(self.entities)}
        return {"total_chunks": self.total_chunks, "max_words": self.max_words, "keys_made_with": keys_made_with(),
                "entities": [[e.name, e.type, e.chunks] + ([e.base] if e.base else []) for e in self.entities],
                "keys": {k: number[id(e)] for k, e in self.by_key.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "EntityLexicon":
        """The lexicon :meth:`to_json` wrote; one written without its keys (an older generation's) or with keys
        made otherwise (:func:`keys_made_with`) is keyed again. Raises ValueError when its parts do not fit
        together."""
        entities = [KnownEntity(*row) for row in data["entities"]]
        if "keys" not in data or data.get("keys_made_with") != keys_made_with():
            return cls(entities, data["total_chunks"])
        lexicon = cls([], data["total_chunks"])
        if any(not isinstance(i, int) or not 0 <= i < len(entities) for i in data["keys"].values()):
            raise ValueError(f"a lexicon key names no entity of the {len(entities)}")
        lexicon.by_key = {k: entities[i] for k, i in data["keys"].items()}
        lexicon.max_words = int(data["max_words"])
        lexicon.entities = list({id(e): e for e in lexicon.by_key.values()}.values())
        lexicon.bases = {e.name: e.base for e in lexicon.entities if e.base}
        return lexicon

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), ensure_ascii=False))

    @classmethod
    def load(cls, path: Path) -> "EntityLexicon":
        if not path.exists():
            return cls([], 1)
        return cls.from_json(json.loads(path.read_text()))
