"""The query side: answer questions and run memory queries over an index built by :mod:`strata.pipeline`.

Nothing here imports Prefect, so ``strata ask``, ``strata search`` and the HTTP API start quickly.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval.answer import Answer, global_answer, local_answer
from retrieval.contract import MemoryQueryRequest, MemoryQueryResponse, MemoryResult
from retrieval.index import ChunkIndex
from retrieval.router import EntityLexicon, Route, forced, route_question
from strata.pipeline import Workspace, open_llm
from core.settings import StrataSettings
from core.store import open_store

if TYPE_CHECKING:
    from extraction.llm_client import LLMClient


class Engine:
    """The query side: a loaded chunk index, the entity lexicon and the store's reports."""

    def __init__(self, settings: StrataSettings) -> None:
        self.settings = settings
        self.ws = Workspace(Path(settings.data_dir))
        self.index = ChunkIndex.load(self.ws.index_dir, settings.retrieval, llm=settings.llm)
        self.lexicon = EntityLexicon.load(self.ws.lexicon_path)
        self._reports = None
        self._client: "LLMClient | None" = None
        self.mode = settings.llm_mode

    def reports(self):  # type: ignore[no-untyped-def]
        if self._reports is None:
            store = open_store(self.settings)
            try:
                self._reports = store.reports()
            finally:
                store.close()
        return self._reports

    def route(self, question: str, mode: Route | None = None):  # type: ignore[no-untyped-def]
        if mode:
            return forced(mode)
        return route_question(question, self.lexicon, has_reports=True)

    def ask(self, question: str, mode: Route | None = None, metadata_filter: dict[str, Any] | None = None) -> Answer:
        if not question.strip():
            raise ValueError("the question is empty")
        s = self.settings.retrieval
        decision = self.route(question, mode)
        if decision.route == "global" and self.mode == "llm":
            from retrieval.global_llm import llm_global_answer

            if self._client is None:
                self._client = open_llm(self.settings)
            return llm_global_answer(question, decision, self.reports(), self.index, self._client,  # type: ignore[arg-type]
                                     s.global_level, s.global_reports, prompts_dir=self.settings.llm.prompts_dir)
        if decision.route == "global":
            return global_answer(question, decision, self.reports(), self.index, s.global_level, s.global_reports,
                                 max_points=s.answer_sentences + 2)
        return local_answer(question, decision, self.index, s.top_k, s.answer_sentences, metadata_filter)

    def query(self, request: MemoryQueryRequest) -> MemoryQueryResponse:
        hp = request.hybrid_params
        if hp is None:
            hits = self.index.search(request.search_text, request.top_k, metadata_filter=request.metadata_filter)
        else:
            hits = self.index.search(request.search_text, request.top_k, hp.dense_weight, hp.sparse_weight,
                                     hp.rrf_k_constant, request.metadata_filter, fusion="rrf")
        results = [MemoryResult(chunk_id=h.chunk_id, rrf_score=h.rrf_score, text=h.text, source=h.source) for h in hits]
        return MemoryQueryResponse(query_id=request.query_id, total_retrieved=len(results), results=results)

    def close(self) -> None:
        self.index.close()
        if self._client is not None:
            self._client.close()


