"""Which extractor made a document's stored extraction: a fingerprint of everything that decides it.

Offline, that is :func:`rules_version`: a digest of what the offline extractor outputs on a fixed probe
(:mod:`extraction.probe`: prose, runbook notes, a documentation page in Markdown, Chinese and Polish text, rows
of a JSON Lines corpus, read as the loader reads them) and of the rule data it applies (its word lists and the
sentence splitter's abbreviation tables). A change to any rule that alters that output changes the fingerprint, with no number to
bump by hand. With an LLM it is that digest, the model's name and a digest of each prompt file the extractor
renders (the override in ``llm.prompts_dir`` when there is one, else the packaged file). The response cache keys a call by
the model and the rendered messages, so re-extracting after only the code changed costs no call, and after a
prompt changed only the calls that prompt makes.

An index run stores each document with a revision that includes the fingerprint's digest (see
:func:`strata.stages.revision`), so a document extracted under another fingerprint counts as changed and is
extracted again, whatever the run that extracted it left behind.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from core.records import Document, stable_hash
from core.settings import ChunkingSettings, ExtractionSettings, StrataSettings
from prompts import load_prompt

# The prompts the LLM extractor renders (extraction/llm_extractor.py); a test checks that it loads no other.
EXTRACTION_PROMPTS: tuple[str, ...] = ("extract_entities", "passage", "glean", "repair_json", "example_prose",
                                       "example_technical")


@dataclass(frozen=True, slots=True)
class ExtractorFingerprint:
    """What an extraction was made by: mode, rules version, and in LLM mode the model and prompt digests."""

    mode: Literal["offline", "llm"]
    version: str  # the offline rules' digest (:func:`rules_version`)
    model: str = ""
    prompts: tuple[tuple[str, str], ...] = ()  # (prompt name, digest of its file), LLM mode only

    @property
    def digest(self) -> str:
        """A stable digest of every field (what a document's revision includes)."""
        return stable_hash(json.dumps(self.to_json(), sort_keys=True), size=8)

    def label(self) -> str:
        """How a person is told which extractor this is: ``offline a7d8ed7a3ba8``, ``llm qwen2.5 (prompts 1a2b3c4d, rules a7d8ed7a3ba8)``."""
        if self.mode == "offline":
            return f"offline {self.version}"
        prompts = stable_hash(*(f"{name}={digest}" for name, digest in self.prompts), size=4)
        return f"llm {self.model} (prompts {prompts}, rules {self.version})"

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "version": self.version, "model": self.model,
                "prompts": {name: digest for name, digest in self.prompts}}

    @classmethod
    def from_json(cls, data: Any) -> "ExtractorFingerprint":
        """The fingerprint written by :meth:`to_json`; ValueError for anything else."""
        if not isinstance(data, dict) or data.get("mode") not in ("offline", "llm"):
            raise ValueError("not an extractor fingerprint")
        version, model, prompts = data.get("version"), data.get("model", ""), data.get("prompts", {})
        if not isinstance(version, (str, int)) or not isinstance(model, str) or not isinstance(prompts, dict):
            raise ValueError("not an extractor fingerprint")
        version = str(version)  # a workspace of the numbered versions reads as another extractor
        return cls(data["mode"], version, model, tuple(sorted((str(k), str(v)) for k, v in prompts.items())))


# The code and packages the offline extractor's output comes from: the digest of the probe's output is kept under a
# key made of these (in the user's cache folder), so it is computed once per installed version (about 7 s: it
# loads the Chinese tagger and the Polish dictionary), not on every run.
_RULE_CODE = ("extraction/*.py", "core/text/*.py", "core/text/*.json", "core/records.py")
_RULE_PACKAGES = ("jieba", "opencc", "simplemma", "markdown-it-py", "mdit-py-plugins")


def code_key() -> str:
    """A digest of the code and package versions the offline extractor's output (and its word counts) come from."""
    from importlib.metadata import PackageNotFoundError, version

    root = Path(__file__).resolve().parents[1]
    h = hashlib.blake2b(digest_size=8)
    for pattern in _RULE_CODE:
        for f in sorted(root.glob(pattern)):
            h.update(f.name.encode())
            h.update(f.read_bytes())
    for name in _RULE_PACKAGES:
        try:
            h.update(f"{name}={version(name)}".encode())
        except PackageNotFoundError:
            h.update(f"{name}=absent".encode())
    return h.hexdigest()


@lru_cache(maxsize=1)
def rules_version() -> str:
    """A digest of the offline extractor's output on :data:`extraction.probe.PROBE` and of its rule data, read from
    the cache when this code has computed it before."""
    import os

    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "strata" / "extractor-rules.json"
    key = code_key()
    try:
        known = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(known.get(key), str):
        return known[key]
    digest = probe_digest()
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({key: digest}), encoding="utf-8")
        tmp.replace(cache)
    except OSError:
        pass  # only a cache: computed again next time
    return digest


def probe_digest() -> str:
    """The digest itself: the offline extractor's output on the probe, and its rule data."""
    from core.text import cjk, junk, names, sentences
    from extraction import offline
    from extraction.chunking import chunk_documents
    from extraction.loader import document_from_row, document_from_text
    from extraction.probe import PROBE
    from extraction import wordlike

    docs: list[Document] = []
    for name, text in PROBE:
        if name.endswith(".jsonl"):
            docs += [document_from_row(line, name, n, "text") for n, line in enumerate(text.splitlines(), start=1)]
        else:
            docs.append(document_from_text(name, text))
    chunks = chunk_documents(docs, ChunkingSettings(chunk_tokens=64, overlap_tokens=8))
    words = wordlike.WordModel.of_texts(d.text for d in docs)
    result = offline.OfflineExtractor(ExtractionSettings(), words=words).extract(chunks)
    output = {
        "documents": [[d.text, sorted(d.metadata.items(), key=str)] for d in docs],
        "chunks": [[c.id, c.start, c.end] for c in chunks],
        "sentences": [sentences.split_sentences(c.text) for c in chunks],
        "extractions": [[[[e.name, e.type, e.description] for e in x.entities],
                         [[r.source, r.target, r.description] for r in x.relations]] for x in result.extractions],
    }
    # (named by module: a module that imports another's list under the same name would otherwise hide it)
    rules = {f"{module.__name__}.{name}": sorted(getattr(module, name)) for module in (junk, names, offline)
             for name in dir(module)
             if name.isupper() and isinstance(getattr(module, name), (frozenset, set, tuple, list))
             and all(isinstance(v, str) for v in getattr(module, name))}
    # (and their numbers: a share or a count the probe's output may not exercise, such as a share of the corpus's
    # documents, which a probe of a few documents never reaches)
    rules["numbers"] = {f"{module.__name__}.{name}": getattr(module, name)
                        for module in (junk, names, offline, wordlike, cjk) for name in dir(module)
                        if name.isupper() and not name.startswith("_") and type(getattr(module, name)) in (int, float)}
    rules["abbreviations"] = {k: [sorted(t) for t in v] for k, v in sentences._TABLES.items()}
    rules["tags"] = [sorted(cjk.NAME_TAGS.items()), sorted(cjk.NOUN_TAGS), sorted(cjk.TERM_TAGS),
                     sorted(cjk.FUNCTION_TAGS), sorted(cjk.SPAN_BREAK_TAGS)]
    return stable_hash(json.dumps([output, rules], ensure_ascii=False, sort_keys=True, default=str), size=6)


def _file_digest(path: Path) -> str:
    return hashlib.blake2b(path.read_bytes(), digest_size=8).hexdigest()


def fingerprint_of(settings: StrataSettings) -> ExtractorFingerprint:
    """The fingerprint of the extractor these settings run."""
    if settings.llm_mode != "llm":
        return ExtractorFingerprint("offline", rules_version())
    prompts_dir = settings.llm.prompts_dir
    prompts = tuple(sorted((name, _file_digest(load_prompt(name, prompts_dir).path)) for name in EXTRACTION_PROMPTS))
    return ExtractorFingerprint("llm", rules_version(), settings.llm.model, prompts)
