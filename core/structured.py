"""Structured output: the JSON schema a call asks for, the request forms endpoints accept, and tolerant parsing.

An answer schema is a pydantic model. :func:`wire_schema` turns it into a plain JSON schema that both OpenAI's
strict structured outputs and llama.cpp's grammar compiler accept (references inlined, every property
required, no additional properties, no titles, defaults or numeric bounds: the model itself checks those).
``bounded=True`` keeps the length bounds of strings and lists (``maxLength``, ``maxItems``, and their minima),
which a grammar-compiling endpoint enforces: no string or list of an answer can grow without end (a long
answer can still meet its token limit: the caller sizes that). The answer models declare them in ``json_schema_extra`` where a longer answer
should still be accepted from an endpoint that ignores them.

Endpoints differ in how a schema is asked for, so :data:`FORMS` lists the request forms from the strongest:
``json_schema`` (OpenAI, vLLM, the llama.cpp C++ server), ``json_object_schema`` (``{"type": "json_object",
"schema": ...}``: llama-cpp-python's server, Anyscale), ``json_object`` (valid JSON, no schema) and ``none``.
The client moves down the list when an endpoint rejects a form (see :mod:`core.llm_client`).

Parsing: :func:`parse_strict` accepts exactly one JSON object matching the schema (what a schema-enforcing
endpoint returns); :func:`parse_json_object` also ignores code fences and prose around the object, and salvages
an object cut off by the token limit by closing it after its last complete element.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

FORMS = ("json_schema", "json_object_schema", "json_object", "none")
M = TypeVar("M", bound=BaseModel)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)
_KEEP = ("type", "properties", "required", "items", "enum", "anyOf", "additionalProperties", "description")
BOUNDS = ("maxLength", "minLength", "maxItems", "minItems")


def wire_schema(model: type[BaseModel], bounded: bool = False) -> dict[str, Any]:
    """``model``'s JSON schema in the portable strict form described in the module docstring (``bounded``: with
    its length bounds)."""
    keep = _KEEP + BOUNDS if bounded else _KEEP
    raw = model.model_json_schema()
    defs = raw.get("$defs", {})

    def clean(node: Any) -> Any:
        if isinstance(node, list):
            return [clean(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return clean(defs[node["$ref"].rsplit("/", 1)[-1]])
        out = {k: clean(v) for k, v in node.items() if k in keep and k != "properties"}
        if "properties" in node:
            out["properties"] = {k: clean(v) for k, v in node["properties"].items()}
            out["required"] = list(node["properties"])
            out["additionalProperties"] = False
        return out

    return clean({k: v for k, v in raw.items() if k != "$defs"})


def response_format(form: str, name: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` request field for ``form`` (one of :data:`FORMS`), or None for ``none``."""
    if form == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
    if form == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    if form == "json_object":
        return {"type": "json_object"}
    if form == "none":
        return None
    raise ValueError(f"unknown structured-output form {form!r}; known: {', '.join(FORMS)}")


def _validate(data: Any, model: type[M], what: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"JSON does not match the {what}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from exc


def parse_strict(text: str, model: type[M], what: str = "schema") -> M:
    """``text`` as exactly one JSON value matching ``model``; ValueError otherwise."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} at character {exc.pos}") from exc
    return _validate(data, model, what)


def salvage(raw: str) -> Any | None:
    """A JSON object cut off mid-way (a runaway answer stopped by max_tokens), closed after its last complete
    element: the longest prefix ending in ``}`` or ``]`` that parses once its open brackets are closed."""
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []  # (end of a complete element, the closers needed there)
    in_str = esc = False
    for i, ch in enumerate(raw):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack:
                return None
            stack.pop()
            cuts.append((i + 1, "".join(reversed(stack))))
    for end, closers in reversed(cuts[-200:]):
        try:
            return json.loads(raw[:end] + closers)
        except json.JSONDecodeError:
            continue
    return None


def parse_json_object(text: str, model: type[M], what: str = "schema") -> M:
    """Tolerant parsing of one JSON object in an answer: code fences and prose around it are ignored, an object
    cut off by the token limit is closed after its last complete element, and ``model`` is enforced.
    ValueError names what is wrong."""
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
            data = salvage(raw[start:])
            if data is None:
                raise ValueError(f"invalid JSON (truncated or malformed): {exc.msg} at character {exc.pos}") from exc
    return _validate(data, model, what)
