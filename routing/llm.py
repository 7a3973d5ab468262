"""The LLM route classifier, asked only when the offline router is unsure.

The prompt (``prompts/route.txt``) asks for one JSON object ``{"route": "local"|"global", "confidence": x}``,
with that schema as structured output.
The call goes through :class:`core.llm_client.LLMClient`, so it is cached, retried and counted like every
other call. An answer that cannot be used (malformed JSON, an unknown route, a failed call) leaves the offline
decision in place, with a reason saying why.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from core.llm_client import LLMClient, LLMError, ParseFailure
from prompts import load_prompt
from routing.router import RouteDecision


class RouteVerdict(BaseModel):
    route: Literal["local", "global"]
    confidence: float = Field(ge=0, le=1)


def llm_route(question: str, offline: RouteDecision, client: LLMClient, prompts_dir: Path | None = None) -> RouteDecision:
    """The LLM's route for ``question``, replacing the unsure ``offline`` decision; the offline decision
    itself when the LLM's answer is unusable."""
    prompt = load_prompt("route", prompts_dir)
    try:
        verdict = client.complete_json("route", [{"role": "user", "content": prompt.render(question=question)}],
                                       RouteVerdict, max_tokens=40, what="route schema")
    except (LLMError, ParseFailure) as exc:
        return replace(offline, reasons=offline.reasons + (
            f"the LLM classifier's answer could not be used ({exc}); keeping the offline decision",))
    # A confidence below 0.5 for the route it names is read as confidence in the route it did not name.
    route, conf = verdict.route, verdict.confidence
    if conf < 0.5:
        route, conf = ("global" if route == "local" else "local"), 1.0 - conf
    p_global = conf if route == "global" else 1.0 - conf
    agree = "agreeing with" if route == offline.route else "overruling"
    reason = (f"the offline router was unsure (confidence {offline.confidence:.2f}); the LLM classifier says "
              f"{route} (confidence {conf:.2f}), {agree} it")
    return replace(offline, route=route, confidence=round(conf, 4), global_score=round(p_global, 4),
                   local_score=round(1.0 - p_global, 4), reasons=offline.reasons + (reason,))
