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
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

import openai
from pydantic import BaseModel, ValidationError

from core.records import stable_hash
from core.sqlite_db import connect
from core.settings import LLMSettings

Message = dict[str, str]


class LLMError(RuntimeError):
    """An LLM call failed after its retries (or with an error that retrying cannot fix)."""


class ParseFailure(ValueError):
    """The answer arrived but could not be used; it is not cached, so a later run asks again."""

    def __init__(self, text: str, error: str) -> None:
        super().__init__(error)
        self.text = text
        self.error = error


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)
M = TypeVar("M", bound=BaseModel)


def parse_json_object(text: str, model: type[M], what: str = "schema") -> M:
    """Tolerant parsing of one JSON object in an answer: code fences and prose around it are ignored, a
    truncated object is reported as such, and ``model`` is enforced. ValueError names what is wrong."""
    raw = _FENCE.sub("", text.strip())
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as first:
        start, end = raw.find("{"), raw.rfind("}")
        if start < 0:
            raise ValueError("the answer holds no JSON object") from first
        try:
            data = json.loads(raw[start:end + 1] if end > start else raw[start:])
        except json.JSONDecodeError as exc:
            raise ValueError(f"invalid JSON (truncated or malformed): {exc.msg} at character {exc.pos}") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"JSON does not match the {what}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from exc


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
                for k in ("calls", "cache_hits", "input_tokens", "output_tokens", "retries", "failures"):
                    setattr(t, k, getattr(t, k) + getattr(s, k))
            return t

    def to_dict(self) -> dict[str, dict[str, int]]:
        with self.lock:
            return {k: vars(v).copy() for k, v in sorted(self.stages.items())}


class ResponseCache:
    """Answers by request hash, in SQLite; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self._db = connect(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, text TEXT, "
                         "input_tokens INTEGER, output_tokens INTEGER, created_at REAL)")
        self._lock = threading.Lock()

    def get(self, key: str) -> tuple[str, int, int] | None:
        with self._lock:
            row = self._db.execute("SELECT text, input_tokens, output_tokens FROM responses WHERE key = ?", (key,)).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def put(self, key: str, model: str, text: str, input_tokens: int, output_tokens: int) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?)",
                             (key, model, text, input_tokens, output_tokens, time.time()))

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


class LLMClient:
    """Chat completions with cache, retries, limits and accounting. The ``openai`` client is injected."""

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

    @classmethod
    def from_settings(cls, settings: LLMSettings, cache_path: Path | None) -> "LLMClient":
        client = openai.OpenAI(
            base_url=settings.base_url, api_key=settings.api_key.get_secret_value() if settings.api_key else "not-needed",
            timeout=settings.request_timeout_s, max_retries=0)
        return cls(client, settings, ResponseCache(cache_path) if cache_path else None)

    def key(self, messages: Sequence[Message], json_mode: bool) -> str:
        s = self.settings
        return stable_hash(s.model, json.dumps(list(messages), sort_keys=True, ensure_ascii=False),
                           str(s.temperature), str(s.max_tokens), str(json_mode and s.json_mode), size=20)

    def complete(self, stage: str, messages: Sequence[Message], json_mode: bool = False,
                 parse: Callable[[str], Any] | None = None) -> Any:
        """The answer to ``messages`` (parsed by ``parse`` when given), from the cache when this exact call was
        made before. An answer that ``parse`` rejects raises :class:`ParseFailure` and is not cached."""
        key = self.key(messages, json_mode)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.usage.add(stage, cache_hits=1)
                return parse(hit[0]) if parse else hit[0]
        s = self.settings
        prompt_tokens = sum(estimate_tokens(m["content"]) for m in messages)
        attempt = 0
        while True:
            self._limiter.acquire(prompt_tokens + s.max_tokens // 4)
            try:
                with self._slots:
                    kwargs: dict[str, Any] = {"model": s.model, "messages": list(messages), "temperature": s.temperature,
                                              "max_tokens": s.max_tokens}
                    if json_mode and s.json_mode:
                        kwargs["response_format"] = {"type": "json_object"}
                    response = self.client.chat.completions.create(**kwargs)
            except Exception as exc:  # noqa: BLE001 - classified just below
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
            self.usage.add(stage, calls=1, input_tokens=tin, output_tokens=tout)
            result: Any = text
            if parse is not None:
                try:
                    result = parse(text)
                except ValueError as exc:
                    raise ParseFailure(text, str(exc)) from exc
            if self.cache is not None and text:
                self.cache.put(key, s.model, text, tin, tout)
            return result

    def stream(self, stage: str, messages: Sequence[Message]) -> Iterator[str]:
        """The answer to ``messages`` as text deltas as the endpoint sends them (``stream=True``); a cached answer
        comes as one delta. Retries as :meth:`complete` until the first delta; a failure after it raises
        LLMError (what was sent cannot be taken back). The whole answer is cached and counted at the end."""
        key = self.key(messages, False)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.usage.add(stage, cache_hits=1)
                yield hit[0]
                return
        s = self.settings
        prompt_tokens = sum(estimate_tokens(m["content"]) for m in messages)
        attempt = 0
        parts: list[str] = []
        with self._slots:
            while True:
                self._limiter.acquire(prompt_tokens + s.max_tokens // 4)
                try:
                    chunks = iter(self.client.chat.completions.create(
                        model=s.model, messages=list(messages), temperature=s.temperature, max_tokens=s.max_tokens,
                        stream=True))
                    first = next(chunks, None)
                    break
                except Exception as exc:  # noqa: BLE001 - classified as in complete()
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
        self.usage.add(stage, calls=1, input_tokens=prompt_tokens, output_tokens=estimate_tokens(text))
        if self.cache is not None and text:
            self.cache.put(key, s.model, text, prompt_tokens, estimate_tokens(text))

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
