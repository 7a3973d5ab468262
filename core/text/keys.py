"""How names are compared: a name's key (:func:`normalize_name`), the one the entity merge and the entity lexicon
match on, and the looser key the graph walk links and joins synonyms by (:func:`walk_key`)."""

from __future__ import annotations

import re
import unicodedata

from core.text.fold import fold
from core.text.script import has_cjk
from core.text.spans import closed


# The types of names read off capitals in prose (or a tagger): people, places, organizations, events. Only these
# are aliases of their longer forms in a document (extraction.aliases), and only these are judged by how the corpus
# uses their words before a question's words link them (retrieval.graph_walk); identifiers, services, error codes
# and concepts are found by their shape (a Chinese term aside: :func:`is_term`).
PROSE_NAME_TYPES = frozenset({"name", "person", "organization", "location", "geo", "event"})


def plain_word(name: str) -> bool:
    """Whether a name is one word of letters with no capital after its first (`main`, `Main`, `uv`; not
    `node_exporter`, `HTTPRoute` nor `API`): it may be a word of the language as well as a name, whatever code
    span it was found in, and no shape tells which; how the corpus uses it does
    (:meth:`retrieval.graph_walk.GraphWalk.share`)."""
    return name.isalpha() and name[1:].islower()


def is_term(name: str, type_: str) -> bool:
    """Whether an entity is a Chinese term: a concept written in a CJK script, a common noun the tagger found in
    prose (齿轮, 蒸汽机), not a name. Chinese has no capitals to tell the two apart: such a term is judged by how the
    corpus uses its words before a question's words link it, as a name is (retrieval.graph_walk)."""
    return type_ == "concept" and has_cjk(name)


# Types whose names drop a leading article and a plural s ("The Spirit" and "Spirit", "Ghosts" and "Ghost").
_NAME_TYPES = {"name", "person", "organization", "location", "geo", "concept", "event", "database", "service"}


def normalize_name(name: str, type_: str = "name") -> str:
    """A name's key: NFKC, case-folded, words joined by _ or - spaced, an abbreviation's dot, a possessive and
    outer punctuation dropped, and for name-like types a leading article and a simple plural s."""
    key = unicodedata.normalize("NFKC", name).casefold().replace("’", "'")
    key = re.sub(r"(?<=[^\W_])[_-]+(?=[^\W_])", " ", key)  # node_exporter, node-exporter: node exporter
    key = re.sub(r"(?<=[^\W\d_])\.(?=\s)", "", key)  # "Mr. Scrooge": mr scrooge
    key = re.sub(r"\s+", " ", key).strip(" \t\"'“”‘’.,;:!?()[]{}_-")
    key = re.sub(r"'s$", "", key)
    if type_.lower() in _NAME_TYPES:
        key = re.sub(r"^(?:the|a|an) (?=\S)", "", key)  # "The Spirit" and "Spirit" are one entity
    if type_.lower() in _NAME_TYPES and " " not in key[-4:]:
        last = key.rsplit(" ", 1)[-1]
        if len(last) > 3 and last.endswith("s") and not last.endswith(("ss", "us", "is", "os")) and last.isalpha():
            key = key[:-1]
    return key


_SEPARATORS = re.compile(r"[_\-‐‑‒–—/·]+")
_NOT_WORD = re.compile(r"[^\w\s]+")


def walk_key(name: str) -> str:
    """A name's key for linking and synonyms: :func:`normalize_name` (case, articles, possessives, plurals),
    folded (:func:`core.text.fold.fold`: accents dropped, "Aschenbrödel" = "Aschenbrodel"), underscores, hyphens
    and slashes as spaces and other punctuation dropped, and between CJK characters no space or name joiner
    (:func:`core.text.spans.closed`)."""
    key = fold(normalize_name(unicodedata.normalize("NFKC", name), "name"))
    key = _SEPARATORS.sub(" ", key)
    key = _NOT_WORD.sub("", key)
    return closed(" ".join(key.split()))
