"""Both-sides answers: when the router is unsure, answer from the local hits and the community reports.

A misrouted question still reaches its answer this way. The two parts are the ordinary local and global
answers (:func:`answers.answer.local_answer` and :func:`answers.global_answer.global_answer`), each under its own
label, and the answer cites the chunks and reports of both.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np

from core.records import Report
from answers.answer import Answer, local_answer
from answers.global_answer import global_answer
from answers.messages import say
from retrieval.index import ChunkIndex
from routing.router import RouteDecision


def both_sides_answer(question: str, decision: RouteDecision, index: ChunkIndex, reports: Sequence[Report], *,
                      top_k: int, n_sentences: int, level: int | None, max_reports: int, max_points: int,
                      metadata_filter: dict[str, Any] | None = None, query_vector: np.ndarray | None = None,
                      lexicon: Any = None, kind_weights: Mapping[str, float] | None = None) -> Answer:
    """One answer with a labelled local part and a labelled global part, the likelier route first."""
    decision = replace(decision, both_sides=True, reasons=decision.reasons + (
        f"confidence {decision.confidence:.2f} is below the threshold: answering from both sides",))
    local = local_answer(question, decision, index, top_k, n_sentences, metadata_filter, lexicon=lexicon)
    glob = global_answer(question, decision, reports, index, level, max_reports, max_points, query_vector=query_vector,
                         kind_weights=kind_weights)
    parts = [(say("local_label", question), local), (say("global_label", question), glob)]
    if decision.route == "global":
        parts.reverse()
    text = say("both", question, c=decision.confidence) + "\n\n" + "\n\n".join(
        f"{label}\n\n{part.text}" for label, part in parts)
    citations = tuple({c.chunk_id: c for part in (local, glob) for c in part.citations}.values())
    return Answer(question, decision, local.mode, text, citations, glob.report_ids,
                  points=local.points + glob.points, covered=local.covered or glob.covered)
