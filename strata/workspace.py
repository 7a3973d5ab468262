"""The workspace folder and its index generations.

The graph store is the source of truth for documents, chunks, entities and relations. Everything the query side
reads (chunk index, entity lexicon, communities, reports) is written by an index run into a new folder
``generations/<n>/`` and published in one atomic step: ``CURRENT`` (a small file naming ``n``) is replaced by a
rename. A reader never sees a half-written generation; a run killed before the rename leaves the previous one
serving. Readers hold a lease (a file naming their process and generation) so that pruning keeps what they
use; old generations beyond the last ``keep`` go once no live reader holds them.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

GENERATION_FORMAT = 1


class IndexLockedError(RuntimeError):
    """Another index run holds the workspace."""


class UnfinishedRunError(RuntimeError):
    """The last index run died before publishing; the store holds its half-written state."""


@dataclass(frozen=True, slots=True)
class GenerationPaths:
    """The files of one published generation."""

    number: int
    root: Path

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def lexicon_path(self) -> Path:
        return self.root / "entities.json"

    @property
    def communities_path(self) -> Path:
        return self.root / "communities.json"

    @property
    def signatures_path(self) -> Path:
        return self.root / "entity_signatures.json"

    @property
    def reports_path(self) -> Path:
        return self.root / "reports.json"

    @property
    def manifest_path(self) -> Path:
        return self.root / "manifest.json"

    def manifest(self) -> dict[str, Any]:
        return json.loads(self.manifest_path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Workspace:
    """Where an index lives: the embedded store, caches, the run log and the published generations."""

    root: Path

    # -- fixed files --------------------------------------------------------------------------------------
    @property
    def runs_path(self) -> Path:
        return self.root / "runs.jsonl"

    @property
    def pending_path(self) -> Path:
        """Present while a run is changing the store; a leftover one means the last run died mid-way."""
        return self.root / "run.pending"

    @property
    def generations_dir(self) -> Path:
        return self.root / "generations"

    @property
    def current_path(self) -> Path:
        return self.root / "CURRENT"

    @property
    def leases_dir(self) -> Path:
        return self.root / "leases"

    # -- generations --------------------------------------------------------------------------------------
    def generation(self, number: int) -> GenerationPaths:
        return GenerationPaths(number, self.generations_dir / f"{number:06d}")

    def current_number(self) -> int | None:
        """The published generation's number, or None before the first run finished."""
        try:
            text = self.current_path.read_bytes().decode("ascii").strip()
        except (FileNotFoundError, UnicodeDecodeError):  # lost or garbled: see current()
            return None
        return int(text) if text.isdigit() else None

    def current(self) -> GenerationPaths | None:
        """The published generation: the one ``CURRENT`` names, or, when ``CURRENT`` is lost, empty, garbled or
        names no generation, the newest intact one (see :mod:`strata.integrity`)."""
        n = self.current_number()
        if n is not None and self.generation(n).root.is_dir():
            return self.generation(n)
        if not self.numbers():
            return None
        from strata.integrity import newest_intact

        return newest_intact(self)

    def current_is_pointed(self, paths: GenerationPaths) -> bool:
        """Whether ``CURRENT`` itself names ``paths`` (False when :meth:`current` fell back to it)."""
        return self.current_number() == paths.number

    def current_stamp(self) -> tuple[int, int] | None:
        """A cheap change detector for readers: the pointer file's inode and modification time (one stat)."""
        try:
            st = os.stat(self.current_path)
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_mtime_ns

    @property
    def lexicon_path(self) -> Path:
        """The entity lexicon of the published generation (a path that does not exist before the first run)."""
        current = self.current()
        return current.lexicon_path if current else self.generations_dir / "none" / "entities.json"

    def staging(self, number: int) -> Path:
        """A fresh folder to write generation ``number`` into before it is published."""
        path = self.generations_dir / f"{number:06d}.tmp"
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    def publish(self, staged: Path, number: int, manifest: dict[str, Any]) -> GenerationPaths:
        """Move a staged folder into place and point ``CURRENT`` at it; both steps are renames."""
        from strata.integrity import describe_files

        # Every file with its size and digest: checked before the generation is served or trusted.
        manifest = {"format": GENERATION_FORMAT, "generation": number, **manifest, "files": describe_files(staged)}
        (staged / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
        _fsync_dir(staged)
        final = self.generation(number)
        if final.root.exists():  # left by a run killed between these two renames: it never served
            shutil.rmtree(final.root)
        os.replace(staged, final.root)
        self.point(number)
        return final

    def point(self, number: int) -> None:
        """Make ``CURRENT`` name generation ``number`` (written aside, then renamed over it)."""
        tmp = self.current_path.with_name(f"CURRENT.{os.getpid()}.tmp")
        try:
            tmp.write_text(f"{number}\n", encoding="ascii")
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, self.current_path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(self.root)

    def numbers(self) -> list[int]:
        if not self.generations_dir.exists():
            return []
        return sorted(int(p.name) for p in self.generations_dir.iterdir() if p.is_dir() and p.name.isdigit())

    def prune(self, keep: int) -> list[int]:
        """Remove generations beyond the newest ``keep`` that no live reader holds, and staging folders of
        runs that died. Returns the numbers removed."""
        current = self.current_number()
        held = self.held_generations()
        numbers = self.numbers()
        keep_set = set(numbers[-max(1, keep):]) | held | ({current} if current is not None else set())
        removed = []
        for n in numbers:
            if n not in keep_set:
                shutil.rmtree(self.generation(n).root, ignore_errors=True)
                removed.append(n)
        if self.generations_dir.exists():
            for p in self.generations_dir.glob("*.tmp"):
                shutil.rmtree(p, ignore_errors=True)
        return removed

    # -- reader leases ------------------------------------------------------------------------------------
    def held_generations(self) -> set[int]:
        """Generations named by the leases of live processes; leases of dead processes are removed."""
        held: set[int] = set()
        if not self.leases_dir.exists():
            return held
        for path in self.leases_dir.glob("*.json"):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                pid = int(data["pid"])
                numbers = {int(n) for n in data.get("generations", [data["generation"]])}
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if pid_alive(pid):
                held |= numbers
            else:
                path.unlink(missing_ok=True)
        return held

    # -- one index run at a time --------------------------------------------------------------------------
    def lock(self) -> "RunLock":
        return RunLock(self.root / "index.lock")


class Lease:
    """A reader's claim on the generations it uses (the one it serves and any that requests still in flight
    started on), kept up to date as the reader swaps generations."""

    def __init__(self, ws: Workspace) -> None:
        self.path = ws.leases_dir / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json"

    def hold(self, number: int, *also: int) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"pid": os.getpid(), "generation": number,
                                       "generations": sorted({number, *also}), "since": time.time()}))
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only workspace: readers still work, pruning just cannot see them

    def release(self) -> None:
        self.path.unlink(missing_ok=True)


class RunLock:
    """An exclusive lock on the workspace for one index run (released when the process dies, even by kill -9)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: Any = None

    def __enter__(self) -> "RunLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "a+")
        try:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._fh.close()
            raise IndexLockedError(f"another index run is using {self.path.parent}; run this one again when it "
                                   "has finished") from None
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
        self._fh.close()


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def iter_runs(root: Path) -> Iterator[dict[str, Any]]:
    """The run log's records, oldest first (a line torn by a crash is skipped; see :mod:`strata.jsonlog`)."""
    from strata.jsonlog import read_jsonl

    yield from read_jsonl(Workspace(root).runs_path)
