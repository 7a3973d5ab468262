"""The stale-summary drift report: which community reports no longer match the graph, and by how much.

Each report stores the inputs it was written from (member and relation description hashes, source chunk
content hashes). Its drift score compares them with the community's current inputs:

    drift = 0.30 * member change      (Jaccard distance between old and current member sets)
          + 0.20 * description change (share of remaining members whose description changed)
          + 0.25 * relation change    (Jaccard distance of internal relation sets, plus changed descriptions)
          + 0.25 * source change      (share of old source chunks deleted or edited)

clipped to [0, 1]. A report whose community is gone scores 1.0 (dissolved), as does one marked stale by a
deletion whose inputs cannot be compared. Status: ``fresh`` below ``communities.drift_drifting``, ``stale`` at
or above ``communities.drift_stale``, ``drifting`` between. Existence says whether the community still exists,
or was dissolved, split (its old members now spread over several communities of its level) or merged (its
current members come from several old reports).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Mapping, Sequence

from communities.context import GraphIndex, inputs_manifest
from core.records import Community, GraphSnapshot, Report
from core.settings import CommunitySettings, LLMSettings

WEIGHTS = {"members": 0.30, "descriptions": 0.20, "relations": 0.25, "sources": 0.25}


@dataclass(frozen=True, slots=True)
class DriftEntry:
    community_id: str
    level: int
    title: str
    score: float
    status: str
    existence: str
    age_days: float
    members_added: int
    members_removed: int
    descriptions_changed: int
    relations_added: int
    relations_removed: int
    sources_changed: int
    sources_deleted: int
    mode: str
    model: str
    created_at: str
    successors: tuple[str, ...] = ()  # of a community that is gone: the communities of its level holding its members


@dataclass(frozen=True, slots=True)
class DriftReport:
    generated_at: str
    entries: tuple[DriftEntry, ...]
    totals: dict[str, int]
    refresh_estimate: dict[str, float]  # refreshing the stale (and fallback) reports: --threshold drift_stale
    weights: dict[str, float]
    thresholds: dict[str, float] = field(default_factory=dict)  # "drifting" and "stale" scores
    refresh_drifting_estimate: dict[str, float] = field(default_factory=dict)  # the drifting ones too: the default

    def to_dict(self) -> dict[str, object]:
        return {"generated_at": self.generated_at, "totals": self.totals, "thresholds": self.thresholds,
                "refresh_estimate": self.refresh_estimate, "refresh_drifting_estimate": self.refresh_drifting_estimate,
                "weights": self.weights, "entries": [asdict(e) for e in self.entries]}


def _jaccard_distance(a: set[str], b: set[str]) -> float:
    return 1.0 - (len(a & b) / len(a | b)) if (a or b) else 0.0


def _age_days(created_at: str, now: datetime) -> float:
    try:
        then = datetime.fromisoformat(created_at)
    except ValueError:
        return 0.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    return round(max(0.0, (now - then).total_seconds() / 86400), 2)


def score_inputs(old: dict, new: dict, chunk_hashes: dict[str, str]) -> tuple[float, tuple[int, ...]]:
    """The drift score between a report's stored inputs and the community's current ones, and the counts behind
    it: members added, removed, descriptions changed, relations added, removed, sources changed, deleted."""
    old_e, old_r, old_c = old.get("entities", {}), old.get("relations", {}), old.get("chunks", {})
    new_e, new_r = new.get("entities", {}), new.get("relations", {})
    kept = set(old_e) & set(new_e)
    desc_changed = sum(1 for e in kept if old_e[e] != new_e[e])
    rel_kept = set(old_r) & set(new_r)
    rel_desc_changed = sum(1 for x in rel_kept if old_r[x] != new_r[x])
    sources_deleted = sum(1 for c in old_c if c not in chunk_hashes)
    sources_changed = sum(1 for c in old_c if c in chunk_hashes and chunk_hashes[c] != old_c[c])
    member_part = _jaccard_distance(set(old_e), set(new_e))
    desc_part = desc_changed / len(kept) if kept else (1.0 if old_e else 0.0)
    rel_part = min(1.0, _jaccard_distance(set(old_r), set(new_r)) + (rel_desc_changed / len(old_r) if old_r else 0.0))
    src_part = (sources_deleted + sources_changed) / len(old_c) if old_c else 0.0
    score = (WEIGHTS["members"] * member_part + WEIGHTS["descriptions"] * desc_part
             + WEIGHTS["relations"] * rel_part + WEIGHTS["sources"] * src_part)
    counts = (len(set(new_e) - set(old_e)), len(set(old_e) - set(new_e)), desc_changed,
              len(set(new_r) - set(old_r)), len(set(old_r) - set(new_r)), sources_changed, sources_deleted)
    return round(min(1.0, max(0.0, score)), 4), counts


def compute_drift(reports: Sequence[Report], communities: Sequence[Community], snapshot: GraphSnapshot,
                  chunk_hashes: dict[str, str], settings: CommunitySettings, llm: LLMSettings | None = None,
                  now: datetime | None = None, current_inputs: Mapping[str, str | None] | None = None) -> DriftReport:
    """Each report's drift: its stored inputs against its community's current ones. ``current_inputs``: those
    already computed from the same graph (an index run's report stage computes them for every community), by
    community id, as JSON, or None where they are the ones the report records; any community missing from it is
    read from the graph."""
    now = now or datetime.now(timezone.utc)
    index: GraphIndex | None = None
    current = {c.id: c for c in communities}
    owner_by_level: dict[int, dict[str, str]] = {}
    for c in communities:
        for e in c.entity_ids:
            owner_by_level.setdefault(c.level, {})[e] = c.id
    entity_ids = {e.id for e in snapshot.entities}
    relation_ids = {x.id for x in snapshot.relations}
    manifests = {r.community_id: json.loads(r.inputs) if r.inputs else {} for r in reports}
    reports_of: dict[str, list[str]] = {}  # entity -> the reports that were written with it as a member
    for rid, manifest in manifests.items():
        for e in manifest.get("entities", {}):
            reports_of.setdefault(e, []).append(rid)
    entries: list[DriftEntry] = []
    for r in reports:
        old = manifests[r.community_id]
        old_e, old_r, old_c = old.get("entities", {}), old.get("relations", {}), old.get("chunks", {})
        comm = current.get(r.community_id)
        if comm is None:
            owners = Counter(owner_by_level.get(r.level, {}).get(e) for e in old_e)
            owners.pop(None, None)
            existence = "split" if len([o for o, n in owners.items() if n >= 2]) >= 2 else "dissolved"
            # Only what is really gone counts as removed or deleted: a community can dissolve while every one of
            # its members, relations and source chunks is still there (re-clustered into other communities).
            gone_e = sum(1 for e in old_e if e not in entity_ids)
            gone_r = sum(1 for x in old_r if x not in relation_ids)
            deleted = sum(1 for c in old_c if c not in chunk_hashes)
            changed = sum(1 for c in old_c if c in chunk_hashes and chunk_hashes[c] != old_c[c])
            entries.append(DriftEntry(r.community_id, r.level, r.title, 1.0, "stale", existence, _age_days(r.created_at, now),
                                      0, gone_e, 0, 0, gone_r, changed, deleted, r.mode, r.model, r.created_at,
                                      tuple(o for o, _ in owners.most_common())))
            continue
        if current_inputs is not None and comm.id in current_inputs:
            known = current_inputs[comm.id]
            now_inputs = old if known is None else json.loads(known)
        else:
            index = index or GraphIndex(snapshot, chunk_hashes, settings.report_passages)
            now_inputs = inputs_manifest(index.context(comm))
        if not old:  # written before manifests existed: only the stale flag can speak
            score = 1.0 if r.stale else 0.0
            counts = (0, 0, 0, 0, 0, 0, 0)
        else:
            score, counts = score_inputs(old, now_inputs, chunk_hashes)
        score = round(min(1.0, max(0.0, score)), 4)
        sources = Counter(rid for e in comm.entity_ids for rid in reports_of.get(e, ()) if rid != r.community_id)
        existence = "merged" if any(n >= 2 for n in sources.values()) and counts[0] >= 2 else "exists"
        status = "stale" if score >= settings.drift_stale else "drifting" if score >= settings.drift_drifting else "fresh"
        if status == "fresh" and r.mode == "fallback":
            status = "fallback"  # inputs unchanged, but written by the extractive fallback after an LLM failure
        entries.append(DriftEntry(r.community_id, r.level, r.title, score, status, existence, _age_days(r.created_at, now),
                                  *counts, r.mode, r.model, r.created_at))
    entries.sort(key=lambda e: (-e.score, e.level, e.community_id))
    totals = dict(Counter(e.status for e in entries))
    totals = {k: totals.get(k, 0) for k in ("fresh", "fallback", "drifting", "stale")} | {"reports": len(entries)}
    return DriftReport(now.replace(microsecond=0).isoformat(), tuple(entries), totals,
                       _refresh_cost(entries, ("stale", "fallback"), settings, llm), dict(WEIGHTS),
                       {"drifting": settings.drift_drifting, "stale": settings.drift_stale},
                       _refresh_cost(entries, ("stale", "fallback", "drifting"), settings, llm))


def _refresh_cost(entries: Sequence[DriftEntry], statuses: tuple[str, ...], settings: CommunitySettings,
                  llm: LLMSettings | None) -> dict[str, float]:
    """What re-summarizing the reports of these statuses would cost with the configured model (offline:
    nothing). Reports of communities that are gone (dissolved or split) are deleted by a refresh, not rewritten."""
    stale = [e for e in entries if e.status in statuses and e.existence not in ("dissolved", "split")]
    calls = len(stale)
    tin = calls * settings.report_context_tokens
    tout = calls * 350
    cost = 0.0
    if llm is not None:
        cost = tin / 1000 * llm.price_input_per_1k + tout / 1000 * llm.price_output_per_1k
    return {"reports": calls, "input_tokens": tin, "output_tokens": tout, "cost_usd": round(cost, 6)}
