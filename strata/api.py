"""The HTTP API (FastAPI): ``POST /v1/memory/query`` speaks the memory-query contract; ``POST /v1/ask``
answers with citations; ``GET /v1/drift`` gives the stale-summary drift report; ``GET /v1/health``. Invalid requests get 422 with a message, never a 500."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from retrieval.contract import MemoryQueryRequest, MemoryQueryResponse
from core.settings import StrataSettings


class AskRequest(BaseModel):
    question: str = Field(..., min_length=1, max_length=10_000)
    mode: Literal["local", "global"] | None = None
    metadata_filter: dict[str, Any] = Field(default_factory=dict)


def create_app(settings: StrataSettings | None = None) -> FastAPI:
    from strata.engine import Engine

    settings = settings or StrataSettings()
    app = FastAPI(title="Strata", version="0.1.0")
    state: dict[str, Engine] = {}

    def engine() -> Engine:
        if "engine" not in state:
            try:
                state["engine"] = Engine(settings)
            except FileNotFoundError as exc:
                raise HTTPException(status_code=503, detail=str(exc)) from exc
        return state["engine"]

    @app.get("/v1/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/memory/query", response_model=MemoryQueryResponse)
    def memory_query(request: MemoryQueryRequest) -> MemoryQueryResponse:
        return engine().query(request)

    @app.get("/v1/drift")
    def drift() -> dict[str, Any]:
        from strata.pipeline import drift_report

        return drift_report(settings).to_dict()

    @app.post("/v1/ask")
    def ask(request: AskRequest) -> dict[str, Any]:
        try:
            return engine().ask(request.question, request.mode, request.metadata_filter or None).to_dict()
        except ValueError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc

    return app
