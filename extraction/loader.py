"""Load a folder of documents: .txt and .md files, and .jsonl files with one document per line.

A document's id is its path relative to the folder (or, in .jsonl, its ``id``/``_id`` field). Metadata comes
from YAML front matter, a sidecar ``<file>.meta.json`` / ``<file>.meta.yaml``, and the path (``path``,
``dir``, ``ext``). Files that cannot be read are reported as :class:`LoadProblem`, never silently skipped,
and never stop the rest of the folder from loading. A file with no text (blank, or front matter only, as many
a docs site's ``index.md``) is not a problem: it is listed as empty and has nothing to index. Files of types
Strata does not read are counted by extension, so that a run can name them once.

A Markdown file (``.md``, ``.markdown``) is read with a Markdown parser and its text is the clean normalized
Markdown of :mod:`extraction.markdown_text` (no attribute lists, admonition or tab markers, HTML or link
targets), so that chunks, entities, titles and quotes see what a reader of the page sees; its structure gives
its ``kind`` (:mod:`extraction.kinds`) unless its metadata names one.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml

from core.records import Document, LoadProblem, stable_hash
from extraction.kinds import kind_of
from extraction.markdown_text import normalize_markdown
from extraction.site_nav import nav_titles
from extraction.titles import file_title, heading_title

TEXT_SUFFIXES = {".txt", ".md", ".markdown"}
MARKDOWN_SUFFIXES = {".md", ".markdown"}
JSONL_SUFFIXES = {".jsonl"}
SIDECAR_SUFFIXES = (".meta.json", ".meta.yaml", ".meta.yml")


class EmptyCorpusError(ValueError):
    """The folder holds no file Strata can index."""


class EmptyDocumentError(ValueError):
    """A file with no text to index (blank, or front matter only)."""


@dataclass(frozen=True, slots=True)
class LoadResult:
    """Documents loaded from a folder and the files that could not be loaded."""

    documents: tuple[Document, ...]
    problems: tuple[LoadProblem, ...]
    # Ids of documents whose file or row failed to load this time: an index run keeps their stored versions
    # (a file that fails to load is not a deleted file).
    failed_ids: frozenset[str] = frozenset()
    # Files with no text (blank, or front matter only): nothing to index, and not a failure.
    empty: tuple[str, ...] = ()
    # Files of types Strata does not read, counted by extension ("" for none), most common first.
    unsupported: tuple[tuple[str, int], ...] = ()


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


def _load_text_file(path: Path, rel: str, nav_title: str | None = None) -> Document:
    return document_from_text(rel, _decode(path.read_bytes(), rel), _read_sidecar(path), nav_title)


def document_from_text(rel: str, text: str, sidecar: dict[str, Any] | None = None,
                       nav_title: str | None = None) -> Document:
    """The document a ``.txt`` or ``.md`` file at ``rel`` holding ``text`` becomes (front matter and ``sidecar``
    metadata, Markdown normalized, its kind); EmptyDocumentError for a file with no text. ``nav_title``: the
    title the site's navigation gives a Markdown page (:mod:`extraction.site_nav`), its title when it has none
    of its own (no front matter ``title``, no first-line ``#`` heading), as the generator titles it; without
    one, the title its file's name gives it (:func:`extraction.titles.file_title`)."""
    front, body = _split_front_matter(text, rel)
    meta = {**_path_meta(rel), **(sidecar or {}), **front}
    doc_id = str(meta.pop("id", rel))
    if Path(rel).suffix.lower() in MARKDOWN_SUFFIXES:
        page = normalize_markdown(body)
        body = page.text
        untitled = "title" not in meta and heading_title(body) is None
        if untitled and nav_title:
            meta["title"] = nav_title
        title = meta.get("title")
        meta.setdefault("kind", kind_of(page.shape, title if isinstance(title, str) else None))
        if untitled and not nav_title and (named := file_title(rel)):  # after the kind: a file name is no heading
            meta["title"] = named
    if not body.strip():
        raise EmptyDocumentError("no text (blank, or front matter only)")
    return Document(id=doc_id, source=rel, text=body, content_hash=content_hash(body), metadata=_json_safe(meta))


_ID_FIELD = re.compile(r'"_?id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)')


def _row_id(line: str, rel: str, lineno: int) -> str:
    """A failed row's document id, read from its text as well as it can be (or the default ``file#line``)."""
    try:
        row = json.loads(line)
        if isinstance(row, dict) and ("id" in row or "_id" in row):
            return str(row.get("id", row.get("_id")))
    except ValueError:
        m = _ID_FIELD.search(line)
        if m:
            try:
                return str(json.loads(m.group(1)))
            except ValueError:
                pass
    return f"{rel}#{lineno}"


def _check_text(value: Any, name: str) -> None:
    """ValueError when a string (or any string inside a list or mapping) holds a lone surrogate escape."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"field {name!r} holds a lone surrogate escape "
                             f"(\\u{ord(value[exc.start]):04x}), not valid Unicode") from None
    elif isinstance(value, list):
        for v in value:
            _check_text(v, name)
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_text(k, name)
            _check_text(v, f"{name}.{k}" if isinstance(k, str) else name)


class RowProblem(ValueError):
    """A .jsonl row that cannot be indexed; carries the id it would have had."""

    def __init__(self, reason: str, doc_id: str) -> None:
        super().__init__(reason)
        self.doc_id = doc_id


def document_from_row(line: str, rel: str, lineno: int, text_field: str) -> Document:
    """The document of one JSON Lines row (line ``lineno`` of the file ``rel``): its ``text_field``, under its
    ``title`` on a line of its own when it has one, and its other fields as metadata. RowProblem when the row
    cannot be one."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise RowProblem(f"invalid JSON: {exc.msg}", _row_id(line, rel, lineno)) from None
    if not isinstance(row, dict):
        raise RowProblem("a line must be a JSON object", f"{rel}#{lineno}")
    doc_id = row.get("id", row.get("_id", f"{rel}#{lineno}"))
    try:
        doc_id = str(doc_id)
        for key, value in row.items():
            _check_text(key, "(a field name)")
            _check_text(value, key)
        body = row.get(text_field)
        if not isinstance(body, str) or not body.strip():
            raise ValueError(f"no non-empty string field {text_field!r}")
    except ValueError as exc:
        raise RowProblem(str(exc), f"{rel}#{lineno}" if not isinstance(doc_id, str) else doc_id) from None
    title = row.get("title")
    if isinstance(title, str) and title.strip():
        body = f"{title.strip()}\n{body}"
    meta = {k: v for k, v in row.items() if k not in (text_field, "id", "_id")}
    meta = {**_path_meta(rel), "line": lineno, **meta}
    # The row is named by its id, not its position (rows above it may come and go); its current line is in
    # the metadata, and a changed line makes the document's revision change, so it stays current.
    source = doc_id if doc_id.startswith(f"{rel}#") else f"{rel}#{doc_id}"
    return Document(id=doc_id, source=source, text=body, content_hash=content_hash(body), metadata=_json_safe(meta))


def _load_jsonl(path: Path, rel: str, text_field: str) -> Iterator[Document | LoadProblem | RowProblem]:
    """One document per line. A line that fails (bad bytes, bad JSON, a lone surrogate escape, no text) is
    reported with its line number, and every other line is still loaded."""
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise ValueError("binary file (contains NUL bytes)")
    for lineno, raw_line in enumerate(raw.split(b"\n"), start=1):
        if lineno == 1:
            raw_line = raw_line.removeprefix(b"\xef\xbb\xbf")
        if not raw_line.strip():
            continue
        where = f"{rel}:{lineno}"
        try:
            line = raw_line.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            yield LoadProblem(where, f"not valid UTF-8 (byte {exc.start}: {exc.reason})")
            yield RowProblem("", _row_id(raw_line.decode("utf-8", "replace"), rel, lineno))
            continue
        try:
            yield document_from_row(line, rel, lineno, text_field)
        except RowProblem as exc:
            yield LoadProblem(where, str(exc))
            yield exc


@dataclass(frozen=True, slots=True)
class FolderScan:
    """The indexable files below a folder, the paths that were skipped with the reason, and how many regular
    files of each unsupported extension were left out."""

    files: tuple[Path, ...]
    skipped: tuple[LoadProblem, ...]
    unsupported: tuple[tuple[str, int], ...] = ()


def _indexable(name: str) -> bool:
    return Path(name).suffix.lower() in TEXT_SUFFIXES | JSONL_SUFFIXES and not name.endswith(SIDECAR_SUFFIXES)


def scan_folder(folder: Path) -> FolderScan:
    """Walk ``folder`` in a stable order. Hidden entries and files of other types are left out as a matter of
    course; a path that looks indexable but cannot be (a FIFO, socket or device, a broken symlink, a symlink
    loop, a folder named like a document) is skipped and named with the reason. Symlinks are followed, each
    folder at most once."""
    files: list[Path] = []
    skipped: list[LoadProblem] = []
    unsupported: dict[str, int] = {}
    seen: set[tuple[int, int]] = set()

    def skip(path: Path, reason: str) -> None:
        skipped.append(LoadProblem(path.relative_to(folder).as_posix(), f"skipped: {reason}"))

    def walk(d: Path) -> None:
        st = d.stat()
        if (st.st_dev, st.st_ino) in seen:
            skip(d, "a symlink to a folder already walked (a loop)")
            return
        seen.add((st.st_dev, st.st_ino))
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            skip(d, f"cannot list the folder ({exc.strerror})")
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            try:
                st = os.stat(path)  # follows symlinks
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    skip(path, "a symlink loop")
                elif entry.is_symlink() and _indexable(entry.name):
                    skip(path, "a broken symlink")
                elif _indexable(entry.name):
                    skip(path, f"cannot read it ({exc.strerror})")
                continue
            if stat.S_ISDIR(st.st_mode):
                if _indexable(entry.name):
                    skip(path, "a folder named like a document; not walked (rename it, or index it on its own)")
                else:
                    walk(path)
            elif _indexable(entry.name):
                if stat.S_ISREG(st.st_mode):
                    files.append(path)
                else:
                    kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                            else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "special")
                    skip(path, f"{kind}, not a regular file")
            elif stat.S_ISREG(st.st_mode) and not entry.name.endswith(SIDECAR_SUFFIXES):
                suffix = Path(entry.name).suffix.lower()
                unsupported[suffix] = unsupported.get(suffix, 0) + 1

    walk(folder)
    return FolderScan(tuple(files), tuple(skipped), tuple(sorted(unsupported.items(), key=lambda kv: (-kv[1], kv[0]))))


def describe_unsupported(suffix: str, count: int) -> str:
    """One line for the files of one unsupported type: ``3 .pdf files skipped: unsupported type``."""
    what = f"{suffix} file" if suffix else "file without an extension"
    return f"{count} {what}{'s' if count != 1 else ''} skipped: unsupported type"


def skipped_notes(empty: list[str] | tuple[str, ...], unsupported: dict[str, int]) -> list[str]:
    """What a load left out that is not a failure, one line each: the empty documents (a few named), and the
    files of each unsupported type."""
    lines = []
    if empty:
        shown = ", ".join(empty[:3]) + (f" and {len(empty) - 3} more" if len(empty) > 3 else "")
        lines.append(f"{len(empty)} empty document(s) skipped (no text, or front matter only): {shown}")
    return lines + [describe_unsupported(suffix, n) for suffix, n in unsupported.items()]


def _front_matter_id(raw: bytes) -> str | None:
    """The ``id:`` of a file's front matter read leniently, for a file that failed to load."""
    text = raw[:65536].decode("utf-8", "replace")
    if not text.startswith("---"):
        return None
    for line in text.split("\n")[1:200]:
        if line.strip() in ("---", "..."):
            return None
        if line.startswith("id:"):
            value = line[3:].strip().strip("'\"")
            return value or None
    return None


def load_folder(folder: Path | str, text_field: str = "text") -> LoadResult:
    """Load every indexable file below ``folder`` (or the single file ``folder``).

    Raises :class:`EmptyCorpusError` when there is nothing to index; returns problems for files and rows that
    failed (each named, a row with its line) and for skipped paths, and the ids of documents that failed.
    """
    root = Path(folder)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such file or folder")
    unsupported: tuple[tuple[str, int], ...] = ()
    if root.is_file():
        files, base, skipped = (root,), root.parent, ()
    else:
        scan = scan_folder(root)
        files, base, skipped, unsupported = scan.files, root, scan.skipped, scan.unsupported
    if not files and not skipped:
        found = "; ".join(describe_unsupported(s, n) for s, n in unsupported)
        raise EmptyCorpusError(f"{root}: no .txt, .md or .jsonl files to index" + (f" ({found})" if found else ""))
    docs: dict[str, Document] = {}
    empty: list[str] = []
    problems: list[LoadProblem] = list(skipped)
    titles = nav_titles(root) if root.is_dir() else {}  # a docs site's page titles from its navigation
    failed: set[str] = {p.path for p in skipped}

    def accept(doc: Document, where: str) -> None:
        if doc.id in docs:
            problems.append(LoadProblem(where, f"duplicate document id {doc.id!r} (first seen in {docs[doc.id].source}); skipped"))
        else:
            docs[doc.id] = doc

    for path in files:
        rel = path.relative_to(base).as_posix()
        try:
            if path.suffix.lower() in JSONL_SUFFIXES:
                for item in _load_jsonl(path, rel, text_field):
                    if isinstance(item, LoadProblem):
                        problems.append(item)
                    elif isinstance(item, RowProblem):
                        failed.add(item.doc_id)
                    else:
                        accept(item, f"{rel}:{item.metadata['line']}")
            else:
                accept(_load_text_file(path, rel, titles.get(rel)), rel)
        except EmptyDocumentError:
            empty.append(rel)
        except (OSError, ValueError) as exc:
            problems.append(LoadProblem(rel, exc.strerror or str(exc) if isinstance(exc, OSError) else str(exc)))
            failed.add(rel)
            try:
                fm_id = _front_matter_id(path.read_bytes())
            except OSError:
                fm_id = None
            if fm_id:
                failed.add(fm_id)
    if not docs and not problems:
        detail = f" ({len(empty)} file(s) hold no text: blank, or front matter only)" if empty else ""
        raise EmptyCorpusError(f"{root}: no documents with text to index{detail}")
    return LoadResult(tuple(docs.values()), tuple(problems), frozenset(failed - docs.keys()), tuple(empty),
                      unsupported)
