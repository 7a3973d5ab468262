"""Load a folder of documents: .txt and .md files, and .jsonl files with one document per line.

A document's id is its path relative to the folder (or, in .jsonl, its ``id``/``_id`` field). Metadata comes
from YAML front matter, a sidecar ``<file>.meta.json`` / ``<file>.meta.yaml``, and the path (``path``,
``dir``, ``ext``). Files that cannot be read are reported as :class:`LoadProblem`, never silently skipped,
and never stop the rest of the folder from loading.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml

from core.records import Document, LoadProblem, stable_hash

TEXT_SUFFIXES = {".txt", ".md", ".markdown"}
JSONL_SUFFIXES = {".jsonl"}
SIDECAR_SUFFIXES = (".meta.json", ".meta.yaml", ".meta.yml")


class EmptyCorpusError(ValueError):
    """The folder holds no file Strata can index."""


@dataclass(frozen=True, slots=True)
class LoadResult:
    """Documents loaded from a folder and the files that could not be loaded."""

    documents: tuple[Document, ...]
    problems: tuple[LoadProblem, ...]


def content_hash(text: str) -> str:
    return stable_hash(text, size=20)


def _split_front_matter(text: str, path: str) -> tuple[dict[str, Any], str]:
    """Split YAML front matter (``---`` fenced, at the very start) from the body."""
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            try:
                meta = yaml.safe_load("\n".join(lines[1:i])) or {}
            except yaml.YAMLError as exc:
                raise ValueError(f"invalid YAML front matter: {exc}".splitlines()[0]) from exc
            if not isinstance(meta, dict):
                raise ValueError("YAML front matter must be a mapping")
            return meta, "\n".join(lines[i + 1:])
    return {}, text


def _read_sidecar(path: Path) -> dict[str, Any]:
    for suffix in SIDECAR_SUFFIXES:
        side = path.with_name(path.name + suffix)
        if side.exists():
            raw = side.read_text(encoding="utf-8")
            data = json.loads(raw) if suffix == ".meta.json" else yaml.safe_load(raw)
            if not isinstance(data, dict):
                raise ValueError(f"sidecar {side.name} must hold a mapping")
            return data
    return {}


def _json_safe(meta: dict[str, Any]) -> dict[str, Any]:
    """Metadata values as JSON-compatible scalars or lists (dates become ISO strings)."""
    out: dict[str, Any] = {}
    for key, value in meta.items():
        if isinstance(value, (str, int, float, bool)) or value is None:
            out[str(key)] = value
        elif isinstance(value, (list, tuple)):
            out[str(key)] = [v if isinstance(v, (str, int, float, bool)) else str(v) for v in value]
        elif hasattr(value, "isoformat"):
            out[str(key)] = value.isoformat()
        else:
            out[str(key)] = json.dumps(value, default=str, sort_keys=True)
    return out


def _decode(raw: bytes, rel: str) -> str:
    if b"\x00" in raw[:8192]:
        raise ValueError("binary file (contains NUL bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8 (byte {exc.start}: {exc.reason})") from exc
    return text.lstrip("\ufeff").replace("\r\n", "\n")


def _path_meta(rel: str) -> dict[str, Any]:
    p = Path(rel)
    return {"path": rel, "dir": p.parent.as_posix() if p.parent.as_posix() != "." else "", "ext": p.suffix.lstrip(".")}


def _load_text_file(path: Path, rel: str) -> Document:
    text = _decode(path.read_bytes(), rel)
    front, body = _split_front_matter(text, rel)
    meta = {**_path_meta(rel), **_read_sidecar(path), **front}
    doc_id = str(meta.pop("id", rel))
    if not body.strip():
        raise ValueError("empty document")
    return Document(id=doc_id, source=rel, text=body, content_hash=content_hash(body), metadata=_json_safe(meta))


def _load_jsonl(path: Path, rel: str, text_field: str) -> Iterator[Document | LoadProblem]:
    text = _decode(path.read_bytes(), rel)
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{rel}:{lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            yield LoadProblem(where, f"invalid JSON: {exc.msg}")
            continue
        if not isinstance(row, dict):
            yield LoadProblem(where, "a line must be a JSON object")
            continue
        body = row.get(text_field)
        if not isinstance(body, str) or not body.strip():
            yield LoadProblem(where, f"no non-empty string field {text_field!r}")
            continue
        title = row.get("title")
        if isinstance(title, str) and title.strip():
            body = f"{title.strip()}\n{body}"
        doc_id = str(row.get("id", row.get("_id", f"{rel}#{lineno}")))
        meta = {k: v for k, v in row.items() if k not in (text_field, "id", "_id")}
        meta = {**_path_meta(rel), "line": lineno, **meta}
        yield Document(id=doc_id, source=where, text=body, content_hash=content_hash(body), metadata=_json_safe(meta))


def iter_files(folder: Path) -> list[Path]:
    """Indexable files below ``folder`` in a stable order (sidecars and hidden files excluded)."""
    files = []
    for path in sorted(folder.rglob("*")):
        rel_parts = path.relative_to(folder).parts
        if any(part.startswith(".") for part in rel_parts) or not path.is_file():
            continue
        if path.name.endswith(SIDECAR_SUFFIXES):
            continue
        if path.suffix.lower() in TEXT_SUFFIXES | JSONL_SUFFIXES:
            files.append(path)
    return files


def load_folder(folder: Path | str, text_field: str = "text") -> LoadResult:
    """Load every indexable file below ``folder`` (or the single file ``folder``).

    Raises :class:`EmptyCorpusError` when there is nothing to index; returns problems for files that failed.
    """
    root = Path(folder)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such file or folder")
    if root.is_file():
        files, base = [root], root.parent
    else:
        files, base = iter_files(root), root
    if not files:
        raise EmptyCorpusError(f"{root}: no .txt, .md or .jsonl files to index")
    docs: dict[str, Document] = {}
    problems: list[LoadProblem] = []

    def accept(doc: Document) -> None:
        if doc.id in docs:
            problems.append(LoadProblem(doc.source, f"duplicate document id {doc.id!r} (first seen in {docs[doc.id].source}); skipped"))
        else:
            docs[doc.id] = doc

    for path in files:
        rel = path.relative_to(base).as_posix()
        try:
            if path.suffix.lower() in JSONL_SUFFIXES:
                for item in _load_jsonl(path, rel, text_field):
                    if isinstance(item, LoadProblem):
                        problems.append(item)
                    else:
                        accept(item)
            else:
                accept(_load_text_file(path, rel))
        except (OSError, ValueError) as exc:
            problems.append(LoadProblem(rel, str(exc)))
    if not docs and not problems:
        raise EmptyCorpusError(f"{root}: no documents with text to index")
    return LoadResult(tuple(docs.values()), tuple(problems))
