"""The configuration reference of the documentation site, generated from the settings model.

Every section of ``core.settings.StrataSettings`` becomes a table: each field's dotted name, type (with its
allowed values or bounds), default, what it does and the ``STRATA_*`` variable that sets it (``env_name``, the
function the CLI uses to name variables). The page is rendered while the site builds, so it cannot fall behind
the code: this module is also the MkDocs hook named in mkdocs.yml, and it replaces ``MARKER`` in
docs/configuration.md with the tables. ``python -m strata.docs_config`` prints them.

A field's description comes from the model. ``UNDESCRIBED`` words the fields the model leaves without one (most
from the table the README used to hold); a test fails when an entry names no field or the model gains a
description for it, so each entry goes once core/settings.py says the same.
"""

from __future__ import annotations

import html
import re
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from core.project_source import section_model
from core.settings import StrataSettings, env_name

MARKER = "<!-- strata:settings-reference -->"
REFERENCE_PAGE = "configuration.md"  # the page, under docs/, that holds MARKER

UNDESCRIBED: dict[str, str] = {
    "chunking.chunk_tokens": "tokens a chunk holds (LLM-mode chunks are also sized to fit `llm.context_tokens`)",
    "chunking.overlap_tokens": "tokens consecutive chunks share; smaller than `chunk_tokens`",
    "extraction.mode": "`offline`, `llm`, or `auto`: the LLM when an endpoint is configured (`llm.base_url` or "
                       "`llm.api_key`), else offline",
    "extraction.gleanings": "extra LLM rounds asking for entities the first round missed",
    "extraction.description_max_chars": "an entity's merged description is cut at this length",
    "llm.base_url": "the OpenAI-compatible endpoint (`http://HOST:PORT/v1`); with neither it nor `api_key` set "
                    "Strata runs offline",
    "llm.api_key": "the endpoint's API key",
    "llm.model": "the model every call names",
    "llm.temperature": "sampling temperature of every call",
    "llm.max_concurrency": "LLM calls in flight at once",
    "llm.requests_per_minute": "requests a minute at most; unset: no limit",
    "llm.tokens_per_minute": "tokens a minute at most; unset: no limit",
    "llm.max_retries": "retries of a call after a 429, a 5xx, a timeout or a connection error, with exponential "
                       "backoff and jitter",
    "llm.json_mode": "`false`: never ask for JSON output (as `structured_output = \"none\"`)",
    "store.backend": "the graph store: `embedded` (SQLite in the workspace, no setup) or `neo4j`",
    "store.neo4j_uri": "Neo4j's Bolt address (`neo4j+s://...` for a cluster or Aura)",
    "store.neo4j_user": "Neo4j user",
    "store.neo4j_password": "Neo4j password",
    "store.neo4j_database": "Neo4j database",
    "store.batch_size": "Neo4j rows written per transaction",
    "store.connection_timeout_s": "seconds the Neo4j driver waits for a connection",
    "communities.engine": "`igraph` (fast) or `leidenalg` (more objectives)",
    "communities.objective": "Leiden's quality function: modularity, or the Constant Potts Model (`cpm`); "
                             "incremental re-partitioning needs modularity",
    "communities.resolution": "Leiden's resolution: higher gives smaller communities",
    "communities.seed": "Leiden's random seed: the same graph gives the same communities",
    "communities.max_cluster_size": "a community larger than this is split again on the level below",
    "communities.max_levels": "levels of the community hierarchy at most",
    "communities.report_max_findings": "findings a community report holds at most",
    "communities.report_context_tokens": "input tokens an LLM community report is written from at most",
    "retrieval.bm25_k1": "BM25's term-frequency saturation (rank_bm25's `k1`)",
    "retrieval.bm25_b": "BM25's document-length normalization (rank_bm25's `b`)",
    "retrieval.bm25_epsilon": "floor of a negative IDF, as a share of the mean IDF (rank_bm25's `epsilon`)",
    "retrieval.stopwords": "BM25 drops stop words",
    "retrieval.stemming": "BM25 terms are stems",
    "retrieval.hashing_dim": "dimensions of embedder 'hashing'",
    "retrieval.sparse_weight": "default BM25 weight in fusion",
    "retrieval.rrf_k": "Reciprocal Rank Fusion's `k`: a list contributes `weight / (k + rank)`",
    "retrieval.top_k": "passages an answer is read from",
    "retrieval.answer_sentences": "sentences an offline local answer quotes",
    "retrieval.global_reports": "community reports a global answer reads",
    "cache.enabled": "cache memory-query results and answers in the API server",
    "log.format": "`json`: one JSON object a line (server requests, index stages and runs); `text`: plain lines",
    "log.level": "the least severe level logged",
}


def type_text(annotation: Any) -> str:
    """A field's type as a reader writes values: choices quoted, ``X | None`` as optional, secrets named."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin in (Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        inner = " or ".join(type_text(a) for a in kept)
        return f"{inner}, optional" if len(kept) < len(args) else inner
    if origin is list:
        return f"list of {type_text(args[0])} (JSON)" if args else "list (JSON)"
    if annotation is SecretStr:
        return "secret string"
    if annotation is Path:
        return "path"
    return getattr(annotation, "__name__", str(annotation))


def bounds_text(info: FieldInfo) -> str:
    """A field's numeric bounds (``>= 16, <= 8192``), or ''."""
    out = []
    for meta in info.metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            value = getattr(meta, attr, None)
            if value is not None:
                out.append(f"{sign} {value}")
    return ", ".join(out)


def default_text(info: FieldInfo) -> str:
    """A field's default as it would be written in strata.toml or the environment; 'unset' for None."""
    value = info.get_default(call_default_factory=True)
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (list, tuple)):
        return "`[]`" if not value else "`" + ", ".join(map(str, value)) + "`"
    return f"`{value}`"


def description_text(key: str, info: FieldInfo) -> str:
    """What a field does, as Markdown: the model's description (plain text, so its ``<name>`` or ``*`` are
    escaped), else ``UNDESCRIBED``'s words (written as Markdown), else ''."""
    if info.description:
        text = html.escape(" ".join(info.description.split()), quote=False)
        return re.sub(r"([\\`*_\[\]])", r"\\\1", text)
    return UNDESCRIBED.get(key, "")


def _cell(text: str) -> str:
    # A pipe would end the table cell; a line break would end the row.
    return text.replace("|", "\\|").replace("\n", " ")


def _table(model: type[BaseModel], prefix: tuple[str, ...]) -> list[str]:
    rows = ["| setting | type | default | environment variable | what it does |", "|---|---|---|---|---|"]
    for name, info in model.model_fields.items():
        if section_model(info.annotation) is not None:
            continue
        loc = (*prefix, name)
        key = ".".join(loc)
        kind = type_text(info.annotation)
        bounds = bounds_text(info)
        cells = [f"`{key}`", kind + (f" ({bounds})" if bounds else ""), default_text(info), f"`{env_name(loc)}`",
                 description_text(key, info)]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return rows


def _doc(model: type[BaseModel]) -> str:
    return " ".join((model.__doc__ or "").split())


def render_reference(root: type[BaseModel] = StrataSettings) -> str:
    """The reference as Markdown: the root's own fields, then one section (a heading and a table) per nested
    model, in the model's order."""
    lines = ["## Top level", "", *_table(root, ())]
    for name, info in root.model_fields.items():
        sub = section_model(info.annotation)
        if sub is None:
            continue
        lines += ["", f"## `{name}`", "", _doc(sub), "",
                  f"The whole section can also be set at once as JSON in `{env_name((name,))}`.", "",
                  *_table(sub, (name,))]
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """MkDocs hook: put the reference where the configuration page holds ``MARKER``."""
    if page.file.src_uri != REFERENCE_PAGE:
        return markdown
    if markdown.count(MARKER) != 1:
        raise ValueError(f"docs/{REFERENCE_PAGE} must hold {MARKER} exactly once (it holds it "
                         f"{markdown.count(MARKER)} times)")
    return markdown.replace(MARKER, render_reference())


def main() -> None:
    print(render_reference(), end="")


if __name__ == "__main__":
    main()
