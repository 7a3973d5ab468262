"""The drift report of the published generation, and its files kept in step with what is served.

The report is computed from a published generation's own files (its reports against its graph, communities and
chunks), never from the graph store, which an index run may be half-way through rewriting. ``drift.json``
carries the number of the generation it describes (``index_generation``); whenever it describes another
generation than the published one (a run killed, or a disk filling up, right after its publish), the next index
run, ``strata drift`` or ``GET /v1/drift`` writes all three files again. Each file is written aside and renamed
into place, so none is ever seen half-written. Index runs also append the history point of each generation
they publish (once per generation) to ``drift_history.jsonl``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from core.disk import disk_full, is_disk_full
from core.records import GraphSnapshot, stable_hash
from core.settings import StrataSettings
from strata import integrity
from strata.generations import GRAPH_FILE, communities_from_json, read_graph, reports_from_json
from strata.jsonlog import append_jsonl, read_jsonl
from strata.workspace import GenerationPaths, Workspace

if TYPE_CHECKING:
    from communities.drift import DriftReport

STAMP = "index_generation"


def drift_dir(settings: StrataSettings) -> Path:
    """Where index runs, `strata drift` and the API keep the drift report of the published generation."""
    return Path(settings.data_dir) / "drift"


def history_path(settings: StrataSettings) -> Path:
    return Path(settings.data_dir) / "drift_history.jsonl"


def read_history(settings: StrataSettings) -> list[dict[str, Any]]:
    return read_jsonl(history_path(settings))


def generation_drift(settings: StrataSettings, paths: GenerationPaths | None) -> "DriftReport":
    """The drift report of a published generation (an empty one when nothing is published yet). Its files are
    checked first: a damaged generation raises :class:`strata.integrity.GenerationDamagedError`."""
    from communities.drift import compute_drift

    llm = settings.llm if settings.llm_mode == "llm" else None
    if paths is None:
        return compute_drift([], [], GraphSnapshot((), ()), {}, settings.communities, llm)
    integrity.check(paths)
    reports = reports_from_json(paths.reports_path.read_text(encoding="utf-8"))
    communities = communities_from_json(paths.communities_path.read_text(encoding="utf-8"))
    snapshot = read_graph(paths.root) if (paths.root / GRAPH_FILE).exists() else GraphSnapshot((), ())
    return compute_drift(reports, communities, snapshot, chunk_hashes(paths), settings.communities, llm)


def chunk_hashes(paths: GenerationPaths) -> dict[str, str]:
    """Chunk id -> content hash, as the chunker computes it (``stable_hash(document id, text)``), from the
    generation's chunk rows."""
    out: dict[str, str] = {}
    with open(paths.index_dir / "chunks.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            out[d["chunk_id"]] = stable_hash(d["document_id"], d["text"], size=12)
    return out


def stamped_json(report: "DriftReport", generation: int | None) -> str:
    from communities.drift_render import to_json

    data = json.loads(to_json(report))
    data[STAMP] = generation
    return json.dumps(data, indent=2, ensure_ascii=False)


def write_files(report: "DriftReport", generation: int | None, settings: StrataSettings,
                out_dir: Path | None = None) -> dict[str, Path]:
    """drift.md, drift.html and (last, as it names the generation) drift.json, each written atomically."""
    from communities.drift_render import to_html, to_markdown

    out = Path(out_dir or drift_dir(settings))
    paths = {"markdown": out / "drift.md", "json": out / "drift.json", "html": out / "drift.html"}
    try:
        out.mkdir(parents=True, exist_ok=True)
        _atomic(paths["markdown"], to_markdown(report))
        _atomic(paths["html"], to_html(report, read_history(settings)))
        _atomic(paths["json"], stamped_json(report, generation))
    except OSError as exc:
        if is_disk_full(exc):
            raise disk_full(exc) from exc
        raise
    return paths


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def described_generation(settings: StrataSettings) -> int | None:
    """The generation the drift files describe (None when they are missing, torn or older than stamps)."""
    folder = drift_dir(settings)
    if not all((folder / n).exists() for n in ("drift.md", "drift.html")):
        return None
    try:
        value = json.loads((folder / "drift.json").read_text(encoding="utf-8")).get(STAMP)
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def sync(settings: StrataSettings, history: bool = False,
         known: "Callable[[int], DriftReport | None] | None" = None) -> int | None:
    """Bring the drift files in line with the published generation (rewritten only when they describe another
    one); with ``history`` (index runs, under the run lock) also append that generation's history point if
    the history has none. ``known``: the report of a generation when the caller holds it (the index run that
    published it), else None; otherwise it is computed from the generation's files. Returns the generation
    described."""
    ws = Workspace(Path(settings.data_dir))
    current = ws.current()
    if current is None:
        return None
    fresh = described_generation(settings) == current.number
    has_point = not history or any(p.get("generation") == current.number for p in read_history(settings))
    if fresh and has_point:
        return current.number
    report = (known(current.number) if known is not None else None) or generation_drift(settings, current)
    if not has_point:
        append_jsonl(history_path(settings), {"generated_at": report.generated_at, "generation": current.number,
                                              "totals": report.totals})
    write_files(report, current.number, settings)
    return current.number


def served_json(settings: StrataSettings, generation: int) -> bytes | None:
    """drift.json for a server whose engine serves ``generation``: the file when it describes that generation or
    a newer one, else written again from the published generation first (None when nothing is published)."""
    path = drift_dir(settings) / "drift.json"
    described = described_generation(settings)
    if described is None or described < generation:
        if sync(settings) is None:
            return None
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
