"""Community reports: the offline extractive writer (the LLM writer lives beside it).

An extractive report takes its title from the community's most central entities, its summary from their
types and connections, and its findings from the strongest internal relations and the entities' own
description sentences; every finding cites the chunk ids it came from. Reports are written bottom-up (deepest
level first), so a parent can lean on its children's reports.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import replace
from datetime import datetime, timezone
from typing import Callable, Collection, Protocol, Sequence

from communities.context import CommunityContext, GraphIndex, fingerprint, inputs_manifest
from communities.drift import score_inputs
from core.records import Community, Finding, GraphSnapshot, Report
from core.settings import CommunitySettings


class ReportWriter(Protocol):
    mode: str
    model: str

    def write(self, ctx: CommunityContext, children: Sequence[Report]) -> Report: ...


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def _join_names(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


class ExtractiveReportWriter:
    """Deterministic reports from the graph alone (no model)."""

    mode = "offline"
    model = "extractive"

    def __init__(self, settings: CommunitySettings) -> None:
        self.settings = settings

    def write(self, ctx: CommunityContext, children: Sequence[Report] = ()) -> Report:
        deg = ctx.degree()
        ranked = sorted(ctx.entities, key=lambda e: (-deg[e.id], -len(e.chunk_ids), e.name))
        top = [e.name for e in ranked[:3]]
        title = _join_names(top) if top else ctx.community.id
        types = Counter(e.type for e in ctx.entities)
        type_text = ", ".join(f"{n} {t}" for t, n in types.most_common(4))
        lead = ranked[0] if ranked else None
        summary = (
            f"{len(ctx.entities)} entities ({type_text}) joined by {len(ctx.relations)} relations"
            + (f", centred on {lead.name}, which appears in {len(lead.chunk_ids)} chunks" if lead else "")
            + (f"; it groups {len(children)} sub-communities: " + "; ".join(c.title for c in children[:4]) if children else "")
            + "."
        )
        findings: list[Finding] = []
        budget = self.settings.report_max_findings
        for r in sorted(ctx.relations, key=lambda r: (-r.weight, r.id))[: max(1, budget // 2)]:
            text = r.description.split("\n")[0]
            findings.append(Finding(text, tuple(sorted(r.chunk_ids)[:5])))
        seen = {f.text for f in findings}
        for e in ranked:
            if len(findings) >= budget:
                break
            sentence = e.description.split("\n")[0]
            if sentence and sentence not in seen:
                seen.add(sentence)
                findings.append(Finding(sentence, tuple(sorted(e.chunk_ids)[:5])))
        mentions = sum(len(e.chunk_ids) for e in ctx.entities)
        rating = round(min(10.0, 2.0 * math.log1p(mentions + len(ctx.relations))), 2)
        return Report(ctx.community.id, ctx.community.level, title, summary, tuple(findings), rating,
                      fingerprint(ctx), self.mode, self.model, now_iso())


def write_reports(communities: Sequence[Community], snapshot: GraphSnapshot, writer: ReportWriter,
                  settings: CommunitySettings,
                  existing: Sequence[Report] = (), on_progress: Callable[[int], None] | None = None,
                  chunk_hashes: dict[str, str] | None = None, policy: str = "changed",
                  force: Collection[str] = (), min_drift: float = 0.0) -> tuple[list[Report], int]:
    """Reports for the communities, deepest level first; returns (reports, how many were written anew).

    Policy ``changed`` rewrites a report whose fingerprint differs and keeps the others (nothing to
    re-summarize; a stale mark left by deleting a document that came back unchanged is cleared). Policy ``missing`` writes only communities that have no report yet and
    keeps every existing one as it is (the drift report then says how far each has drifted). Ids in ``force``
    are rewritten either way (``strata drift --refresh``). With ``min_drift`` above 0, policy ``changed`` also
    keeps a report whose inputs changed by a drift score below it (the drift report still shows the score).
    """
    if policy not in ("changed", "missing"):
        raise ValueError(f"unknown report policy {policy!r} (expected 'changed' or 'missing')")
    index = GraphIndex(snapshot, chunk_hashes, settings.report_passages)
    old = {r.community_id: r for r in existing}
    done: dict[str, Report] = {}
    children: dict[str, list[str]] = {}
    for c in communities:
        if c.parent_id:
            children.setdefault(c.parent_id, []).append(c.id)
    written = 0
    for c in sorted(communities, key=lambda c: (-c.level, c.id)):
        ctx = index.context(c)
        manifest = inputs_manifest(ctx)
        fp = fingerprint(ctx, manifest)
        prior = old.get(c.id)
        keep = prior is not None and c.id not in force and (
            policy == "missing" or prior.fingerprint == fp or (
                min_drift > 0 and bool(prior.inputs) and score_inputs(json.loads(prior.inputs), manifest,
                                                                      index.chunk_hashes)[0] < min_drift))
        if keep and policy == "changed" and prior.stale and prior.fingerprint == fp:
            # Marked stale by a deletion, but its inputs are back as they were (a changed document re-added).
            done[c.id] = replace(prior, stale=False, inputs=prior.inputs)  # type: ignore[union-attr]
        elif keep:
            done[c.id] = prior  # type: ignore[assignment]
        else:
            report = writer.write(ctx, [done[k] for k in children.get(c.id, []) if k in done])
            done[c.id] = replace(report, inputs=json.dumps(manifest, sort_keys=True))
            written += 1
        if on_progress:
            on_progress(1)
    return [done[c.id] for c in communities], written
