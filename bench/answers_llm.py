"""``bench.answers --llm``: LLM-written local answers beside the offline extractive ones, on the same questions.

Each own answerable question is answered twice on the local route, from one reading (:mod:`answers.reader`):
offline, by the units the reader quotes, and by the LLM from the reader's best candidates
(:func:`answers.llm_local.llm_local_answer`, as ``strata ask`` answers in LLM mode). The excerpts the LLM was
given are recomputed here (:func:`answers.llm_local.passages_block` over the same reading), so the citation check
is made against them independently of the answer's own bookkeeping. Figures:

- ``llm_answer_hit_rate`` / ``offline_answer_hit_rate``: share of questions whose answer holds a gold answer: the
  LLM's written text without its bracketed chunk ids (an id carries its document's title), the offline answer's
  quoted units; a declined answer holds nothing.
- ``citations_all_given_rate``: share of LLM-written answers that cite at least one chunk and only chunks among
  the passages given. ``dropped_citations``: ids the model cited that were not given (removed from the answers).
- ``llm_answers`` (written by the LLM), ``fallbacks`` (a failed call: the offline answer, which says so),
  ``not_covered`` (answered offline without a call), calls, tokens, schema-valid / repaired answers, wall time.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from core.settings import LLMSettings

from answers.answer import Answer, answer_from, read_hits
from answers.llm_local import PASSAGE_TOKENS, llm_local_answer, passages_block
from core.llm_client import LLMClient
from routing.router import forced

_IDS = re.compile(r"\[[^\[\]\n]{1,400}\]")


class _Question(Protocol):
    qid: str
    text: str
    answers: tuple[str, ...]


@dataclass
class LLMAnswerFigures:
    questions: int = 0
    llm_answers: int = 0
    fallbacks: int = 0
    not_covered: int = 0
    llm_hits: int = 0
    offline_hits: int = 0
    all_given: int = 0
    dropped_citations: int = 0
    wall_s: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)

    def to_dict(self, model: str) -> dict[str, object]:
        m = max(1, self.questions)
        written = max(1, self.llm_answers)
        return {
            "questions": self.questions, "model": model, "llm_answers": self.llm_answers,
            "fallbacks": self.fallbacks, "not_covered": self.not_covered,
            "llm_answer_hit_rate": round(self.llm_hits / m, 4),
            "offline_answer_hit_rate": round(self.offline_hits / m, 4),
            "citations_all_given_rate": round(self.all_given / written, 4) if self.llm_answers else None,
            "dropped_citations": self.dropped_citations,
            "calls": self.usage.get("calls", 0), "prompt_tokens": self.usage.get("input_tokens", 0),
            "completion_tokens": self.usage.get("output_tokens", 0),
            "schema_valid": self.usage.get("schema_valid", 0), "repaired": self.usage.get("repaired", 0),
            "failures": self.usage.get("failures", 0),
            "wall_s": round(self.wall_s, 1), "seconds_per_llm_answer": round(self.wall_s / written, 1),
        }


def without_ids(text: str) -> str:
    """An answer's text without its bracketed chunk ids."""
    return _IDS.sub(" ", text)


def run_llm(questions: Sequence[_Question], index: Any, lexicon: Any, llm: LLMSettings, reader: Any, hit,  # type: ignore[no-untyped-def]
            show: int = 0, top_k: int = 8, n_units: int = 4) -> LLMAnswerFigures:
    """Answer every question offline and by the LLM from the reader's candidates over ``index``;
    ``hit(text, answers)`` says whether a text holds an answer."""
    client = LLMClient.from_settings(llm, None)  # no response cache: every answer is asked for
    fig = LLMAnswerFigures(questions=len(questions))
    t0 = time.perf_counter()
    for i, q in enumerate(questions):
        route = forced("local")
        _, reading = read_hits(q.text, index, top_k, n_units, lexicon=lexicon, reader=reader)
        offline = answer_from(q.text, route, index, reading) if reading is not None else None
        calls_before = client.usage.totals().calls
        answer: Answer = llm_local_answer(q.text, route, index, client, top_k, n_units, lexicon=lexicon,
                                          reader=reader)
        called = client.usage.totals().calls > calls_before
        given = passages_block(reading.ranked, PASSAGE_TOKENS)[1] if reading is not None else []
        quoted = " ".join(p.text for p in offline.points) if offline is not None else ""
        fig.offline_hits += hit(quoted, q.answers)
        fig.llm_hits += answer.mode == "llm" and hit(without_ids(answer.text), q.answers)
        if answer.mode == "llm":
            fig.llm_answers += 1
            cited = [c.chunk_id for c in answer.citations]
            fig.all_given += bool(cited) and set(cited) <= set(given)
            fig.dropped_citations += answer.dropped_citations
        elif called:
            fig.fallbacks += 1
        else:
            fig.not_covered += 1
        if i < show:
            print(f"--- {q.qid} {q.text} gold={q.answers} llm_hit={hit(without_ids(answer.text), q.answers)} "
                  f"offline_hit={hit(quoted, q.answers)} ({answer.mode})\n{answer.text}\n", flush=True)
    fig.wall_s = time.perf_counter() - t0
    fig.usage = vars(client.usage.totals()).copy()
    return fig


def print_llm(fig: LLMAnswerFigures, model: str) -> dict[str, object]:
    out = fig.to_dict(model)
    print(f"{'':<26}{'hit rate':>9}")
    print(f"{'LLM answer (' + model + ')':<26}{out['llm_answer_hit_rate']:>9.3f}")
    print(f"{'offline answer':<26}{out['offline_answer_hit_rate']:>9.3f}")
    print(f"{fig.llm_answers} LLM-written answers ({fig.fallbacks} fallbacks, {fig.not_covered} not covered), "
          f"citations all given {out['citations_all_given_rate']}, dropped citations {fig.dropped_citations}; "
          f"calls {out['calls']}, tokens {out['prompt_tokens']} in / {out['completion_tokens']} out, "
          f"wall {out['wall_s']} s")
    return out
