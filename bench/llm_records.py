"""What the structured answers of a ``bench.llm`` run that were not valid as they came looked like.

Every answer a run received is in its response cache (``<data-dir>/llm_cache.sqlite``; only the answers of an
unusable call are dropped from it). Each cached answer is parsed strictly against the run's structured schemas
(extraction, merge, report); one that matches none is listed with its generated token count, the parse error
and its last characters, and a cause: ``cut at max tokens`` when it used (nearly) all the tokens its call could
take, else the schema check that failed.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from communities.llm_reports import REPORT_MAX_TOKENS, _Report
from extraction.descriptions import MERGE_MAX_TOKENS, _Merged
from extraction.llm_extractor import _Payload
from core.structured import parse_strict

SCHEMAS = ((_Payload, "extraction schema"), (_Merged, "merge schema"), (_Report, "report schema"))


@dataclass(frozen=True, slots=True)
class BadAnswer:
    output_tokens: int
    error: str
    tail: str
    cause: str

    def to_dict(self) -> dict[str, object]:
        return {"output_tokens": self.output_tokens, "cause": self.cause, "error": self.error, "tail": self.tail}


def _errors(text: str) -> list[str] | None:
    """None when ``text`` is valid against one of the schemas, else each schema's error."""
    errors = []
    for model, what in SCHEMAS:
        try:
            parse_strict(text, model, what)
            return None
        except ValueError as exc:
            errors.append(str(exc))
    return errors


def bad_answers(cache: Path, extract_limits: set[int]) -> list[BadAnswer]:
    """The cached answers valid against no structured schema; ``extract_limits``: the extraction calls' max
    tokens (the other kinds of call have fixed ones)."""
    limits = extract_limits | {MERGE_MAX_TOKENS, REPORT_MAX_TOKENS}
    db = sqlite3.connect(cache)
    try:
        rows = db.execute("SELECT text, output_tokens FROM responses").fetchall()
    finally:
        db.close()
    out = []
    for text, tokens in rows:
        errors = _errors(text)
        if errors is None or not text.lstrip().startswith("{"):  # a route or a plain answer: not structured here
            continue
        cut = any(limit - 2 <= tokens <= limit for limit in limits)
        invalid_json = all(e.startswith("invalid JSON") for e in errors)
        cause = "cut at max tokens" if cut and invalid_json else (
            "invalid JSON" if invalid_json else "schema check: " + min(errors, key=len))
        out.append(BadAnswer(tokens, errors[0][:200], text[-120:], cause))
    return out
