"""Global answers with an LLM: map over the community reports of one level, reduce within a token budget.

Map: the reports most relevant to the question (ranked as in the offline path) are each asked for the points
that help answer it, with a 0-100 score. Reduce: the best points, each tagged with its report and chunks, go to
one final prompt, whose answer can be streamed. The answer cites the chunks of the reports whose points were
used.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

from pydantic import BaseModel, Field

from core.llm_client import LLMClient, LLMError, ParseFailure, estimate_tokens
from prompts import load_prompt
from answers.answer import Answer, Citation
from answers.global_answer import map_reports, pick_level
from answers.messages import say
from retrieval.index import ChunkIndex
from routing.router import RouteDecision
from core.records import Report


MAP_MAX_TOKENS = 500
ANSWER_MAX_TOKENS = 600  # 250 words and their bracketed sources; a runaway answer is cut here


class _Point(BaseModel):
    description: str
    score: float = Field(0, ge=0, le=100)


class _Points(BaseModel):
    points: list[_Point] = Field(default_factory=list)


def _report_text(r: Report) -> str:
    findings = "\n".join(f"- {f.text} (chunks: {', '.join(f.chunk_ids[:4])})" for f in r.findings)
    return f"Report {r.community_id}: {r.title}\n{r.summary}\n{findings}"


def llm_global_answer(question: str, route: RouteDecision, reports: Sequence[Report], index: ChunkIndex,
                      client: LLMClient, level: int | None, max_reports: int, token_budget: int = 2500,
                      prompts_dir=None, on_delta: Callable[[str], None] | None = None) -> Answer:  # type: ignore[no-untyped-def]
    """The map-reduce answer. With ``on_delta`` the reduce step is streamed: each piece of the answer's text is
    passed to it as the endpoint sends it (the returned Answer holds the whole text)."""
    selected = pick_level(reports, level)
    if not selected:
        return Answer(question, route, "llm", say("no_reports", question), ())
    ranked_ids = list(dict.fromkeys(p.report_id for p in map_reports(question, selected, index.tokenizer, max_reports)))
    by_id = {r.community_id: r for r in selected}
    map_prompt = load_prompt("global_map", prompts_dir)
    reduce_prompt = load_prompt("global_reduce", prompts_dir)

    def map_one(report: Report) -> list[tuple[float, str, Report]]:
        try:
            points = client.complete_json("global_map", [{"role": "user", "content": map_prompt.render(
                question=question, report=_report_text(report))}], _Points, max_tokens=MAP_MAX_TOKENS,
                what="points schema")
        except (LLMError, ParseFailure):
            return []
        return [(p.score, p.description, report) for p in points.points if p.score > 0]

    with ThreadPoolExecutor(max_workers=client.settings.max_concurrency) as pool:
        mapped = [pt for pts in pool.map(map_one, [by_id[i] for i in ranked_ids]) for pt in pts]
    lines, cited_reports = _within_budget(mapped, token_budget)
    if not lines:
        return Answer(question, route, "llm", say("nothing_in_reports", question), ())
    messages = [{"role": "user", "content": reduce_prompt.render(question=question, points="\n".join(lines))}]
    text = _reduce(client, messages, lines, on_delta)
    cites: dict[str, Citation] = {}
    for r in cited_reports:
        for cid in r.chunk_ids[:3]:
            row = index.by_id.get(cid)
            cites.setdefault(cid, Citation(cid, index.rows[row].source if row is not None else ""))
    return Answer(question, route, "llm", text, tuple(cites.values()),
                  tuple(dict.fromkeys(r.community_id for r in cited_reports)))


def _within_budget(mapped: list[tuple[float, str, Report]], token_budget: int) -> tuple[list[str], list[Report]]:
    """The mapped points best first, as lines citing their report and its first chunks, as many as fit
    ``token_budget``, and the reports they come from."""
    mapped = sorted(mapped, key=lambda t: (-t[0], t[2].community_id))
    lines, used, cited_reports = [], 0, []
    for _score, text, report in mapped:
        line = f"- {text} [report {report.community_id}; chunks {', '.join(report.chunk_ids[:3])}]"
        cost = estimate_tokens(line)
        if used + cost > token_budget:
            break
        lines.append(line)
        used += cost
        cited_reports.append(report)
    return lines, cited_reports


def _reduce(client: LLMClient, messages: list[dict[str, str]], lines: list[str],
            on_delta: Callable[[str], None] | None) -> str:
    """The reduce step's answer, streamed to ``on_delta`` when given; when the step fails, the gathered points
    follow what was written (and are streamed too)."""
    sent: list[str] = []
    try:
        if on_delta is None:
            return client.complete("global_reduce", messages, max_tokens=ANSWER_MAX_TOKENS).strip()
        for delta in client.stream("global_reduce", messages, max_tokens=ANSWER_MAX_TOKENS):
            if not sent:
                delta = delta.lstrip()
            sent.append(delta)
            if delta:
                on_delta(delta)
        return "".join(sent).strip()
    except LLMError as exc:
        failed = "The reduce step failed (" + str(exc) + "); the gathered points were:\n" + "\n".join(lines)
        if on_delta is not None:
            on_delta(("\n\n" if sent else "") + failed)
        return ("".join(sent).strip() + "\n\n" if sent else "") + failed
