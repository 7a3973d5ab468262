"""Which communities answer a question about the whole corpus: the largest, with each page counted by its kind.

"What are the main topics?" names nothing; it is answered by the communities that cover most of the corpus. On a
docs site a changelog or a page of release notes names every feature once per release, so its communities are
among the largest of the graph, though a reader would not call release notes a main topic. A community here counts
by its members, weighted by the mean kind weight (``communities.kind_weights``, :mod:`extraction.kinds`) of the
passages its report was written from: changelogs rank low by default, and the setting changes that. Questions
that name something (``what changed in 1.18?``) are not re-ranked: their words find the changelog as before.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from core.records import Report
from core.settings import kind_weight


def _inputs(report: Report) -> dict[str, Any]:
    try:
        data = json.loads(report.inputs) if report.inputs else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def report_weight(report: Report, kind_of: Mapping[str, Any], weights: Mapping[str, float]) -> float:
    """A report's weight for an answer about the whole corpus: its community's members, times the mean kind weight
    of its source passages (``kind_of``: chunk id -> the kind of its document, when it has one)."""
    data = _inputs(report)
    members = len(data.get("entities", {})) or 1
    passages = list(data.get("chunks", {})) or list(report.chunk_ids)
    if not passages:
        return float(members)
    return members * sum(kind_weight(kind_of.get(c), weights) for c in passages) / len(passages)


def whole_corpus_reports(reports: Sequence[Report], kind_of: Mapping[str, Any], weights: Mapping[str, float],
                         limit: int) -> list[Report]:
    """The ``limit`` reports with the largest :func:`report_weight`, heaviest first (ties by community id)."""
    ranked = sorted(reports, key=lambda r: (-report_weight(r, kind_of, weights), r.community_id))
    return ranked[:limit]
