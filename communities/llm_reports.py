"""Community reports written by an LLM from the community's entities, relations and source passages.

A parent community whose raw context would exceed the token budget is described through its children's reports
instead of its raw members. A report whose answer cannot be used after one repair round falls back to the
extractive report, recorded as mode ``fallback`` (and in ``failures``), so no community is left without a
report and the next LLM run writes it again.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from pydantic import BaseModel, Field

from communities.context import CommunityContext, fingerprint
from communities.reports import ExtractiveReportWriter, now_iso
from core.llm_client import LLMClient, LLMError, ParseFailure, estimate_tokens, parse_json_object
from prompts import load_prompt
from core.records import Chunk, Finding, Report
from core.settings import CommunitySettings


# Length bounds a grammar-compiling endpoint enforces (core.structured.wire_schema), within
# REPORT_MAX_TOKENS: no string or list can run on without end.
class _Finding(BaseModel):
    summary: str = Field(..., json_schema_extra={"maxLength": 200})
    explanation: str = Field("", json_schema_extra={"maxLength": 400})
    chunk_ids: list[str] = Field(default_factory=list, json_schema_extra={"maxItems": 4})


class _Report(BaseModel):
    title: str = Field(..., min_length=1, json_schema_extra={"maxLength": 100})
    summary: str = Field(..., json_schema_extra={"maxLength": 500})
    rating: float = 5.0
    findings: list[_Finding] = Field(default_factory=list, json_schema_extra={"maxItems": 5})


def parse_report(text: str) -> _Report:
    return parse_json_object(text, _Report, "report schema")


FALLBACK_MODE = "fallback"
REPORT_MAX_TOKENS = 800  # a title, a summary and up to five findings; a runaway report is cut here


class LLMReportWriter:
    mode = "llm"

    def __init__(self, client: LLMClient, settings: CommunitySettings, chunks: dict[str, Chunk], prompts_dir=None,  # type: ignore[no-untyped-def]
                 idf=None) -> None:
        self.client = client
        self.settings = settings
        self.chunks = chunks
        self.model = client.settings.model
        self.prompt = load_prompt("community_report", prompts_dir)
        self.repair = load_prompt("repair_json", prompts_dir)
        self.fallback = ExtractiveReportWriter(settings, chunks, idf)
        self.failures: list[tuple[str, str]] = []  # (community id, reason) of reports written by the fallback

    @property
    def fallbacks(self) -> int:
        return len(self.failures)

    def context(self, ctx: CommunityContext, children: Sequence[Report]) -> tuple[str, list[str]]:
        budget = self.settings.report_context_tokens
        deg = ctx.degree()
        ents = sorted(ctx.entities, key=lambda e: (-deg[e.id], e.name))
        lines = ["Entities (name | type | description):"]
        lines += [f"{e.name} | {e.type} | {e.description[:300]}" for e in ents]
        lines.append("Relationships (source | target | description):")
        names = {e.id: e.name for e in ctx.entities}
        lines += [f"{names[r.source_id]} | {names[r.target_id]} | {r.description[:200]}"
                  for r in sorted(ctx.relations, key=lambda r: (-r.weight, r.id))]
        text = "\n".join(lines)
        if children and estimate_tokens(text) > budget // 2:
            # Too large to show raw: describe the community through its sub-communities' reports.
            lines = ["Sub-community reports:"]
            lines += [f"- {c.title}: {c.summary} " + " ".join(f.text for f in c.findings[:3]) for c in children]
            lines.append("Most central entities: " + ", ".join(e.name for e in ents[:15]))
            text = "\n".join(lines)
        cited: list[str] = []
        passages = ["Source passages:"]
        used = estimate_tokens(text)
        for cid in ctx.passages:
            chunk = self.chunks.get(cid)
            if chunk is None:
                continue
            cost = estimate_tokens(chunk.text) + 8
            if used + cost > budget:
                break
            passages.append(f"[{cid}] {chunk.text}")
            cited.append(cid)
            used += cost
        return text + "\n\n" + "\n\n".join(passages), cited

    def write(self, ctx: CommunityContext, children: Sequence[Report] = ()) -> Report:
        context, cited = self.context(ctx, children)
        allowed = set(ctx.chunk_ids)
        messages = [{"role": "user", "content": self.prompt.render(context=context, chunk_ids=", ".join(cited) or "(none)")}]
        try:
            parsed = self.client.complete_json("report", messages, _Report, repair=self.repair,
                                               max_tokens=REPORT_MAX_TOKENS, what="report schema")
        except (ParseFailure, LLMError) as exc:
            reason = f"{type(exc).__name__}: {exc}"[:500]
            self.failures.append((ctx.community.id, reason))
            return replace(self.fallback.write(ctx, children), mode=FALLBACK_MODE, model=f"extractive ({self.model} failed)")
        findings = tuple(
            Finding((f.summary + (" " + f.explanation if f.explanation else "")).strip(),
                    tuple(c for c in f.chunk_ids if c in allowed) or tuple(cited[:3]))
            for f in parsed.findings[: self.settings.report_max_findings])
        return Report(ctx.community.id, ctx.community.level, parsed.title.strip(), parsed.summary.strip(), findings,
                      max(0.0, min(10.0, float(parsed.rating))), fingerprint(ctx), self.mode, self.model, now_iso())
