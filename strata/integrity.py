"""Is a published generation still what its run wrote? Per-file sizes and blake2b digests in the manifest.

``publish`` records every file of a generation (``index/chunks.jsonl``, ``reports.json``, ...) with its size and
digest in ``manifest.json``. A generation is checked before the engine serves it, before an index run trusts it
(to start from, or to decide that nothing changed), and by ``strata status``. A damaged one is refused with a
message naming the file; an index run rebuilds it from the store and publishes it again.

The check reads every file once more (from the page cache, right after a run wrote it or while the engine loads
it): ``python -m bench.faults`` prints its cost beside the load time. Each file's result is remembered per process
by its (inode, size, modification time) and published digest, so one run or one server hashes a file once: a
part read on first use (the reports, for the first global question) is checked again by its size and time.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from strata.workspace import GenerationPaths, Workspace

HASH = "blake2b-128"
_CHUNK = 1 << 20
_memo: dict[tuple[str, int, int, int, str], str | None] = {}  # (path, inode, size, mtime, digest) -> problem
_memo_lock = threading.Lock()


class GenerationDamagedError(ValueError):
    """A file of a published generation is missing, cut short or changed since it was published."""

    def __init__(self, paths: GenerationPaths, file: str, problem: str, source: str | None = None) -> None:
        self.number, self.file, self.problem = paths.number, file, problem
        folder = f"`strata index {source}`" if source else "`strata index FOLDER`"
        super().__init__(f"generation {paths.number} is damaged: {file} {problem} ({paths.root / file}); "
                         f"run {folder} to rebuild and republish it")


def file_digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def describe_files(root: Path) -> dict[str, dict[str, Any]]:
    """Every file under ``root`` but the manifest: relative path -> size and digest (what the manifest records)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel != "manifest.json":
            out[rel] = {"size": path.stat().st_size, HASH: file_digest(path)}
    return out


def _manifest(paths: GenerationPaths) -> dict[str, Any]:
    if not paths.root.is_dir():
        raise FileNotFoundError(f"generation {paths.number}: {paths.root} does not exist")
    try:
        manifest = json.loads(paths.manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if not paths.root.is_dir():  # removed meanwhile (a prune)
            raise
        raise GenerationDamagedError(paths, "manifest.json", "is missing") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise GenerationDamagedError(paths, "manifest.json", f"cannot be read ({type(exc).__name__})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files", {}), dict):
        raise GenerationDamagedError(paths, "manifest.json", "is not a generation manifest")
    return manifest


def check(paths: GenerationPaths, prefix: str = "") -> dict[str, Any]:
    """Raise :class:`GenerationDamagedError` unless every file under ``prefix`` (all when empty) is as published;
    returns the manifest. A generation published before manifests listed their files passes unchecked (its
    loader still refuses files that do not fit together). FileNotFoundError when the generation is gone."""
    manifest = _manifest(paths)
    files: dict[str, Any] | None = manifest.get("files")
    if files is None:
        return manifest
    for rel in sorted(n for n in files if n.startswith(prefix)):
        problem = _problem(paths, rel, files[rel])
        if problem is not None:
            raise GenerationDamagedError(paths, rel, problem, manifest.get("source"))
    return manifest


def _problem(paths: GenerationPaths, rel: str, meta: Any) -> str | None:
    """What is wrong with one file of a generation against its manifest entry ``meta`` (None: nothing)."""
    path = paths.root / rel
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if not paths.root.is_dir():
            raise
        return "is missing"
    if not isinstance(meta, dict) or st.st_size != meta.get("size"):
        return f"is {st.st_size} bytes, {meta.get('size') if isinstance(meta, dict) else '?'} were published"
    key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, str(meta.get(HASH)))
    with _memo_lock:
        if key in _memo:
            return _memo[key]
    problem = None if file_digest(path) == meta.get(HASH) else "does not match its published checksum"
    with _memo_lock:
        if len(_memo) > 4096:
            _memo.clear()
        _memo[key] = problem
    return problem


def damage(paths: GenerationPaths) -> str | None:
    """Why this generation cannot be served (None when it can)."""
    try:
        check(paths)
    except (GenerationDamagedError, FileNotFoundError) as exc:
        return str(exc)
    return None


def newest_intact(ws: Workspace) -> GenerationPaths | None:
    """The newest generation that passes :func:`check` (what is served when ``CURRENT`` is lost or garbled)."""
    for number in reversed(ws.numbers()):
        paths = ws.generation(number)
        if damage(paths) is None:
            return paths
    return None
