"""``strata export``: the entity graph, its communities and their reports as files other tools read.

- ``graphml``: one file for Gephi, networkx or Neo4j's importers: entities as nodes (name, type, description,
  chunk count, and per hierarchy level the community and its report title), relations as weighted edges.
- ``csv`` and ``parquet``: a folder of four tables named and shaped like Microsoft GraphRAG's output
  (``entities``, ``relationships``, ``communities``, ``community_reports``), so notebooks and GraphRAG's
  tooling can load them. CSV cells holding lists are JSON. Parquet needs pyarrow (``pip install strata[parquet]``).

Everything is read from the graph store in one pass; nothing is written anywhere but ``output``.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal, Sequence

from core.records import Community, GraphSnapshot, Report

Format = Literal["graphml", "csv", "parquet"]
FORMATS: tuple[Format, ...] = ("graphml", "csv", "parquet")


@dataclass(frozen=True, slots=True)
class EntityRow:
    id: str
    human_readable_id: int
    title: str
    type: str
    description: str
    text_unit_ids: list[str]
    frequency: int
    degree: int


@dataclass(frozen=True, slots=True)
class RelationshipRow:
    id: str
    human_readable_id: int
    source: str
    target: str
    source_id: str
    target_id: str
    description: str
    weight: float
    combined_degree: int
    text_unit_ids: list[str]


@dataclass(frozen=True, slots=True)
class CommunityRow:
    id: str
    human_readable_id: int
    community: str
    level: int
    parent: str
    children: list[str]
    title: str
    entity_ids: list[str]
    relationship_ids: list[str]
    text_unit_ids: list[str]
    size: int


@dataclass(frozen=True, slots=True)
class ReportRow:
    id: str
    human_readable_id: int
    community: str
    level: int
    title: str
    summary: str
    full_content: str
    rating: float
    findings: list[dict[str, Any]]
    mode: str
    model: str
    created_at: str
    stale: bool


@dataclass(frozen=True, slots=True)
class ExportTables:
    entities: list[EntityRow]
    relationships: list[RelationshipRow]
    communities: list[CommunityRow]
    community_reports: list[ReportRow]

    def counts(self) -> dict[str, int]:
        return {f.name: len(getattr(self, f.name)) for f in fields(self)}


def _full_content(r: Report) -> str:
    lines = [f"# {r.title}", "", r.summary, ""]
    lines += [f"- {f.text} [{', '.join(f.chunk_ids)}]" if f.chunk_ids else f"- {f.text}" for f in r.findings]
    return "\n".join(lines).strip() + "\n"


def build_tables(snapshot: GraphSnapshot, communities: Sequence[Community], reports: Sequence[Report]) -> ExportTables:
    """The four tables, in a stable order (entities by name, relations by id, communities by level and id)."""
    degree: dict[str, int] = {}
    for rel in snapshot.relations:
        degree[rel.source_id] = degree.get(rel.source_id, 0) + 1
        degree[rel.target_id] = degree.get(rel.target_id, 0) + 1
    names = {e.id: e.name for e in snapshot.entities}
    chunks_of = {e.id: e.chunk_ids for e in snapshot.entities}
    entities = [EntityRow(e.id, i, e.name, e.type, e.description, list(e.chunk_ids), len(e.chunk_ids), degree.get(e.id, 0))
                for i, e in enumerate(sorted(snapshot.entities, key=lambda e: (e.name, e.id)))]
    relations = sorted(snapshot.relations, key=lambda r: r.id)
    relationships = [RelationshipRow(r.id, i, names.get(r.source_id, r.source_id), names.get(r.target_id, r.target_id),
                                     r.source_id, r.target_id, r.description, r.weight,
                                     degree.get(r.source_id, 0) + degree.get(r.target_id, 0), list(r.chunk_ids))
                     for i, r in enumerate(relations)]
    by_report = {r.community_id: r for r in reports}
    children: dict[str, list[str]] = {}
    for c in communities:
        if c.parent_id:
            children.setdefault(c.parent_id, []).append(c.id)
    rows = []
    for i, c in enumerate(sorted(communities, key=lambda c: (c.level, c.id))):
        members = set(c.entity_ids)
        internal = [r.id for r in relations if r.source_id in members and r.target_id in members]
        units = sorted({u for e in c.entity_ids for u in chunks_of.get(e, ())})
        report = by_report.get(c.id)
        rows.append(CommunityRow(c.id, i, c.id, c.level, c.parent_id or "", sorted(children.get(c.id, [])),
                                 report.title if report else "", list(c.entity_ids), internal, units, len(c.entity_ids)))
    report_rows = [ReportRow(r.community_id, i, r.community_id, r.level, r.title, r.summary, _full_content(r), r.rating,
                             [{"text": f.text, "chunk_ids": list(f.chunk_ids)} for f in r.findings], r.mode, r.model,
                             r.created_at, r.stale)
                   for i, r in enumerate(sorted(reports, key=lambda r: (r.level, r.community_id)))]
    return ExportTables(entities, relationships, rows, report_rows)


def _columns(rows: Sequence[Any], row_type: type) -> dict[str, list[Any]]:
    names = [f.name for f in fields(row_type)]
    return {n: [getattr(r, n) for r in rows] for n in names}


def write_csv(tables: ExportTables, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for table in fields(tables):
        rows, row_type = getattr(tables, table.name), _ROW_TYPES[table.name]
        path = folder / f"{table.name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow([f.name for f in fields(row_type)])
            for row in rows:
                writer.writerow([json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v
                                 for v in asdict(row).values()])
        written.append(path)
    return written


def write_parquet(tables: ExportTables, folder: Path) -> list[Path]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise RuntimeError("parquet export needs pyarrow: pip install 'strata[parquet]' (or pyarrow)") from exc
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for table in fields(tables):
        rows, row_type = getattr(tables, table.name), _ROW_TYPES[table.name]
        schema = pa.schema([(f.name, _arrow_type(pa, str(f.type))) for f in fields(row_type)])
        path = folder / f"{table.name}.parquet"
        pq.write_table(pa.Table.from_pydict(_columns(rows, row_type), schema=schema), path)
        written.append(path)
    return written


def _arrow_type(pa: Any, annotation: str) -> Any:
    """The Arrow type of a row field from its annotation (a string: this module postpones annotations)."""
    finding = pa.struct([("text", pa.string()), ("chunk_ids", pa.list_(pa.string()))])
    return {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(),
            "list[str]": pa.list_(pa.string()), "list[dict[str, Any]]": pa.list_(finding)}[annotation]


_ROW_TYPES: dict[str, type] = {"entities": EntityRow, "relationships": RelationshipRow, "communities": CommunityRow,
                               "community_reports": ReportRow}


def write_graphml(snapshot: GraphSnapshot, communities: Sequence[Community], reports: Sequence[Report],
                  path: Path) -> list[Path]:
    import networkx as nx

    titles = {r.community_id: r.title for r in reports}
    levels = sorted({c.level for c in communities})
    graph = nx.Graph()
    for e in sorted(snapshot.entities, key=lambda e: e.id):
        graph.add_node(e.id, name=e.name, type=e.type, description=e.description, chunks=len(e.chunk_ids),
                       chunk_ids=json.dumps(list(e.chunk_ids)),
                       **{f"community_L{lvl}": "" for lvl in levels}, **{f"report_L{lvl}": "" for lvl in levels})
    for c in communities:
        for e in c.entity_ids:
            if e in graph:
                graph.nodes[e][f"community_L{c.level}"] = c.id
                graph.nodes[e][f"report_L{c.level}"] = titles.get(c.id, "")
    for r in sorted(snapshot.relations, key=lambda r: r.id):
        graph.add_edge(r.source_id, r.target_id, id=r.id, description=r.description, weight=r.weight,
                       chunk_ids=json.dumps(list(r.chunk_ids)))
    path.parent.mkdir(parents=True, exist_ok=True)
    nx.write_graphml(graph, path)
    return [path]


def export(snapshot: GraphSnapshot, communities: Sequence[Community], reports: Sequence[Report], fmt: str,
           output: Path) -> list[Path]:
    """Write the export; ``output`` is a file for graphml and a folder for csv and parquet. Returns the files."""
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    output = Path(output)
    if fmt == "graphml":
        if output.is_dir():
            raise ValueError(f"--output {output} is a folder; graphml is written to a file (e.g. {output / 'graph.graphml'})")
        return write_graphml(snapshot, communities, reports, output)
    if output.exists() and not output.is_dir():
        raise ValueError(f"--output {output} is a file; {fmt} is written to a folder of four tables")
    tables = build_tables(snapshot, communities, reports)
    return write_csv(tables, output) if fmt == "csv" else write_parquet(tables, output)


def export_store(settings: Any, fmt: str, output: Path) -> list[Path]:
    """Read the workspace's graph store once and export it."""
    from core.store import open_store

    store = open_store(settings)
    try:
        snapshot, communities, reports = store.read_graph(), store.communities(), store.reports()
    finally:
        store.close()
    return export(snapshot, communities, reports, fmt, output)
