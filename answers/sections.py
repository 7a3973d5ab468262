"""The corpus's sections: its top folders, each with its share of the text and its largest pages. An answer about the
whole corpus names them (:func:`answers.global_answer.global_answer`), so that "What are the main topics?" of a
documentation site names the site's parts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Sequence

from answers.messages import say, smaller_ones
from retrieval.index import ChunkIndex

SECTIONS_SHOWN = 8  # the largest sections named in an answer (the rest are counted)
SECTION_PAGES = 3  # the largest pages named beside each section


@dataclass(frozen=True, slots=True)
class Section:
    """A top folder of the corpus: its name, its share of the live chunks, and its largest pages' titles."""

    name: str
    share: float
    pages: tuple[str, ...]


def corpus_sections(index: ChunkIndex) -> list[Section]:
    """The corpus's top folders, largest share of the live chunks first (ties by name, the top-level pages last),
    each with its largest pages (by chunks, ties by id) named by their titles, or their file names where they
    have none. Documents at the top of the folder are one section. A corpus in one folder has no sections."""
    alive = index.bm25.alive
    chunks: Counter[str] = Counter()
    docs: dict[str, Counter[str]] = {}
    titles: dict[str, str] = {}
    for i, r in enumerate(index.rows):
        if i >= len(alive) or not alive[i]:
            continue
        path = PurePosixPath(str(r.fields.get("path") or r.document_id))
        name = path.parts[0] if len(path.parts) > 1 else ""
        chunks[name] += 1
        docs.setdefault(name, Counter())[r.document_id] += 1
        title = r.fields.get("title")
        titles.setdefault(r.document_id, " ".join(title.split()) if isinstance(title, str) and title.strip()
                          else path.stem)
    if len(chunks) < 2:
        return []
    total = sum(chunks.values())
    out = []
    for name, n in sorted(chunks.items(), key=lambda kv: (-kv[1], kv[0] == "", kv[0])):
        largest = sorted(docs[name].items(), key=lambda kv: (-kv[1], kv[0]))[:SECTION_PAGES]
        out.append(Section(name, n / total, tuple(titles[d] for d, _ in largest)))
    return out


def describe_sections(sections: Sequence[Section], question: str) -> str:
    """The sections as a line of the answer to ``question`` (in its language): each with its share of the text and
    its largest pages."""
    if not sections:
        return ""
    shown = [say("section", question, name=s.name or say("top_level", question), share=f"{s.share:.0%}",
                 pages=say("pages", question).join(s.pages)) for s in sections[:SECTIONS_SHOWN]]
    more = smaller_ones(len(sections) - len(shown), question)
    return say("sections", question, sections=say("list", question).join(shown), more=more)
