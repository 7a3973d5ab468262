"""The model's context window, and LLM-mode chunks sized to fit it.

The window is ``llm.context_tokens`` when set, else what the endpoint's ``GET /models`` says about the model
(``context_length`` (OpenRouter, LM Studio), ``max_model_len`` (vLLM), ``context_window``, or llama.cpp's
``meta.n_ctx_train``); unknown when it says nothing (OpenAI, llama-cpp-python's server), and then chunks keep
their configured size. An extraction request holds the instructions and worked example (about
:data:`PROMPT_TOKENS`), the chunk, and an answer of up to ``200 + 2 x`` the chunk's tokens
(extraction.llm_extractor.output_budget), so a chunk of ``T`` tokens needs ``PROMPT_TOKENS + 200 + 3 T``: LLM-mode
chunks are the configured size or, when the window is smaller than that needs, the largest that fits.
"""

from __future__ import annotations

import json
import urllib.request
from functools import lru_cache

from core.settings import StrataSettings

PROMPT_TOKENS = 700


@lru_cache(maxsize=16)
def _listed_window(base_url: str, model: str, api_key: str) -> int | None:
    req = urllib.request.Request(base_url.rstrip("/") + "/models",
                                 headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            data = json.load(r).get("data") or []
    except (OSError, ValueError):
        return None
    entry = next((m for m in data if m.get("id") == model), data[0] if len(data) == 1 else None)
    if not isinstance(entry, dict):
        return None
    meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
    for value in (entry.get("context_length"), entry.get("max_model_len"), entry.get("context_window"),
                  meta.get("n_ctx"), meta.get("n_ctx_train")):
        if isinstance(value, int) and value > 0:
            return value
    return None


def context_window(settings: StrataSettings) -> int | None:
    """The model's context window in tokens, or None when neither the settings nor the endpoint say."""
    llm = settings.llm
    if llm.context_tokens:
        return llm.context_tokens
    if settings.llm_mode != "llm" or not llm.base_url:
        return None
    key = llm.api_key.get_secret_value() if llm.api_key else ""
    return _listed_window(llm.base_url, llm.model, key)


def fit_to_context(settings: StrataSettings) -> StrataSettings:
    """``settings`` with LLM-mode chunks no larger than the model's window allows (see the module docstring);
    the same object offline, or when the window is unknown or large enough."""
    if settings.llm_mode != "llm":
        return settings
    window = context_window(settings)
    if window is None:
        return settings
    fits = max(64, (window - PROMPT_TOKENS - 200) // 3)
    c = settings.chunking
    if c.chunk_tokens <= fits:
        return settings
    chunking = c.model_copy(update={"chunk_tokens": fits, "overlap_tokens": min(c.overlap_tokens, fits // 4)})
    return settings.model_copy(update={"chunking": chunking})
