"""Which extractor made a document's stored extraction: a fingerprint of everything that decides it.

Offline, that is :data:`extraction.offline.EXTRACTOR_VERSION`, a number bumped by hand in the change that alters
what the offline extractor (or the rules every stored extraction goes through: junk, markup, titles) outputs.
With an LLM it is that number, the model's name and a digest of each prompt file the extractor renders (the
override in ``llm.prompts_dir`` when there is one, else the packaged file). The response cache keys a call by
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
from pathlib import Path
from typing import Any, Literal

from core.records import stable_hash
from core.settings import StrataSettings
from extraction.offline import EXTRACTOR_VERSION
from prompts import load_prompt

# The prompts the LLM extractor renders (extraction/llm_extractor.py); a test checks that it loads no other.
EXTRACTION_PROMPTS: tuple[str, ...] = ("extract_entities", "passage", "glean", "repair_json", "example_prose",
                                       "example_technical")


@dataclass(frozen=True, slots=True)
class ExtractorFingerprint:
    """What an extraction was made by: mode, rules version, and in LLM mode the model and prompt digests."""

    mode: Literal["offline", "llm"]
    version: int
    model: str = ""
    prompts: tuple[tuple[str, str], ...] = ()  # (prompt name, digest of its file), LLM mode only

    @property
    def digest(self) -> str:
        """A stable digest of every field (what a document's revision includes)."""
        return stable_hash(json.dumps(self.to_json(), sort_keys=True), size=8)

    def label(self) -> str:
        """How a person is told which extractor this is: ``offline 7``, ``llm qwen2.5 (prompts 1a2b3c4d, rules 7)``."""
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
        if not isinstance(version, int) or not isinstance(model, str) or not isinstance(prompts, dict):
            raise ValueError("not an extractor fingerprint")
        return cls(data["mode"], version, model, tuple(sorted((str(k), str(v)) for k, v in prompts.items())))


def _file_digest(path: Path) -> str:
    return hashlib.blake2b(path.read_bytes(), digest_size=8).hexdigest()


def fingerprint_of(settings: StrataSettings) -> ExtractorFingerprint:
    """The fingerprint of the extractor these settings run."""
    if settings.llm_mode != "llm":
        return ExtractorFingerprint("offline", EXTRACTOR_VERSION)
    prompts_dir = settings.llm.prompts_dir
    prompts = tuple(sorted((name, _file_digest(load_prompt(name, prompts_dir).path)) for name in EXTRACTION_PROMPTS))
    return ExtractorFingerprint("llm", EXTRACTOR_VERSION, settings.llm.model, prompts)
