"""Kills at any instant: ``strata index`` / ``strata reindex`` killed (SIGKILL) at seeded random wall-clock times,
then run again to the end, and compared field by field with an uninterrupted run.

    python -m bench.kill [--trials 40] [--store sqlite|neo4j] [--docs 300] [--seed 1] [--seeds 7,19]

The corpus is the first --docs SciFact abstracts, written as .txt files into a temporary folder (read from the
shared evaluation data, never copied into the repository); extraction is offline and the embedder is whatever
``STRATA_RETRIEVAL__EMBEDDER`` says (the test suite uses ``hashing``, so that a trial takes seconds). Two
scenarios: a first index of the corpus, and a reindex after 5% of it changed (edited, deleted and added
documents), run as ``strata index`` or ``strata reindex``. A trial's seed decides the scenario, the command, how
many times it is killed before the clean finish (1 or 2) and when: a third of the kills at a uniform instant of
the uninterrupted run's wall time, a third inside one stage's window (plan to publish, the windows measured from
the uninterrupted run's ``stage_seconds``), a third inside the publish's file writes (timed from the moment its
staging folder appears: the window is a fraction of a second, which a wall-clock estimate misses on a busy
machine), so that kills land inside store transactions, batches and the publish's file writes. ``died_in``
counts where the killed runs were, from what they left: changing the store (``run.pending``), writing a
generation (its staging folder), after publishing, or before changing anything. The rerun is the same command,
run to the end; the trial is then compared with the uninterrupted run on everything a user can observe
(:func:`observable_state`: entities, relations, communities, reports, documents, the served generation and
the top 10 of 20 searches). On Neo4j the reference is the embedded
store's uninterrupted run, so both backends must end identical too.

Each differing trial is printed with its seed; ``--seeds`` reruns exactly those. Last line: one JSON object with
``trials``, ``identical``, ``differing`` and ``seeds_differing``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from strata.runmetrics import STAGES

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("STRATA_SHARED_DATA", ROOT.parent / "shared" / "data"))
EDIT_NOTE = " A later revision adds that the result was confirmed in an independent replication."


# -- the corpus --------------------------------------------------------------------------------------------
def scifact_rows(n: int) -> list[dict[str, str]]:
    """The first ``n`` SciFact abstracts."""
    path = SHARED / "scifact" / "corpus.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"SciFact not found at {path} (set STRATA_SHARED_DATA)")
    rows = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if len(rows) >= n:
                break
            rows.append(json.loads(line))
    return rows


def write_corpus(folder: Path, rows: Sequence[dict[str, str]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for r in rows:
        (folder / f"doc_{r['_id']}.txt").write_text(f"{r['title']}\n\n{r['text']}\n", encoding="utf-8")


def edit_corpus(folder: Path, extra: Sequence[dict[str, str]], share: float = 0.05) -> None:
    """A reindex's worth of change, the same every time: of ``share`` of the documents, half are edited (a
    sentence appended), a quarter deleted, and as many new ones (``extra``) added."""
    names = sorted(p.name for p in folder.glob("*.txt"))
    count = max(4, round(len(names) * share))
    chosen = random.Random(5).sample(names, count)
    for name in chosen[: count // 2]:
        p = folder / name
        p.write_text(p.read_text(encoding="utf-8").rstrip("\n") + EDIT_NOTE + "\n", encoding="utf-8")
    for name in chosen[count // 2: count // 2 + count // 4]:
        (folder / name).unlink()
    write_corpus(folder, extra[: count // 4])


def scifact_queries(n: int = 20) -> tuple[str, ...]:
    with (SHARED / "scifact" / "queries_test.jsonl").open(encoding="utf-8") as f:
        return tuple(json.loads(line)["text"] for line, _ in zip(f, range(n)))


# -- what a user can observe, and how two states differ ------------------------------------------------------
def observable_state(settings: Any, queries: Sequence[str]) -> dict[str, Any]:
    """Everything a user can observe, field by field (report timestamps aside): the store's entities,
    relations, communities, reports and documents, and the served generation's reports, communities, chunks
    and the top 10 of each query."""
    from core.store import open_store
    from strata.engine import Engine

    store = open_store(settings)
    try:
        snap = store.read_graph()
        reports = [replace(r, created_at="") for r in store.reports()]
        communities = store.communities()
        docs = store.document_hashes()
    finally:
        store.close()
    engine = Engine(settings)
    try:
        hits = {q: [(h.chunk_id, round(h.rrf_score, 12), h.source) for h in engine.index.search(q, 10)] for q in queries}
        served = {"reports": [replace(r, created_at="") for r in engine.reports()],
                  "communities": engine.current.communities, "chunks": [r.chunk_id for r in engine.index.rows]}
    finally:
        engine.close()
    return {"entities": list(snap.entities), "relations": list(snap.relations), "communities": communities,
            "reports": reports, "documents": docs, "hits": hits, "served": served}


def _keyed(items: Sequence[Any]) -> dict[str, Any]:
    return {x.id if hasattr(x, "id") else x.community_id: x for x in items}


def state_differences(got: dict[str, Any], want: dict[str, Any]) -> list[str]:
    """One line per field that differs (empty: identical), naming an example."""
    out = []
    for key in want:
        if key in ("entities", "relations", "reports", "communities"):
            g, w = _keyed(got[key]), _keyed(want[key])
            if g.keys() != w.keys():
                out.append(f"{key}: ids differ: {sorted(g.keys() ^ w.keys())[:5]}")
                continue
            diff = [k for k in w if g[k] != w[k]]
            if diff:
                out.append(f"{key} differ ({len(diff)}), e.g. {g[diff[0]]!r} vs {w[diff[0]]!r}")
        elif got[key] != want[key]:
            if isinstance(want[key], dict):
                keys = [k for k in want[key] if got[key].get(k) != want[key][k]] or sorted(set(got[key]) ^ set(want[key]))
                out.append(f"{key} differ at {keys[:3]}")
            else:
                out.append(f"{key} differ")
    return out


# -- running and killing the command --------------------------------------------------------------------------
@dataclass(frozen=True)
class Store:
    """Where the graph lives: the embedded store (in the data dir) or a Neo4j server (shared by every trial)."""

    backend: str = "embedded"
    neo4j_uri: str = ""
    neo4j_password: str = ""

    @classmethod
    def neo4j_from_env(cls) -> "Store":
        port = os.environ.get("NEO4J_PORT", "7687")
        return cls("neo4j", os.environ.get("STRATA_STORE__NEO4J_URI", f"bolt://127.0.0.1:{port}"),
                   os.environ.get("STRATA_STORE__NEO4J_PASSWORD", os.environ.get("NEO4J_PASSWORD", "strata-dev-password")))

    def settings(self, data_dir: Path) -> Any:
        from core.settings import StrataSettings

        conf: dict[str, Any] = {"data_dir": str(data_dir), "extraction": {"mode": "offline"}}
        if self.backend == "neo4j":
            conf["store"] = {"backend": "neo4j", "neo4j_uri": self.neo4j_uri, "neo4j_password": self.neo4j_password,
                             "batch_size": 500}
        return StrataSettings(**conf)

    def env(self, data_dir: Path) -> dict[str, str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "STRATA_DATA_DIR": str(data_dir),
               "STRATA_EXTRACTION__MODE": "offline", "STRATA_STORE__BACKEND": self.backend}
        if self.backend == "neo4j":
            env.update(STRATA_STORE__NEO4J_URI=self.neo4j_uri, STRATA_STORE__NEO4J_PASSWORD=self.neo4j_password,
                       STRATA_STORE__BATCH_SIZE="500")
        return env

    def clear(self, data_dir: Path) -> None:
        """A Neo4j trial starts from an empty database (the embedded store starts from its data dir)."""
        if self.backend != "neo4j":
            return
        from core.store import open_store

        store = open_store(self.settings(data_dir))
        try:
            store.clear()
        finally:
            store.close()


def cli(command: str, folder: Path) -> list[str]:
    return [sys.executable, "-m", "strata.cli", command, str(folder)]


def run_uninterrupted(command: str, folder: Path, store: Store, data_dir: Path) -> float:
    """Runs the command to the end; returns its wall time."""
    t0 = time.perf_counter()
    proc = subprocess.run(cli(command, folder), env=store.env(data_dir), capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"strata {command} failed (rc {proc.returncode}): {proc.stderr[-2000:]}")
    return time.perf_counter() - t0


def rerun(command: str, folder: Path, store: Store, data_dir: Path) -> None:
    """The next run, to the end, as a user would start it."""
    run_uninterrupted(command, folder, store, data_dir)


PACKAGES = ("core", "extraction", "communities", "retrieval", "strata", "prompts")


def code_fingerprint() -> str:
    """Size and modification time of every source file the command runs: a tree edited while the bench runs
    (a shared checkout) changes it, and a reference built from other code is no reference."""
    import hashlib

    h = hashlib.blake2b(digest_size=12)
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*")):
            if path.suffix in (".py", ".txt", ".json") and "__pycache__" not in path.parts:
                st = path.stat()
                h.update(f"{path.relative_to(ROOT)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


def _staging_appears(proc: subprocess.Popen, data_dir: Path) -> bool:  # type: ignore[type-arg]
    """Waits until the run starts writing a generation (its staging folder appears); False if it ends first."""
    generations = data_dir / "generations"
    while proc.poll() is None:
        if generations.is_dir() and any(generations.glob("*.tmp")):
            return True
        time.sleep(0.002)
    return False


def run_killed(command: str, folder: Path, store: Store, data_dir: Path, at: float, in_publish: bool = False) -> bool:
    """Starts the command and kills it (SIGKILL) ``at`` seconds later, or with ``in_publish`` ``at`` seconds
    after it starts writing the new generation's files; False when it finished first."""
    with tempfile.TemporaryFile() as log:  # a file, not a pipe: a full pipe would stall the run before its kill
        proc = subprocess.Popen(cli(command, folder), env=store.env(data_dir), stdout=subprocess.DEVNULL, stderr=log)
        try:
            if in_publish and not _staging_appears(proc, data_dir):
                raise _Finished()
            proc.wait(timeout=at)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
        except _Finished:
            pass
        log.seek(0)
        err = log.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"strata {command} failed before its kill at {at:.2f} s (rc {proc.returncode}): {err[-2000:]}")
    return False


class _Finished(Exception):
    """The run ended before the point it was to be killed at."""


def current_number(data_dir: Path) -> int:
    try:
        text = (data_dir / "CURRENT").read_text(encoding="ascii").strip()
    except OSError:
        return 0
    return int(text) if text.isdigit() else 0


def where_it_died(data_dir: Path, current_before: int) -> str:
    """What a killed run left tells where it was: writing a generation (a staging folder), changing the store
    (``run.pending``), after publishing (``CURRENT`` moved on), or before it changed anything."""
    if any((data_dir / "generations").glob("*.tmp")):
        return "publish"
    if (data_dir / "run.pending").exists():
        return "store"
    if current_number(data_dir) > current_before:
        return "after-publish"
    return "before-changes"


# -- trials -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Timing:
    """An uninterrupted run's wall time and its stages' windows (seconds from the command's start)."""

    wall: float
    windows: dict[str, tuple[float, float]]

    @classmethod
    def measure(cls, wall: float, data_dir: Path) -> "Timing":
        lines = (data_dir / "runs.jsonl").read_text(encoding="utf-8").splitlines()
        stages = json.loads(lines[-1]).get("stage_seconds", {})
        total = sum(float(stages.get(s, 0.0)) for s in STAGES)
        start = max(0.0, wall - total - 0.3)  # imports and loading before the first stage; the summary after
        windows = {}
        for s in STAGES:
            d = float(stages.get(s, 0.0))
            windows[s] = (start, start + d)
            start += d
        return cls(wall, windows)


@dataclass(frozen=True)
class Plan:
    """What a seed decides."""

    seed: int
    scenario: str  # "index" (a first index) or "reindex" (after 5% of the corpus changed)
    command: str  # "index" or "reindex"
    kills: tuple[tuple[float, str], ...]  # (seconds after the start, where it was aimed: "any" or a stage)

    @classmethod
    def draw(cls, seed: int, timings: dict[str, Timing]) -> "Plan":
        rng = random.Random(seed)
        scenario = rng.choice(("index", "reindex"))
        command = "index" if scenario == "index" else rng.choice(("index", "reindex"))
        timing = timings[scenario]
        kills = []
        for _ in range(rng.choice((1, 1, 2))):
            draw = rng.random()
            if draw < 1 / 3:
                kills.append((round(rng.uniform(0.05, timing.wall), 3), "any"))
            else:
                stages = [s for s in STAGES if timing.windows[s][1] > timing.windows[s][0]]
                stage = "publish" if draw >= 2 / 3 and "publish" in stages else rng.choice(stages)
                lo, hi = timing.windows[stage]
                # A kill in the publish's file writes is timed from the moment they start.
                kills.append((round(rng.uniform(0.0, hi - lo) if stage == "publish" else rng.uniform(lo, hi), 3), stage))
        return cls(seed, scenario, command, tuple(kills))


@dataclass
class TrialResult:
    plan: Plan
    killed: list[bool]
    differences: list[str] = field(default_factory=list)
    died: list[str] = field(default_factory=list)  # where each killed run was (see where_it_died)

    def line(self) -> str:
        kills = ", ".join(f"{t:.2f}s ({aim}; {'died ' + d if k else 'finished first'})"
                          for (t, aim), k, d in zip(self.plan.kills, self.killed, self.died))
        verdict = "identical" if not self.differences else "DIFFERS: " + "; ".join(self.differences)
        return f"seed {self.plan.seed}: {self.plan.scenario} via `strata {self.plan.command}`, killed at {kills}: {verdict}"


class Harness:
    """Builds the corpus and the uninterrupted references once, then runs trials against them."""

    def __init__(self, work: Path, store: Store, docs: int = 300) -> None:
        from core.settings import StrataSettings
        from core.threads import configure

        configure(StrataSettings().compute)
        self.work, self.store = work, store
        rows = scifact_rows(docs + docs // 10)
        self.queries = scifact_queries()
        # Each scenario runs on one folder path; the reindex's folder holds the corpus as it was before the
        # change while its starting point is indexed, then the changed corpus.
        self.folders = {"index": work / "corpus", "reindex": work / "corpus-r"}
        self.before, self.after = work / "content-before", work / "content-after"
        write_corpus(self.folders["index"], rows[:docs])
        write_corpus(self.before, rows[:docs])
        shutil.copytree(self.before, self.after)
        edit_corpus(self.after, rows[docs:])
        self.rebuilt = 0  # references rebuilt because the code changed under the bench
        self.build_references()

    def build_references(self) -> None:
        """The uninterrupted runs (the embedded store's: the reference on every backend) and their timings."""
        work, store = self.work, self.store
        while True:
            self.fingerprint = code_fingerprint()
            reference = Store()
            ref_index, self.before_reindex, ref_reindex = work / "ref-index", work / "before-reindex", work / "ref-reindex"
            for d in (ref_index, self.before_reindex, ref_reindex, work / "timing"):
                shutil.rmtree(d, ignore_errors=True)
            run_uninterrupted("index", self.folders["index"], reference, ref_index)
            self._index_before(reference, self.before_reindex)
            shutil.copytree(self.before_reindex, ref_reindex)
            reindex_wall = run_uninterrupted("reindex", self.folders["reindex"], reference, ref_reindex)
            self.want = {"index": observable_state(reference.settings(ref_index), self.queries),
                         "reindex": observable_state(reference.settings(ref_reindex), self.queries)}
            self.timings = {"reindex": Timing.measure(reindex_wall, ref_reindex)}
            timing_dir = work / "timing"
            store.clear(timing_dir)
            wall = run_uninterrupted("index", self.folders["index"], store, timing_dir)
            self.timings["index"] = Timing.measure(wall, timing_dir)
            if store.backend == "neo4j":
                shutil.rmtree(timing_dir)
                self.prepare("reindex", timing_dir)
                wall = run_uninterrupted("reindex", self.folders["reindex"], store, timing_dir)
                self.timings["reindex"] = Timing.measure(wall, timing_dir)
            if code_fingerprint() == self.fingerprint:
                return

    def _index_before(self, store: Store, data_dir: Path) -> None:
        """Index the corpus as it was before the change at the reindex's folder, then put the changed corpus there."""
        folder = self.folders["reindex"]
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(self.before, folder)
        run_uninterrupted("index", folder, store, data_dir)
        shutil.rmtree(folder)
        shutil.copytree(self.after, folder)

    def prepare(self, scenario: str, data_dir: Path) -> None:
        """The trial's starting point: nothing (a first index), or the corpus indexed before the change."""
        if data_dir.exists():
            shutil.rmtree(data_dir)
        self.store.clear(data_dir)
        if scenario == "reindex":
            if self.store.backend == "embedded":
                shutil.copytree(self.before_reindex, data_dir)
            else:
                self._index_before(self.store, data_dir)

    def run(self, seed: int, attempts: int = 4) -> TrialResult:
        """One trial. When the source files changed before or during it (a shared, edited checkout), the
        references are rebuilt from the new code and the trial is run again."""
        for _ in range(attempts):
            if code_fingerprint() != self.fingerprint:
                self.rebuilt += 1
                self.build_references()
            result = self._run(seed)
            if code_fingerprint() == self.fingerprint:
                return result
        result.differences.append("the source files kept changing during the trial")
        return result

    def _run(self, seed: int) -> TrialResult:
        """One trial; a run that fails (a killed run's successor raising, say) is a differing trial too."""
        plan = Plan.draw(seed, self.timings)
        data_dir = self.work / f"trial-{seed}"
        self.prepare(plan.scenario, data_dir)
        folder = self.folders[plan.scenario]
        killed: list[bool] = []
        died: list[str] = []
        try:
            for at, aim in plan.kills:
                before = current_number(data_dir)
                killed.append(run_killed(plan.command, folder, self.store, data_dir, at, in_publish=aim == "publish"))
                died.append(where_it_died(data_dir, before) if killed[-1] else "")
            rerun(plan.command, folder, self.store, data_dir)
            differences = state_differences(observable_state(self.store.settings(data_dir), self.queries),
                                            self.want[plan.scenario])
        except Exception as exc:  # noqa: BLE001 - reported with the seed that reproduces it
            killed += [False] * (len(plan.kills) - len(killed))
            died += [""] * (len(plan.kills) - len(died))
            differences = [f"{type(exc).__name__}: {str(exc)[-600:]}"]
        result = TrialResult(plan, killed, differences, died)
        if not result.differences:
            shutil.rmtree(data_dir, ignore_errors=True)
        return result


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--store", choices=("sqlite", "neo4j"), default="sqlite")
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1, help="the first trial's seed (trials use seed, seed+1, ...)")
    ap.add_argument("--seeds", default="", help="comma-separated seeds to run instead (to reproduce a failure)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (differing trials' data dirs)")
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()] or list(range(args.seed, args.seed + args.trials))
    store = Store.neo4j_from_env() if args.store == "neo4j" else Store()
    work = Path(tempfile.mkdtemp(prefix="strata-kill-"))
    try:
        t0 = time.perf_counter()
        harness = Harness(work, store, args.docs)
        print(f"corpus: {args.docs} SciFact documents; uninterrupted index {harness.timings['index'].wall:.1f} s, "
              f"reindex {harness.timings['reindex'].wall:.1f} s ({store.backend}); references in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        results = []
        for seed in seeds:
            results.append(harness.run(seed))
            print(results[-1].line(), flush=True)
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    differing = [r for r in results if r.differences]
    print(json.dumps({"store": store.backend, "docs": args.docs, "trials": len(results),
                      "identical": len(results) - len(differing), "differing": len(differing),
                      "seeds_differing": [r.plan.seed for r in differing],
                      "kills": sum(sum(r.killed) for r in results), "references_rebuilt": harness.rebuilt,
                      "died_in": {where: sum(d == where for r in results for d in r.died)
                                  for where in ("before-changes", "store", "publish", "after-publish")}}))
    return 0 if not differing else 1


if __name__ == "__main__":
    sys.exit(main())
