"""The folders a workspace indexes, and the guard that keeps an index run from wiping another folder's documents.

A workspace records the folder(s) it indexes in ``<data-dir>/folders.json``. An index run of a folder the
workspace does not record is refused with one line naming both, unless the run says what it wants: ``add``
(index both; every run then loads all of them, so the documents of each are kept) or ``replace`` (the
workspace indexes only the new folder from now on, and the documents of the old one are deleted as documents
gone from the folder are). The first folder's documents keep the ids they always had (their paths in the
folder); an added folder's documents are named with a prefix of their own (``docs/index.md``), so that two
folders' ``index.md`` never collide.

A workspace made before the record existed is read as indexing the folder of its last run (``runs.jsonl``).
The record is written under the run lock, before the run changes the store, and checked again there, so two
runs started at once cannot both pass the guard with different folders.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from core.records import Document, LoadProblem
from extraction.loader import LoadResult, load_folder
from strata.workspace import Workspace

FOLDERS_FILE = "folders.json"
FolderPolicy = Literal["refuse", "add", "replace"]
POLICIES: tuple[str, ...] = ("refuse", "add", "replace")


class FolderError(ValueError):
    """An index run whose folder does not fit the workspace (another folder's, or none given or recorded)."""


@dataclass(frozen=True, slots=True)
class IndexedFolder:
    """One folder a workspace indexes: its absolute path, and what is put in front of its document ids."""

    path: str
    prefix: str = ""


@dataclass(frozen=True, slots=True)
class FolderPlan:
    """The folders one run loads and records, and the record it was planned against."""

    before: tuple[IndexedFolder, ...]
    folders: tuple[IndexedFolder, ...]
    given: str | None = None  # the folder as the user wrote it, for the run's summary

    @property
    def source(self) -> str:
        if self.given is not None and len(self.folders) == 1:
            return self.given
        return " + ".join(f.path for f in self.folders)


def _absolute(folder: Path | str) -> str:
    return str(Path(folder).expanduser().resolve())


def folders_path(ws: Workspace) -> Path:
    return ws.root / FOLDERS_FILE


def recorded_folders(ws: Workspace) -> tuple[IndexedFolder, ...]:
    """The folders the workspace indexes: its record, or for a workspace made before the record existed the
    folder of its last run; () for a new workspace."""
    path = folders_path(ws)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return tuple(IndexedFolder(str(f["path"]), str(f.get("prefix", ""))) for f in data["folders"])
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FolderError(f"{path} is unreadable ({exc}); pass --replace to record the folder anew") from None
    last = _last_run_source(ws)
    return (IndexedFolder(_absolute(last)),) if last else ()


UNREADABLE = (IndexedFolder("(an unreadable folders.json)"),)


def _recorded_or_unreadable(ws: Workspace) -> tuple[IndexedFolder, ...]:
    """As :func:`recorded_folders`, with :data:`UNREADABLE` standing for a record that cannot be read (which
    only ``replace`` may write over)."""
    try:
        return recorded_folders(ws)
    except FolderError:
        return UNREADABLE


def _last_run_source(ws: Workspace) -> str | None:
    try:
        lines = ws.runs_path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            source = json.loads(line).get("source")
        except (ValueError, AttributeError):
            continue  # a torn or odd line: an older one may still say
        if isinstance(source, str) and source and " + " not in source:
            return source
    return None


def _named(folders: tuple[IndexedFolder, ...]) -> str:
    first = folders[0].path
    return first if len(folders) == 1 else f"{first} and {len(folders) - 1} more folder(s)"


def _prefix_for(path: str, taken: set[str]) -> str:
    name = Path(path).name or "folder"
    prefix, n = f"{name}/", 2
    while prefix in taken:
        prefix, n = f"{name}-{n}/", n + 1
    return prefix


def plan_folders(ws: Workspace, folder: Path | str | None, policy: str = "refuse",
                 spelled: tuple[str, str] = ("--add", "--replace")) -> FolderPlan:
    """The folders a run of ``folder`` (None: the workspace's own) loads. Raises :class:`FolderError` for a
    folder the workspace does not index unless ``policy`` is ``add`` or ``replace`` (``spelled``: how the caller
    says those two, named in the message), and for no folder at all."""
    if policy not in POLICIES:
        raise FolderError(f"unknown folder policy {policy!r}; one of {', '.join(POLICIES)}")
    before = _recorded_or_unreadable(ws) if policy == "replace" and folder is not None else recorded_folders(ws)
    if folder is None:
        if not before:
            raise FolderError(f"the workspace {ws.root} records no folder yet; name the folder to index")
        return FolderPlan(before, before)
    wanted = _absolute(folder)
    if policy == "replace":
        return FolderPlan(before, (IndexedFolder(wanted),), str(folder))
    if not before:
        return FolderPlan(before, (IndexedFolder(wanted),), str(folder))
    if any(f.path == wanted for f in before):
        return FolderPlan(before, before, str(folder))
    if policy == "add":
        added = IndexedFolder(wanted, _prefix_for(wanted, {f.prefix for f in before}))
        return FolderPlan(before, (*before, added), str(folder))
    add, replace_ = spelled
    raise FolderError(f"the workspace {ws.root} indexes {_named(before)}, not {wanted}: pass {add} to index both, "
                      f"or {replace_} to index only {wanted} (the documents of {_named(before)} are then deleted)")


def commit_plan(ws: Workspace, plan: FolderPlan) -> None:
    """Under the run lock, before the store changes: check the record is still the one planned against, and
    write the plan's folders (atomically)."""
    if _recorded_or_unreadable(ws) != plan.before:
        raise FolderError(f"the folders of {ws.root} changed while this run started; run it again")
    if plan.folders == plan.before and folders_path(ws).exists():
        return
    path = folders_path(ws)
    tmp = path.with_name(f"{FOLDERS_FILE}.{os.getpid()}.tmp")
    body = {"folders": [{"path": f.path, "prefix": f.prefix} for f in plan.folders]}
    tmp.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def load_planned(plan: FolderPlan, text_field: str = "text") -> LoadResult:
    """Every planned folder loaded into one result; an added folder's ids, sources and paths carry its prefix.
    A document id met in two folders is a problem named like a duplicate within one folder."""
    if len(plan.folders) == 1 and not plan.folders[0].prefix:
        return load_folder(plan.folders[0].path, text_field)
    docs: dict[str, Document] = {}
    problems: list[LoadProblem] = []
    failed: set[str] = set()
    empty: list[str] = []
    unsupported: dict[str, int] = {}
    for f in plan.folders:
        if not Path(f.path).exists():
            raise FileNotFoundError(f"{f.path}: no such folder (the workspace indexes it; to stop, index the "
                                    "others with --replace)")
        res = load_folder(f.path, text_field)
        p = f.prefix
        for d in res.documents:
            d = replace(d, id=p + d.id, source=p + d.source)
            if d.id in docs:
                problems.append(LoadProblem(d.source, f"duplicate document id {d.id!r} (first seen in "
                                                      f"{docs[d.id].source}); skipped"))
            else:
                docs[d.id] = d
        problems += [LoadProblem(p + x.path, x.reason) for x in res.problems]
        failed |= {p + i for i in res.failed_ids}
        empty += [p + e for e in res.empty]
        for suffix, n in res.unsupported:
            unsupported[suffix] = unsupported.get(suffix, 0) + n
    counts = tuple(sorted(unsupported.items(), key=lambda kv: (-kv[1], kv[0])))
    return LoadResult(tuple(docs.values()), tuple(problems), frozenset(failed - docs.keys()),
                      tuple(empty), counts)
