"""The LLM client: any OpenAI-compatible chat endpoint through the ``openai`` package.

What it adds around the ``openai`` client (whose own retries are switched off so these are the only ones):
- a disk cache (SQLite) keyed by a hash of model, messages and parameters: the same call is never paid twice,
  and the cache survives a crash because each answer is committed as soon as it arrives;
- exponential backoff with full jitter on 429, 5xx, timeouts and connection errors, honouring Retry-After;
- a concurrency limit (a semaphore) and request- and token-per-minute limits (a sliding one-minute window);
- accounting of calls, cache hits and tokens in and out, per stage.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

import openai
from pydantic import BaseModel

from core.records import stable_hash
from core.settings import LLMSettings
from core.structured import FORMS, parse_json_object, parse_strict, response_format, wire_schema

__all__ = ["LLMClient", "LLMError", "ParseFailure", "ResponseCache", "Usage", "estimate_tokens", "parse_json_object"]
M = TypeVar("M", bound=BaseModel)
Message = dict[str, str]


class LLMError(RuntimeError):
    """An LLM call failed after its retries (or with an error that retrying cannot fix)."""


class ParseFailure(ValueError):
    """The answer arrived but could not be used. It is in the cache (every answer is committed as it arrives);
    ``key`` names it, so that a caller giving up on it can :meth:`LLMClient.forget` it and a later run asks again."""

    def __init__(self, text: str, error: str, key: str = "") -> None:
        super().__init__(error)
        self.text = text
        self.error = error
        self.key = key


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (about four characters a token for English and code)."""
    return max(1, (len(text) + 3) // 4)


@dataclass
class StageUsage:
    calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    retries: int = 0
    failures: int = 0
    # Which path each structured answer took: valid JSON matching the schema as it came, usable only after
    # tolerant parsing or a repair round, or unusable even then.
    schema_valid: int = 0
    repaired: int = 0
    unusable: int = 0


_USAGE_FIELDS = tuple(StageUsage.__dataclass_fields__)


@dataclass
class Usage:
    stages: dict[str, StageUsage] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def stage(self, name: str) -> StageUsage:
        with self.lock:
            return self.stages.setdefault(name, StageUsage())

    def add(self, name: str, **deltas: int) -> None:
        with self.lock:
            s = self.stages.setdefault(name, StageUsage())
            for k, v in deltas.items():
                setattr(s, k, getattr(s, k) + v)

    def totals(self) -> StageUsage:
        with self.lock:
            t = StageUsage()
            for s in self.stages.values():
                for k in _USAGE_FIELDS:
                    setattr(t, k, getattr(t, k) + getattr(s, k))
            return t

    def to_dict(self) -> dict[str, dict[str, int]]:
        with self.lock:
            return {k: vars(v).copy() for k, v in sorted(self.stages.items())}


class ResponseCache:
    """Answers by request hash, in SQLite; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        from core.sqlite_cache import CacheDB

        # Only a cache: a file found damaged, on opening or by any later read or write (damaged while a run holds
        # it), is set aside with a warning naming it and started afresh; the run goes on (CacheDB.run).
        self._db = CacheDB(path, "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, text TEXT, "
                                 "input_tokens INTEGER, output_tokens INTEGER, created_at REAL)",
                           "the LLM response cache")

    def get(self, key: str) -> tuple[str, int, int] | None:
        row = self._db.run(lambda db: db.execute("SELECT text, input_tokens, output_tokens FROM responses WHERE key = ?",
                                                 (key,)).fetchone())
        return (row[0], row[1], row[2]) if row else None

    def put(self, key: str, model: str, text: str, input_tokens: int, output_tokens: int) -> None:
        """Commit one answer (autocommit: it is on disk when this returns)."""
        row = (key, model, text, input_tokens, output_tokens, time.time())
        self._db.run(lambda db: db.execute("INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?)", row))

    def delete(self, *keys: str) -> None:
        rows = [(k,) for k in keys if k]
        self._db.run(lambda db: db.executemany("DELETE FROM responses WHERE key = ?", rows))

    def close(self) -> None:
        self._db.close()


class RateLimiter:
    """Requests and tokens per minute over a sliding 60-second window."""

    def __init__(self, rpm: int | None, tpm: int | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.rpm, self.tpm, self.clock = rpm, tpm, clock
        self._events: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()

    def acquire(self, tokens: int) -> None:
        if not self.rpm and not self.tpm:
            return
        while True:
            with self._lock:
                now = self.clock()
                while self._events and now - self._events[0][0] >= 60:
                    self._events.popleft()
                used_tokens = sum(t for _, t in self._events)
                ok_r = not self.rpm or len(self._events) < self.rpm
                ok_t = not self.tpm or used_tokens + tokens <= self.tpm or not self._events
                if ok_r and ok_t:
                    self._events.append((now, tokens))
                    return
                wait = 60 - (now - self._events[0][0]) if self._events else 0.05
            time.sleep(max(0.01, min(wait, 1.0)))


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, (openai.RateLimitError, openai.APITimeoutError, openai.APIConnectionError, openai.InternalServerError)):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


# The form each endpoint and model was found to accept, so that the clients a run opens (one per batch) ask
# it at once instead of each being refused first.
_KNOWN_FORMS: dict[tuple[str | None, str], str] = {}


class LLMClient:
    """Chat completions with cache, retries, limits and accounting. The ``openai`` client is injected.

    Every answer is committed to the response cache the moment it arrives, before it is counted, parsed or
    used, so a process killed at any later instant repeats none of the calls whose answers had arrived."""

    def __init__(self, client: Any, settings: LLMSettings, cache: ResponseCache | None,
                 sleep: Callable[[float], None] = time.sleep, seed: int = 0) -> None:
        self.client = client
        self.settings = settings
        self.cache = cache
        self.usage = Usage()
        self._sleep = sleep
        self._slots = threading.BoundedSemaphore(settings.max_concurrency)
        self._limiter = RateLimiter(settings.requests_per_minute, settings.tokens_per_minute)
        self._rng = random.Random(seed)
        first = "none" if not settings.json_mode else (
            _KNOWN_FORMS.get((settings.base_url, settings.model), "json_schema")
            if settings.structured_output == "auto" else settings.structured_output)
        self._form = first  # the structured-output form in use; ``auto`` moves down FORMS when one is rejected
        self._form_lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: LLMSettings, cache_path: Path | None) -> "LLMClient":
        client = openai.OpenAI(
            base_url=settings.base_url, api_key=settings.api_key.get_secret_value() if settings.api_key else "not-needed",
            timeout=settings.timeout_s, max_retries=0)
        return cls(client, settings, ResponseCache(cache_path) if cache_path else None)

    @property
    def structured_form(self) -> str:
        """The request form structured answers are asked in now (one of core.structured.FORMS)."""
        return self._form

    def key(self, messages: Sequence[Message], json_mode: bool, schema: type[BaseModel] | None = None,
            max_tokens: int | None = None) -> str:
        s = self.settings
        parts = [s.model, json.dumps(list(messages), sort_keys=True, ensure_ascii=False), str(s.temperature),
                 str(max_tokens or s.max_tokens), str((json_mode or schema is not None) and s.json_mode)]
        if schema is not None:  # the form it is asked in is not part of the key: the answer is the same
            parts.append(json.dumps(wire_schema(schema), sort_keys=True))
        return stable_hash(*parts, size=20)

    def forget(self, *keys: str) -> None:
        """Drop cached answers (unusable ones a caller gave up on), so that a later run asks again."""
        if self.cache is not None:
            self.cache.delete(*keys)

    def _format(self, json_mode: bool, schema: type[BaseModel] | None) -> tuple[str, dict[str, Any] | None]:
        form = self._form
        if schema is None:
            form = "json_object" if json_mode and form != "none" else "none"
            return form, response_format(form, "", {})
        # llama-cpp-python's grammar compiler enforces length bounds (so an answer cannot run away into truncated
        # JSON); OpenAI's strict mode refuses some of them, so the portable forms go without.
        bounded = form == "json_object_schema"
        return form, response_format(form, schema.__name__.strip("_").lower() or "answer",
                                     wire_schema(schema, bounded=bounded))

    def _rejected(self, form: str, exc: Exception) -> bool:
        """Whether ``exc`` is the endpoint refusing ``form``; then, in ``auto``, the next form is used."""
        if form == "none" or self.settings.structured_output != "auto":
            return False
        if not isinstance(exc, openai.APIStatusError):
            return False
        # 400 and 422 are refusals of the request; llama-cpp-python's server answers a form it does not know
        # with a 500 naming the field, which must not be retried as a server fault.
        if exc.status_code not in (400, 422) and "response_format" not in str(exc):
            return False
        with self._form_lock:
            if self._form == form:
                self._form = FORMS[FORMS.index(form) + 1]
                _KNOWN_FORMS[(self.settings.base_url, self.settings.model)] = self._form
        return True

    def complete(self, stage: str, messages: Sequence[Message], json_mode: bool = False,
                 parse: Callable[[str], Any] | None = None, schema: type[BaseModel] | None = None,
                 max_tokens: int | None = None) -> Any:
        """The answer to ``messages`` (parsed by ``parse`` when given), from the cache when this exact call was
        made before. With ``schema`` the endpoint is asked for JSON matching it. An answer that ``parse``
        rejects raises :class:`ParseFailure` (it stays cached until :meth:`forget`)."""
        key = self.key(messages, json_mode, schema, max_tokens)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.usage.add(stage, cache_hits=1)
                return self._parsed(hit[0], parse, key)
        s = self.settings
        limit = min(max_tokens or s.max_tokens, s.max_tokens)
        prompt_tokens = sum(estimate_tokens(m["content"]) for m in messages)
        attempt = 0
        while True:
            self._limiter.acquire(prompt_tokens + limit // 4)
            form, fmt = self._format(json_mode, schema)
            try:
                with self._slots:
                    kwargs: dict[str, Any] = {"model": s.model, "messages": list(messages), "temperature": s.temperature,
                                              "max_tokens": limit}
                    if fmt is not None:
                        kwargs["response_format"] = fmt
                    response = self.client.chat.completions.create(**kwargs)
            except Exception as exc:  # noqa: BLE001 - classified just below
                if fmt is not None and self._rejected(form, exc):
                    continue  # the same request in the next weaker form, at once
                if not _retryable(exc) or attempt >= s.max_retries:
                    self.usage.add(stage, failures=1)
                    raise LLMError(f"{stage}: {type(exc).__name__}: {exc}") from exc
                delay = _retry_after(exc)
                if delay is None:
                    delay = self._rng.uniform(0, min(30.0, 0.5 * 2 ** attempt))
                attempt += 1
                self.usage.add(stage, retries=1)
                self._sleep(min(delay, 60.0))
                continue
            choice = response.choices[0] if response.choices else None
            text = (choice.message.content or "") if choice else ""
            usage = getattr(response, "usage", None)
            tin = getattr(usage, "prompt_tokens", None) or prompt_tokens
            tout = getattr(usage, "completion_tokens", None) or estimate_tokens(text)
            if self.cache is not None and text:  # committed first: nothing below can lose an answer that arrived
                self.cache.put(key, s.model, text, tin, tout)
            self.usage.add(stage, calls=1, input_tokens=tin, output_tokens=tout)
            return self._parsed(text, parse, key)

    @staticmethod
    def _parsed(text: str, parse: Callable[[str], Any] | None, key: str) -> Any:
        if parse is None:
            return text
        try:
            return parse(text)
        except ValueError as exc:
            raise ParseFailure(text, str(exc), key) from exc

    def complete_json(self, stage: str, messages: Sequence[Message], schema: type[M], repair: Any = None,
                      max_tokens: int | None = None, what: str = "schema") -> M:
        """An answer matching ``schema``, asked for with it. One that is not valid JSON matching it as it came
        is parsed tolerantly; one still unusable gets one repair round when ``repair`` (a prompt taking
        ``error``) is given. The path taken is counted per stage (``schema_valid``, ``repaired``,
        ``unusable``); the answers of an unusable call are forgotten, so that a later run asks again."""
        def parse(text: str) -> tuple[M, bool]:
            try:
                return parse_strict(text, schema, what), True
            except ValueError:
                return parse_json_object(text, schema, what), False

        try:
            parsed, strict = self.complete(stage, messages, schema=schema, parse=parse, max_tokens=max_tokens)
        except ParseFailure as failure:
            if repair is None:
                self.usage.add(stage, unusable=1)
                self.forget(failure.key)
                raise
            retry = list(messages) + [{"role": "assistant", "content": failure.text},
                                      {"role": "user", "content": repair.render(error=failure.error)}]
            try:
                parsed, _ = self.complete(stage, retry, schema=schema, parse=parse, max_tokens=max_tokens)
            except ParseFailure as again:
                self.usage.add(stage, unusable=1)
                self.forget(failure.key, again.key)
                raise
            self.usage.add(stage, repaired=1)
            return parsed
        self.usage.add(stage, **({"schema_valid": 1} if strict else {"repaired": 1}))
        return parsed

    def stream(self, stage: str, messages: Sequence[Message], max_tokens: int | None = None,
               schema: type[BaseModel] | None = None) -> Iterator[str]:
        """The answer to ``messages`` as text deltas as the endpoint sends them (``stream=True``); a cached answer
        comes as one delta. With ``schema`` the endpoint is asked for JSON matching it, as in :meth:`complete`.
        Retries as :meth:`complete` until the first delta; a failure after it raises LLMError (what was sent
        cannot be taken back). The whole answer is committed to the cache as its last delta arrives, then
        counted."""
        key = self.key(messages, False, schema, max_tokens)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.usage.add(stage, cache_hits=1)
                yield hit[0]
                return
        s = self.settings
        limit = min(max_tokens or s.max_tokens, s.max_tokens)
        prompt_tokens = sum(estimate_tokens(m["content"]) for m in messages)
        attempt = 0
        parts: list[str] = []
        with self._slots:
            while True:
                self._limiter.acquire(prompt_tokens + limit // 4)
                form, fmt = self._format(False, schema)
                try:
                    extra = {"response_format": fmt} if fmt is not None else {}
                    chunks = iter(self.client.chat.completions.create(
                        model=s.model, messages=list(messages), temperature=s.temperature, max_tokens=limit,
                        stream=True, **extra))
                    first = next(chunks, None)
                    break
                except Exception as exc:  # noqa: BLE001 - classified as in complete()
                    if fmt is not None and self._rejected(form, exc):
                        continue
                    if not _retryable(exc) or attempt >= s.max_retries:
                        self.usage.add(stage, failures=1)
                        raise LLMError(f"{stage}: {type(exc).__name__}: {exc}") from exc
                    delay = _retry_after(exc)
                    attempt += 1
                    self.usage.add(stage, retries=1)
                    self._sleep(min(delay if delay is not None else
                                    self._rng.uniform(0, min(30.0, 0.5 * 2 ** (attempt - 1))), 60.0))
            try:
                chunk = first
                while chunk is not None:
                    delta = chunk.choices[0].delta.content if chunk.choices else None
                    if delta:
                        parts.append(delta)
                        yield delta
                    chunk = next(chunks, None)
            except Exception as exc:  # noqa: BLE001 - the stream broke after text was sent
                self.usage.add(stage, failures=1)
                raise LLMError(f"{stage}: the stream broke: {type(exc).__name__}: {exc}") from exc
        text = "".join(parts)
        if self.cache is not None and text:
            self.cache.put(key, s.model, text, prompt_tokens, estimate_tokens(text))
        self.usage.add(stage, calls=1, input_tokens=prompt_tokens, output_tokens=estimate_tokens(text))

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
