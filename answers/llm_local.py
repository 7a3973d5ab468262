"""Local answers written by an LLM from the reader's candidates, every claim cited by chunk id.

The reader (:mod:`answers.reader`) reads the question's ranked passages as for an offline answer; its best
candidate units (whole sentences, lists, tables and code blocks, best first) are given to the LLM as
``[chunk_id] text`` excerpts (``prompts/local_answer.txt``), within a token budget. A question the reader
declines is answered as offline, without a call: what came closest, and where. The answer is asked for as
JSON claims, each a sentence and the chunk id it comes from, with the ids limited to the given ones by the
schema (an endpoint that enforces schemas cannot cite anything else); streamed, each claim is passed on as soon
as it is complete. Citations are checked against the passages given either way: an id that was not given is
removed and counted in ``Answer.dropped_citations`` (a plain-text answer from an endpoint that ignores the
format is read for bracketed ids the same way); only given chunks are cited. A failed call falls back to the offline extractive
answer, which says so. A question the corpus does not cover is answered as offline, without a call.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, Callable, Literal, Sequence

from pydantic import BaseModel, Field, create_model

from core.llm_client import LLMClient, LLMError, estimate_tokens, parse_json_object
from prompts import load_prompt
from answers.answer import Answer, Citation, answer_from, read_hits, source_of
from answers.messages import say
from answers.reader import Reader
from answers.units import Unit
from retrieval.index import ChunkIndex
from routing.router import RouteDecision

ANSWER_MAX_TOKENS = 400  # 150 words and their citations; a runaway answer is cut here
PASSAGE_TOKENS = 2000  # the passages shown to the LLM, best first
_CITE = re.compile(r"\[([^\[\]\n]{1,400})\]")


def passages_block(units: Sequence[Unit], token_budget: int) -> tuple[str, list[str]]:
    """The excerpts shown to the LLM, best first, within ``token_budget``, and their chunk ids (each once)."""
    lines, ids, used = [], [], 0
    for unit in units:
        cost = estimate_tokens(unit.text) + 8
        if lines and used + cost > token_budget:
            break
        lines.append(f"[{unit.chunk_id}] {unit.text.strip()}")
        ids.append(unit.chunk_id)
        used += cost
    return "\n\n".join(lines), list(dict.fromkeys(ids))


def check_citations(text: str, given: list[str]) -> tuple[str, list[str], int]:
    """``text`` with every bracketed id that is not among ``given`` removed, the given ids it cites (in order of
    first citation) and how many cited ids were dropped."""
    allowed = set(given)
    cited: dict[str, None] = {}
    dropped = 0

    def keep(m: re.Match[str]) -> str:
        nonlocal dropped
        ids = [p.strip() for p in re.split(r"[,;]\s*", m.group(1)) if p.strip()]
        good = [i for i in ids if i in allowed]
        dropped += len(ids) - len(good)
        for i in good:
            cited.setdefault(i, None)
        return "[" + ", ".join(good) + "]" if good else ""

    cleaned = _CITE.sub(keep, text)
    cleaned = re.sub(r"[ \t]+([.,;:])", r"\1", cleaned)
    return re.sub(r"[ \t]{2,}", " ", cleaned).strip(), list(cited), dropped


class _Claim(BaseModel):
    text: str
    chunk_id: str


class _Claims(BaseModel):
    claims: list[_Claim] = Field(default_factory=list)


def claims_schema(given: list[str]) -> type[BaseModel]:
    """The answer's schema with each claim's ``chunk_id`` limited to the given ids (an enum), so an endpoint
    that enforces schemas cannot cite anything else."""
    ids = tuple(dict.fromkeys(given))
    claim = create_model("_Claim", text=(str, Field(..., json_schema_extra={"maxLength": 300})),
                         chunk_id=(Literal[ids], ...))  # type: ignore[valid-type]
    return create_model("_LocalAnswer", claims=(list[claim], Field(  # type: ignore[valid-type]
        default_factory=list, json_schema_extra={"maxItems": 4})))  # four claims, as the prompt asks


_CLAIM = re.compile(r'\{\s*"text"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"chunk_id"\s*:\s*("(?:[^"\\]|\\.)*")\s*\}')


class ClaimStream:
    """Turns the deltas of a streamed JSON answer into text: each claim is passed on as ``sentence [id]`` as soon
    as its object is complete; an answer that is not JSON (an endpoint ignoring the format) is passed on as it
    comes."""

    def __init__(self, on_delta: Callable[[str], None], given: list[str]) -> None:
        self.on_delta = on_delta
        self.given = set(given)
        self.buffer = ""
        self.sent = 0  # claims passed on
        self.plain: bool | None = None

    def feed(self, delta: str) -> None:
        self.buffer += delta
        if self.plain is None and self.buffer.strip():
            self.plain = not self.buffer.lstrip().startswith("{")
        if self.plain:
            self.on_delta(delta if self.buffer.strip() != delta.strip() else delta.lstrip())
            return
        found = _CLAIM.findall(self.buffer)
        for text, cid in found[self.sent:]:
            cid = json.loads(cid)
            line = json.loads(text).strip() + (f" [{cid}]" if cid in self.given else "")
            self.on_delta(("\n" if self.sent else "") + line)
            self.sent += 1


def render_claims(claims: _Claims | BaseModel, given: list[str]) -> tuple[str, list[str], int]:
    """The answer's text (one claim a line, each ending with its chunk id), the given ids cited and how many
    cited ids were not given (those claims are kept without the id)."""
    allowed, cited, dropped, lines = set(given), {}, 0, []
    for c in getattr(claims, "claims", []):
        text = c.text.strip()
        if not text:
            continue
        if c.chunk_id in allowed:
            cited.setdefault(c.chunk_id, None)
            lines.append(f"{text} [{c.chunk_id}]")
        else:
            dropped += 1
            lines.append(text)
    return "\n".join(lines), list(cited), dropped


def llm_local_answer(question: str, route: RouteDecision, index: ChunkIndex, client: LLMClient, top_k: int,
                     n_sentences: int, metadata_filter: dict | None = None, *, lexicon: Any = None,
                     reader: Reader | None = None, token_budget: int = PASSAGE_TOKENS,
                     prompts_dir=None,  # type: ignore[no-untyped-def]
                     on_delta: Callable[[str], None] | None = None) -> Answer:
    """The LLM-written local answer (see the module docstring). With ``on_delta`` the answer is streamed."""
    _, reading = read_hits(question, index, top_k, n_sentences, metadata_filter, lexicon=lexicon, reader=reader)
    if reading is None:
        return Answer(question, route, "offline", say("no_match", question), (), covered=False)
    offline = answer_from(question, route, index, reading)
    if not offline.covered:  # declined: no call, the offline answer says why and what came closest
        return offline
    block, given = passages_block(reading.ranked or reading.units, token_budget)
    schema = claims_schema(given)
    prompt = load_prompt("local_answer", prompts_dir)
    messages = [{"role": "user", "content": prompt.render(question=question, passages=block)}]
    stream = ClaimStream(on_delta, given) if on_delta is not None else None
    try:
        if stream is None:
            text = client.complete("local_answer", messages, schema=schema, max_tokens=ANSWER_MAX_TOKENS)
        else:
            for delta in client.stream("local_answer", messages, max_tokens=ANSWER_MAX_TOKENS, schema=schema):
                stream.feed(delta)
            text = stream.buffer
    except LLMError as exc:
        note = f"The LLM could not answer ({exc}); the passages say:\n\n"
        if on_delta is not None:
            on_delta(note + offline.text)
        return replace(offline, text=note + offline.text)
    try:
        cleaned, cited, dropped = render_claims(parse_json_object(text, _Claims, "answer schema"), given)
        client.usage.add("local_answer", schema_valid=1)
    except ValueError:  # not the JSON asked for: read the bracketed ids of a plain answer
        cleaned, cited, dropped = check_citations(text, given)
        client.usage.add("local_answer", repaired=1)
    if stream is not None and not stream.plain and stream.sent < cleaned.count("\n") + 1 and cleaned:
        stream.on_delta(("\n" if stream.sent else "") + "\n".join(cleaned.split("\n")[stream.sent:]))
    citations = tuple(Citation(cid, source_of(index, cid)) for cid in cited)
    return Answer(question, route, "llm", cleaned, citations, dropped_citations=dropped,
                  confidence=offline.confidence)
