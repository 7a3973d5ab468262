"""Fault probes: damaged generations, lost pointers, torn logs, damaged caches and stores, full disks; each
followed by ``ask``, ``serve`` (``/v1/ready`` and one memory query), ``status``, ``drift`` and ``index``.

    python -m bench.faults [--corpus samples/infra-notes | --scifact 50] [--cases SUBSTRING,...] [--verbose]
                           [--checksum-docs 5183]

Every case starts from a copy of one workspace that indexed the corpus twice (generation 1, then generation 2
after one document was edited), damages it, and runs the commands in this process through ``strata.cli.main``
and the HTTP app (``strata.api.create_app`` under a test client, with its lifespan). A step either works, or is
refused *clearly*: a one-line error naming the damaged file (or ``disk full`` and a path), never an "internal
error". The case's repair is then run (``strata index FOLDER``, or the command the error named), and the case
counts as ``recovered`` when the served generation's digest equals the uninterrupted run's, the answer and the
memory query equal its answers, the drift files describe the served generation and no staging folder is left.

The cases: each file of the served generation truncated, garbled, and (``chunks.jsonl``) cut at a line
boundary; the manifest; ``CURRENT`` deleted, empty, garbled and naming no generation; a damaged generation
published under a live server (it must keep serving the previous one); a torn last line in ``runs.jsonl``
and ``drift_history.jsonl``; drift files left describing the previous generation, and a cut-off drift.html;
``vectors.sqlite``, ``ledger.sqlite`` and ``llm_cache.sqlite`` truncated and garbled (the LLM cache is opened
directly: offline runs never open it); ``graph.sqlite`` truncated and garbled; a full disk (ENOSPC) during the
reindex: the store and the vector cache capped by SQLite's ``max_page_count`` (SQLite's own "database or disk is
full"), and every file write under the workspace through a byte budget that raises ENOSPC mid-write, set to
land in the generation's staging files and in the drift files after the publish.

``--checksum-docs N`` also indexes the first N SciFact abstracts and times the generation check against a whole
load (figures ``checksum_ms``, ``load_ms``, ``generation_mb``). Run it under ``flock /tmp/strata-bench.lock``.
Last line: JSON with ``cases``, ``recovered``, ``clear_errors``, ``served_500`` (and ``failed`` naming the rest).
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import errno
import io
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("STRATA_SHARED_DATA", ROOT.parent / "shared" / "data"))
QUESTION = "Which service sets max_connections?"
SEARCH = "connection pool timeout"


# -- one command, captured ------------------------------------------------------------------------------------
@dataclass
class Step:
    name: str
    rc: int
    out: str
    err: str

    @property
    def internal(self) -> bool:
        return "internal error" in self.err or "Traceback" in self.err


def cli(*argv: str) -> Step:
    from strata.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return Step(" ".join(a for a in argv if not a.startswith("/")), rc, out.getvalue(), err.getvalue())


@dataclass
class Served:
    ready: int
    ready_body: str
    query: int | None
    results: list[tuple[str, str]] | None
    generation: int | None


def serve(data_dir: Path, before_query: Callable[[Any], None] | None = None) -> Served:
    """The HTTP app with its lifespan: /v1/ready, then one memory query (when ready)."""
    from fastapi.testclient import TestClient

    from core.settings import StrataSettings
    from strata.api import create_app

    settings = StrataSettings(data_dir=data_dir, extraction={"mode": "offline"}, cache={"enabled": False})
    with TestClient(create_app(settings)) as client:
        if before_query is not None:
            before_query(client.app)
        ready = client.get("/v1/ready")
        if ready.status_code != 200:
            return Served(ready.status_code, ready.text, None, None, None)
        q = client.post("/v1/memory/query", json={"query_id": "faults", "search_text": SEARCH, "top_k": 5})
        results = [(r["chunk_id"], r["text"]) for r in q.json().get("results", [])] if q.status_code == 200 else None
        drift = client.get("/v1/drift")
        gen = ready.json().get("index_generation")
        if drift.status_code == 200 and json.loads(drift.text).get("index_generation", -1) < gen:
            return Served(ready.status_code, ready.text, 599, results, gen)  # an older generation's drift report
        return Served(ready.status_code, ready.text, q.status_code, results, gen)


def answer_of(step: Step) -> tuple[str, list[str]] | None:
    if step.rc != 0:
        return None
    data = json.loads(step.out)
    return data["answer"], [c["chunk_id"] for c in data["citations"]]


# -- the corpus and the reference ---------------------------------------------------------------------------
def make_corpus(folder: Path, source: str, scifact: int) -> str:
    """Write the corpus; returns the name of the document the reindex edits."""
    if scifact:
        path = SHARED / "scifact" / "corpus.jsonl"
        folder.mkdir(parents=True)
        with path.open(encoding="utf-8") as fh:
            for line, _ in zip(fh, range(scifact)):
                r = json.loads(line)
                (folder / f"doc_{r['_id']}.txt").write_text(f"{r['title']}\n\n{r['text']}\n", encoding="utf-8")
    else:
        shutil.copytree(ROOT / source, folder)
    return sorted(p.name for p in folder.iterdir() if p.is_file())[0]


def edit(folder: Path, name: str) -> None:
    """One document edited and one added (so that a reindex must grow the store, not only reuse its pages)."""
    p = folder / name
    p.write_text(p.read_text(encoding="utf-8").rstrip("\n") + "\nThe max_connections limit was raised to 400 "
                 "after the connection pool timeout of the spring sale.\n", encoding="utf-8")
    services = ["checkout-service", "inventory-service", "pricing-service", "session-store", "audit-log"]
    lines = [f"The {a} calls the {b} with a connection pool timeout of {i + 2} seconds; its owner is team "
             f"{chr(65 + i)} and the alert named {a}-latency-{i} pages them." for i, (a, b) in
             enumerate(zip(services, services[1:] + services[:1]))]
    (folder / "zz-added-note.md").write_text("# Added note\n\n" + "\n\n".join(lines * 4) + "\n", encoding="utf-8")


@dataclass
class Reference:
    digest: str
    answer: tuple[str, list[str]]
    results: list[tuple[str, str]]


def digest_of(data_dir: Path) -> str | None:
    from strata.workspace import Workspace

    current = Workspace(data_dir).current()
    if current is None:
        return None
    try:
        return json.loads(current.manifest_path.read_text(encoding="utf-8")).get("digest")
    except (OSError, ValueError):
        return None


def reference(data_dir: Path) -> Reference:
    ask = cli("--data-dir", str(data_dir), "ask", QUESTION, "--json")
    served = serve(data_dir)
    assert ask.rc == 0 and served.results is not None, (ask.err, served)
    return Reference(digest_of(data_dir) or "", answer_of(ask), served.results)  # type: ignore[arg-type]


# -- damage -------------------------------------------------------------------------------------------------
def truncate(path: Path) -> None:
    size = path.stat().st_size
    os.truncate(path, size // 2)


def garble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    rng = random.Random(7)
    start = len(data) // 3
    for i in range(start, min(len(data), start + 64)):
        data[i] = rng.randrange(256)
    if not data:
        data = bytearray(b"\xff\xfe")
    path.write_bytes(bytes(data))


def cut_last_line(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))


def garble_header(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.write(b"\x00garbled-header!" * 8)


def tear(path: Path) -> None:
    with open(path, "ab") as fh:
        fh.write(b'{"started_at": "2026-01-01T00:00:00", "source": "no')


# -- a full disk ----------------------------------------------------------------------------------------------
class ByteBudget:
    """Every file opened for writing under ``root`` (``open``, ``io.open``, ``Path.write_*``, numpy, zipfile and
    ``os.write`` on its descriptors) draws from one budget; the write that overdraws it is written in part and
    raises ENOSPC, as a full filesystem does. SQLite's own writes are not seen here (see ``cap_sqlite``)."""

    def __init__(self, root: Path, budget: int | None) -> None:
        self.root, self.left, self.used = str(root.resolve()), budget, 0

    def charge(self, n: int, name: str) -> int:
        """How much of ``n`` may be written; raises after the partial write is accounted."""
        self.used += n
        if self.left is None:
            return n
        if n <= self.left:
            self.left -= n
            return n
        allowed, self.left = self.left, 0
        return allowed

    def under(self, file: Any) -> bool:
        try:
            return os.path.abspath(os.fspath(file)).startswith(self.root)
        except TypeError:
            return False

    @contextlib.contextmanager
    def active(self) -> Iterator["ByteBudget"]:
        real_open, real_io_open, real_write = builtins.open, io.open, os.write
        budget = self

        def limited_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            fh = real_open(file, mode, *args, **kwargs)
            if any(c in mode for c in "wax+") and budget.under(file):
                return _Limited(fh, budget, str(file))
            return fh

        def limited_write(fd: int, data: bytes) -> int:
            try:
                name = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                name = ""
            if name.startswith(budget.root):
                allowed = budget.charge(len(data), name)
                if allowed < len(data):
                    if allowed:
                        real_write(fd, data[:allowed])
                    raise OSError(errno.ENOSPC, "No space left on device", name)
            return real_write(fd, data)

        builtins.open = io.open = limited_open  # type: ignore[assignment]
        os.write = limited_write  # type: ignore[assignment]
        try:
            yield self
        finally:
            builtins.open, io.open, os.write = real_open, real_io_open, real_write  # type: ignore[assignment]


class _Limited:
    def __init__(self, fh: Any, budget: ByteBudget, name: str) -> None:
        self._fh, self._budget, self._name = fh, budget, name

    def write(self, data: Any) -> int:
        n = len(data.encode("utf-8")) if isinstance(data, str) else len(memoryview(data).cast("B"))
        allowed = self._budget.charge(n, self._name)
        if allowed < n:
            if allowed:
                part = data.encode("utf-8")[:allowed] if isinstance(data, str) else bytes(memoryview(data).cast("B"))[:allowed]
                self._fh.buffer.write(part) if isinstance(data, str) else self._fh.write(part)
            raise OSError(errno.ENOSPC, "No space left on device", self._name)
        return self._fh.write(data)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)

    def __enter__(self) -> "_Limited":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._fh.close()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._fh)


@contextlib.contextmanager
def cap_sqlite(path: Path, extra_pages: int) -> Iterator[None]:
    """Connections opened to ``path`` may grow it by ``extra_pages`` pages only (SQLite's ``max_page_count``):
    a write beyond fails with SQLite's own SQLITE_FULL, "database or disk is full"."""
    import core.sqlite_db as sqlite_db

    real = sqlite_db.connect

    def capped(p: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        db = real(p, *args, **kwargs)
        if Path(p).resolve() == path.resolve():
            pages = db.execute("PRAGMA page_count").fetchone()[0]
            db.execute(f"PRAGMA max_page_count = {pages + extra_pages}")
        return db

    modules = [m for m in list(sys.modules.values()) if getattr(m, "connect", None) is real]
    for m in modules:
        m.connect = capped  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for m in modules:
            m.connect = real  # type: ignore[attr-defined]


# -- cases ----------------------------------------------------------------------------------------------------
@dataclass
class Case:
    name: str
    damage: Callable[[Path], None]
    names: tuple[str, ...]  # what a clear refusal names (any of them)
    during_index: Callable[[Path], Any] | None = None  # a context the first `index` runs under (a full disk)
    live_reload: bool = False


@dataclass
class Outcome:
    name: str
    recovered: bool = False
    clear: bool = True
    served_500: int = 0
    notes: list[str] = field(default_factory=list)


class Bench:
    def __init__(self, tmp: Path, source: str, scifact: int, verbose: bool) -> None:
        self.tmp, self.verbose = tmp, verbose
        self.folder = tmp / "corpus"
        edited = make_corpus(self.folder, source, scifact)
        self.base = tmp / "base"
        first = cli("--data-dir", str(self.base), "index", str(self.folder))
        assert first.rc == 0, first.err
        self.gen1 = tmp / "gen1"
        shutil.copytree(self.base, self.gen1)  # the workspace at generation 1 (for the full-disk cases)
        edit(self.folder, edited)
        second = cli("--data-dir", str(self.base), "index", str(self.folder))
        assert second.rc == 0, second.err
        self.ref = reference(self.base)
        # A store rebuilt from the folder (--replace-store) ends as a first index of the edited folder does.
        fresh = tmp / "fresh"
        assert cli("--data-dir", str(fresh), "index", str(self.folder)).rc == 0
        self.ref_fresh = reference(fresh)
        self.n = 0

    def workspace(self, start: Path) -> Path:
        self.n += 1
        ws = self.tmp / f"case{self.n:03d}"
        shutil.copytree(start, ws)
        return ws

    def step_ok_or_clear(self, out: Outcome, step: Step, names: tuple[str, ...]) -> None:
        if step.rc == 0:
            return
        line = step.err.strip().splitlines()[-1] if step.err.strip() else ""
        errors = [l for l in step.err.splitlines() if l.split(":", 1)[0] in
                  ("error", "damaged file", "damaged generation", "disk full", "store error", "busy", "internal error")]
        if step.internal or not any(n in step.err for n in names) or len(errors) > 1:
            out.clear = False
            out.notes.append(f"{step.name}: rc {step.rc}: {line[:300]}")

    def served_ok_or_clear(self, out: Outcome, s: Served, names: tuple[str, ...]) -> None:
        if s.ready == 200:
            if s.query == 500 or s.query is None:
                out.served_500 += 1
                out.clear = False
                out.notes.append("serve: /v1/ready 200 but the memory query failed with 500")
            elif s.query == 599:
                out.clear = False
                out.notes.append("serve: /v1/drift served an older generation's report")
            return
        if s.ready == 500:
            out.served_500 += 1
        if not any(n in s.ready_body for n in names):
            out.clear = False
            out.notes.append(f"serve: /v1/ready {s.ready}: {s.ready_body[:300]}")

    def run(self, case: Case) -> Outcome:
        out = Outcome(case.name)
        ws = self.workspace(self.gen1 if case.during_index else self.base)
        d = ["--data-dir", str(ws)]
        if case.live_reload:
            return self.run_live_reload(case, ws, out)
        if case.during_index:
            with case.during_index(ws):
                first = cli(*d, "index", str(self.folder))
            self.step_ok_or_clear(out, first, case.names)
            out.notes.append(f"index under a full disk: rc {first.rc}: {first.err.strip().splitlines()[-1:]}")
            if first.rc == 0:  # the case tested nothing
                out.clear = False
                out.notes.append("the index run under a full disk did not fail (the cap was not reached)")
            leftovers = list((ws / "generations").glob("*.tmp"))
            if leftovers:
                out.clear = False
                out.notes.append(f"staging folder left behind: {[p.name for p in leftovers]}")
        else:
            case.damage(ws)
        self.step_ok_or_clear(out, cli(*d, "ask", QUESTION, "--json"), case.names)
        self.served_ok_or_clear(out, serve(ws), case.names)
        self.step_ok_or_clear(out, cli(*d, "status", "--json"), case.names)
        self.step_ok_or_clear(out, cli(*d, "drift", "--json"), case.names)
        repair = cli(*d, "index", str(self.folder))
        self.step_ok_or_clear(out, repair, case.names)
        ref = self.ref
        if repair.rc != 0 and "--replace-store" in repair.err:  # the command the error names
            repair = cli(*d, "index", str(self.folder), "--replace-store")
            out.notes.append("repaired by `strata index FOLDER --replace-store`, as the error said")
            self.step_ok_or_clear(out, repair, case.names)
            ref = self.ref_fresh
        out.recovered = repair.rc == 0 and self.right_again(ws, out, ref)
        return out

    def run_live_reload(self, case: Case, ws: Path, out: Outcome) -> Outcome:
        """A server on generation 1 sees a damaged generation 2 published: it must keep serving 1."""
        from strata.workspace import Workspace

        w = Workspace(ws)
        w.point(1)
        seen: dict[str, Any] = {}

        def publish_damaged(app: Any) -> None:
            case.damage(ws)
            w.point(2)
            engine = app.state.holder.engine
            seen["swapped"] = engine.check_reload()
            seen["generation"] = engine.generation
            seen["error"] = engine.reload_error or ""

        s = serve(ws, before_query=publish_damaged)
        self.served_ok_or_clear(out, s, case.names)
        if seen.get("swapped") or seen.get("generation") != 1 or not any(n in seen.get("error", "") for n in case.names):
            out.clear = False
            out.notes.append(f"live reload: {seen}")
        repair = cli("--data-dir", str(ws), "index", str(self.folder))
        self.step_ok_or_clear(out, repair, case.names)
        out.recovered = out.clear and repair.rc == 0 and self.right_again(ws, out)
        return out

    def right_again(self, ws: Path, out: Outcome, ref: Reference | None = None) -> bool:
        from strata.workspace import Workspace

        ref = ref or self.ref
        ok = True
        if digest_of(ws) != ref.digest:
            out.notes.append(f"digest {digest_of(ws)} after the repair, {ref.digest} uninterrupted")
            ok = False
        ask = cli("--data-dir", str(ws), "ask", QUESTION, "--json")
        if answer_of(ask) != ref.answer:
            out.notes.append(f"the answer after the repair differs: {ask.err.strip()[:200]}")
            ok = False
        s = serve(ws)
        if s.results != ref.results:
            out.notes.append(f"the memory query after the repair differs (ready {s.ready}, query {s.query})")
            ok = False
        if s.query == 500:
            out.served_500 += 1
        current = Workspace(ws).current()
        try:
            described = json.loads((ws / "drift" / "drift.json").read_text(encoding="utf-8")).get("index_generation")
        except (OSError, ValueError):
            described = None
        if current is None or described != current.number:
            out.notes.append(f"drift.json describes generation {described}, {current and current.number} is served")
            ok = False
        if not Workspace(ws).current_is_pointed(current) if current else True:
            out.notes.append("CURRENT does not name the served generation after the repair")
            ok = False
        if list((ws / "generations").glob("*.tmp")):
            out.notes.append("a staging folder is left after the repair")
            ok = False
        return ok


def cases(bench: Bench) -> list[Case]:
    from strata.workspace import Workspace

    gen = Workspace(bench.base).current()
    assert gen is not None
    files = sorted(json.loads(gen.manifest_path.read_text(encoding="utf-8"))["files"]) + ["manifest.json"]
    out: list[Case] = []
    for rel in files:
        base_name = rel.rsplit("/", 1)[-1]
        at = lambda ws, rel=rel: Workspace(ws).current().root / rel  # noqa: E731
        out.append(Case(f"generation {rel} truncated", lambda ws, at=at: truncate(at(ws)), (base_name,)))
        out.append(Case(f"generation {rel} garbled", lambda ws, at=at: garble(at(ws)), (base_name,)))
        if rel.endswith(".jsonl"):
            out.append(Case(f"generation {rel} cut at a line boundary", lambda ws, at=at: cut_last_line(at(ws)),
                            (base_name,)))
    chunks = lambda ws: Workspace(ws).generation(2).root / "index" / "chunks.jsonl"  # noqa: E731
    out.append(Case("a damaged generation published under a live server", lambda ws: cut_last_line(chunks(ws)),
                    ("chunks.jsonl",), live_reload=True))
    out += [
        Case("CURRENT deleted", lambda ws: (ws / "CURRENT").unlink(), ("CURRENT",)),
        Case("CURRENT empty", lambda ws: (ws / "CURRENT").write_text(""), ("CURRENT",)),
        Case("CURRENT garbled", lambda ws: (ws / "CURRENT").write_bytes(b"\x00\x9c2x\n"), ("CURRENT",)),
        Case("CURRENT names no generation", lambda ws: (ws / "CURRENT").write_text("17\n"), ("CURRENT",)),
        Case("runs.jsonl torn last line", lambda ws: tear(ws / "runs.jsonl"), ("runs.jsonl",)),
        Case("drift_history.jsonl torn last line", lambda ws: tear(ws / "drift_history.jsonl"),
             ("drift_history.jsonl",)),
        Case("drift files of the previous generation (killed after publish)",
             lambda ws: _old_drift(ws, bench.gen1), ("drift",)),
        Case("drift.html cut off", lambda ws: truncate(ws / "drift" / "drift.html"), ("drift.html",)),
    ]
    for name in ("vectors.sqlite", "ledger.sqlite", "graph.sqlite"):
        out.append(Case(f"{name} truncated", lambda ws, n=name: truncate(ws / n), (name,)))
        out.append(Case(f"{name} garbled", lambda ws, n=name: garble_header(ws / n), (name,)))
    out.append(Case("llm_cache.sqlite truncated", lambda ws: _llm_cache(ws, truncate), ("llm_cache.sqlite",)))
    out.append(Case("llm_cache.sqlite garbled", lambda ws: _llm_cache(ws, garble_header), ("llm_cache.sqlite",)))
    budget = _clean_budget(bench)
    out += [
        Case("disk full: the graph store (SQLite full)", lambda ws: None, ("disk full",),
             during_index=lambda ws: cap_sqlite(ws / "graph.sqlite", 0)),
        Case("disk full: the vector cache (SQLite full)", lambda ws: None, ("disk full",),
             during_index=lambda ws: cap_sqlite(ws / "vectors.sqlite", 0)),
        Case("disk full: the generation's staging files (ENOSPC mid-write)", lambda ws: None, ("disk full",),
             during_index=lambda ws: ByteBudget(ws, budget["staging"]).active()),
        Case("disk full: after the publish (ENOSPC in the drift files)", lambda ws: None, ("disk full",),
             during_index=lambda ws: ByteBudget(ws, budget["after_publish"]).active()),
        Case("disk full: the first write", lambda ws: None, ("disk full",),
             during_index=lambda ws: ByteBudget(ws, 0).active()),
    ]
    return out


def _old_drift(ws: Path, gen1: Path) -> None:
    shutil.rmtree(ws / "drift")
    shutil.copytree(gen1 / "drift", ws / "drift")
    shutil.copy2(gen1 / "drift_history.jsonl", ws / "drift_history.jsonl")


def _llm_cache(ws: Path, damage: Callable[[Path], None]) -> None:
    """An LLM response cache with answers in it, damaged, then opened (as an LLM-mode run opens it): it must be
    set aside with a warning and work empty."""
    from core.llm_client import ResponseCache

    path = ws / "llm_cache.sqlite"
    cache = ResponseCache(path)
    for i in range(300):
        cache.put(f"k{i}", "m", "x" * 500, 1, 1)
    cache.close()
    damage(path)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        cache = ResponseCache(path)
        cache.put("k", "m", "answer", 1, 1)
        assert cache.get("k") == ("answer", 1, 1)
        cache.close()
    assert list(ws.glob("llm_cache.sqlite.damaged-*")), "the damaged LLM cache was not set aside"


def _clean_budget(bench: Bench) -> dict[str, int]:
    """Bytes a clean reindex (generation 1 -> 2) writes to files: where its staging files and its drift files
    fall, so that the full-disk cases land there."""
    ws = bench.workspace(bench.gen1)
    budget = ByteBudget(ws, None)
    marks: dict[str, int] = {}
    import strata.workspace as workspace

    real_publish = workspace.Workspace.publish

    def publish(self: Any, staged: Path, number: int, manifest: dict[str, Any]) -> Any:
        marks["staging_end"] = budget.used
        result = real_publish(self, staged, number, manifest)
        marks["published"] = budget.used
        return result

    workspace.Workspace.publish = publish  # type: ignore[method-assign]
    try:
        with budget.active():
            step = cli("--data-dir", str(ws), "index", str(bench.folder))
    finally:
        workspace.Workspace.publish = real_publish  # type: ignore[method-assign]
    assert step.rc == 0, step.err
    return {"staging": marks["staging_end"] // 2, "after_publish": budget.used - 200}


# -- the cost of the check ------------------------------------------------------------------------------------
def checksum_cost(tmp: Path, docs: int) -> dict[str, float]:
    from core.settings import StrataSettings
    from strata import integrity
    from strata.generations import load_generation
    from strata.workspace import Workspace

    folder = tmp / "scifact"
    make_corpus(folder, "", docs)
    ws = tmp / "scifact-ws"
    step = cli("--data-dir", str(ws), "index", str(folder))
    assert step.rc == 0, step.err
    settings = StrataSettings(data_dir=ws, extraction={"mode": "offline"})
    paths = Workspace(ws).current()
    assert paths is not None
    size = sum(p.stat().st_size for p in paths.root.rglob("*") if p.is_file())
    checks, loads = [], []
    for _ in range(5):
        integrity._memo.clear()
        t = time.perf_counter()
        integrity.check(paths)
        checks.append(time.perf_counter() - t)
        integrity._memo.clear()
        t = time.perf_counter()
        load_generation(paths, settings).close()
        loads.append(time.perf_counter() - t)
    med = lambda xs: sorted(xs)[len(xs) // 2] * 1000  # noqa: E731
    return {"checksum_docs": docs, "generation_mb": round(size / 1e6, 1), "checksum_ms": round(med(checks), 1),
            "load_ms": round(med(loads), 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__.split("\n")[0])
    p.add_argument("--corpus", default="samples/infra-notes", help="a folder in the repository (default %(default)s)")
    p.add_argument("--scifact", type=int, default=0, metavar="N", help="instead, the first N SciFact abstracts")
    p.add_argument("--cases", help="only cases whose name contains one of these (comma-separated)")
    p.add_argument("--checksum-docs", type=int, default=0, metavar="N",
                   help="also time the generation check on the first N SciFact abstracts")
    p.add_argument("--verbose", action="store_true", help="print every case's notes")
    args = p.parse_args(argv)
    os.environ.setdefault("STRATA_RETRIEVAL__EMBEDDER", "hashing")
    os.environ.setdefault("STRATA_EXTRACTION__MODE", "offline")
    from core.threads import configure
    from core.settings import ComputeSettings

    configure(ComputeSettings())
    import logging

    logging.getLogger("strata.request").setLevel(logging.ERROR)  # the server's line per request
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="strata-faults-") as tmp:
        bench = Bench(Path(tmp), args.corpus, args.scifact, args.verbose)
        chosen = cases(bench)
        if args.cases:
            wanted = [w.strip() for w in args.cases.split(",")]
            chosen = [c for c in chosen if any(w in c.name for w in wanted)]
        outcomes = []
        for case in chosen:
            o = bench.run(case)
            outcomes.append(o)
            verdict = "recovered" if o.recovered and o.clear else "clear error" if o.clear else "FAILED"
            print(f"{verdict:12} {case.name}", flush=True)
            if args.verbose or verdict == "FAILED":
                for note in o.notes:
                    print(f"    {note}", flush=True)
        extra = checksum_cost(Path(tmp), args.checksum_docs) if args.checksum_docs else {}
    recovered = sum(1 for o in outcomes if o.recovered and o.clear)
    clear = sum(1 for o in outcomes if o.clear and not o.recovered)
    result = {"cases": len(outcomes), "recovered": recovered, "clear_errors": clear,
              "served_500": sum(o.served_500 for o in outcomes),
              "failed": [o.name for o in outcomes if not o.clear], "corpus": args.corpus if not args.scifact
              else f"scifact:{args.scifact}", "seconds": round(time.perf_counter() - started, 1), **extra}
    print(json.dumps(result))
    return 0 if recovered + clear == len(outcomes) and result["served_500"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
