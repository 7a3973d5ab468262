"""Read-only views of the served index for the web console: chunks and their documents, the community hierarchy
with its reports, and entity neighbourhoods.

Everything is read from the engine that answers questions: the chunk index and reports of the generation it
serves, and its communities. Relations are not part of a generation, so the graph is read from the store once
per loaded generation (cached against the engine's chunk index object: when the engine swaps in a new
generation, the next request builds a fresh view) and never per request.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from pydantic import BaseModel, Field

from core.records import Community, Entity, GraphSnapshot, Relation, Report
from strata.web.markdown import render_markdown

# A drawn graph stays readable up to about this many nodes; larger neighbourhoods keep the best-connected.
MAX_GRAPH_NODES = 40
MAX_PAGE = 500  # the most communities or members one page lists


class ChunkView(BaseModel):
    chunk_id: str
    document_id: str
    source: str
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    html: str = Field("", description="the text rendered from Markdown (raw HTML shown as text), quoted ranges "
                                      "marked with <mark>")


class DocumentView(BaseModel):
    document_id: str
    source: str
    kind: str | None = Field(None, description="the document's kind (guide, reference, changelog, glossary, index), "
                                               "when the loader recorded one")
    chunks: list[ChunkView]


class CommunitySummary(BaseModel):
    id: str
    level: int
    parent_id: str | None
    children: list[str]
    size: int = Field(description="member entities")
    title: str = Field(description="the report's title, or the best-known members' names without a report")
    rating: float | None = None
    stale: bool = False
    same_title: list[str] = Field(default_factory=list,
                                  description="other communities with the same title (at other levels: a "
                                              "sub-community led by the same entities)")


class CommunityListItem(CommunitySummary):
    matched_members: list[str] = Field(default_factory=list, description="members whose name matched the search")


class CommunityTree(BaseModel):
    """One page of the communities that match a search, ordered by level (0, the coarsest, first), then size."""

    levels: int
    total: int = Field(description="communities in the served index")
    matched: int = Field(description="communities that match the search and level")
    offset: int
    limit: int
    query: str = ""
    level: int | None = None
    communities: list[CommunityListItem]


class MemberView(BaseModel):
    id: str
    name: str
    type: str
    description: str
    chunks: int


class FindingView(BaseModel):
    text: str
    chunk_ids: list[str]
    start: int = -1
    end: int = -1
    html: str = ""


class ReportView(BaseModel):
    title: str
    summary: str
    summary_html: str = ""
    findings: list[FindingView]
    rating: float
    mode: str
    model: str
    created_at: str
    stale: bool


class GraphNode(BaseModel):
    id: str
    name: str
    type: str
    focus: bool = False


class GraphEdge(BaseModel):
    source: str
    target: str
    weight: float
    description: str


class GraphView(BaseModel):
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    truncated: int = Field(0, description="nodes left out to keep the drawing readable")


class CommunityDetail(BaseModel):
    community: CommunitySummary
    parent: CommunitySummary | None = None
    children: list[CommunitySummary] = Field(default_factory=list)
    members: list[MemberView] = Field(description="one page of the members, most-mentioned first")
    members_total: int
    members_offset: int = 0
    members_limit: int
    report: ReportView | None
    graph: GraphView


class NeighbourhoodView(BaseModel):
    entity: MemberView
    communities: list[str]
    graph: GraphView


class NotFound(LookupError):
    """The id names nothing in the served generation."""


class Generation(Protocol):
    """One loaded generation, as :class:`strata.generations.QuerySnapshot` holds it."""

    index: Any
    reports: Sequence[Report]
    communities: Sequence[Community]

    def graph(self) -> GraphSnapshot: ...


class QueryEngine(Protocol):
    """What the console reads from :class:`strata.engine.Engine`: the generation it serves, held while read."""

    def acquire(self) -> Generation: ...

    def release(self, snap: Generation) -> None: ...


@dataclass
class ConsoleView:
    """One generation's worth of lookups, built once and shared by every request on that generation."""

    chunks: dict[str, ChunkView]
    documents: dict[str, list[str]]
    communities: dict[str, Community]
    children: dict[str, list[str]]
    reports: dict[str, Report]
    entities: dict[str, Entity]
    adjacency: dict[str, dict[str, Relation]]
    communities_of: dict[str, list[str]]
    titles: dict[str, str] = field(default_factory=dict)
    by_title: dict[str, list[str]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # community ids by level, then size (largest first)

    def __post_init__(self) -> None:
        for c in self.communities.values():
            self.titles[c.id] = self._title(c)
            self.by_title.setdefault(self.titles[c.id].casefold(), []).append(c.id)
        self.order = [c.id for c in sorted(self.communities.values(), key=lambda c: (c.level, -len(c.entity_ids), c.id))]

    @classmethod
    def build(cls, index: Any, communities: Sequence[Community], reports: Sequence[Report],
              graph: GraphSnapshot) -> "ConsoleView":
        chunks: dict[str, ChunkView] = {}
        documents: dict[str, list[str]] = {}
        for row in index.rows:
            meta = {k: v for k, v in row.fields.items() if k not in ("document_id", "source")}
            chunks[row.chunk_id] = ChunkView(chunk_id=row.chunk_id, document_id=row.document_id, source=row.source,
                                             text=row.text, metadata=meta)
            documents.setdefault(row.document_id, []).append(row.chunk_id)
        children: dict[str, list[str]] = {}
        communities_of: dict[str, list[str]] = {}
        for c in sorted(communities, key=lambda c: (c.level, c.id)):
            if c.parent_id:
                children.setdefault(c.parent_id, []).append(c.id)
            for e in c.entity_ids:
                communities_of.setdefault(e, []).append(c.id)
        adjacency: dict[str, dict[str, Relation]] = {}
        for r in graph.relations:
            adjacency.setdefault(r.source_id, {})[r.target_id] = r
            adjacency.setdefault(r.target_id, {})[r.source_id] = r
        return cls(chunks, documents, {c.id: c for c in communities}, children,
                   {r.community_id: r for r in reports}, {e.id: e for e in graph.entities}, adjacency, communities_of)

    # -- chunks and documents -----------------------------------------------------------------------------
    def chunk(self, chunk_id: str, marks: Sequence[tuple[int, int]] = ()) -> ChunkView:
        """The chunk, its text rendered from Markdown with the ``marks`` ranges (quoted sentences) marked."""
        try:
            c = self.chunks[chunk_id]
        except KeyError:
            raise NotFound(f"no chunk {chunk_id!r} in the served index") from None
        return c.model_copy(update={"html": render_markdown(c.text, marks)})

    def document(self, document_id: str) -> DocumentView:
        ids = self.documents.get(document_id)
        if not ids:
            raise NotFound(f"no document {document_id!r} in the served index")
        chunks = [self.chunk(c) for c in ids]
        kind = chunks[0].metadata.get("kind")
        return DocumentView(document_id=document_id, source=chunks[0].source,
                            kind=kind if isinstance(kind, str) else None, chunks=chunks)

    # -- communities --------------------------------------------------------------------------------------
    def _title(self, c: Community) -> str:
        report = self.reports.get(c.id)
        if report is not None and report.title:
            return report.title
        names = sorted((self.entities[e] for e in c.entity_ids if e in self.entities),
                       key=lambda e: (-len(e.chunk_ids), e.name))
        return ", ".join(e.name for e in names[:3]) or c.id

    def summary(self, c: Community) -> CommunitySummary:
        report = self.reports.get(c.id)
        title = self.titles.get(c.id) or self._title(c)
        return CommunitySummary(id=c.id, level=c.level, parent_id=c.parent_id, children=self.children.get(c.id, []),
                                size=len(c.entity_ids), title=title,
                                rating=report.rating if report else None, stale=bool(report and report.stale),
                                same_title=[i for i in self.by_title.get(title.casefold(), []) if i != c.id][:5])

    def tree(self, query: str = "", level: int | None = None, offset: int = 0, limit: int = 50,
             ids: Sequence[str] | None = None) -> CommunityTree:
        """One page of the communities whose title, id or a member's name contains ``query`` (case-insensitive),
        at ``level`` if given; ``ids`` lists exactly those communities (the ones an answer used)."""
        q = query.strip().casefold()
        limit = max(0, min(limit, MAX_PAGE))
        offset = max(0, offset)
        wanted = self.order if ids is None else [i for i in dict.fromkeys(ids) if i in self.communities]
        matched: list[tuple[str, list[str]]] = []
        for cid in wanted:
            c = self.communities[cid]
            if level is not None and c.level != level:
                continue
            if not q:
                matched.append((cid, []))
                continue
            if q in self.titles[cid].casefold() or q in cid.casefold():
                matched.append((cid, []))
                continue
            names = [m.name for m in (self.entities.get(e) for e in c.entity_ids) if m is not None
                     and q in m.name.casefold()]
            if names:
                matched.append((cid, sorted(names, key=lambda n: (len(n), n))[:3]))
        page = [CommunityListItem(**self.summary(self.communities[cid]).model_dump(), matched_members=names)
                for cid, names in matched[offset:offset + limit]]
        return CommunityTree(levels=len({c.level for c in self.communities.values()}), total=len(self.communities),
                             matched=len(matched), offset=offset, limit=limit, query=query, level=level,
                             communities=page)

    def member(self, entity_id: str) -> MemberView:
        e = self.entities.get(entity_id)
        if e is None:
            return MemberView(id=entity_id, name=entity_id, type="unknown", description="", chunks=0)
        return MemberView(id=e.id, name=e.name, type=e.type, description=e.description, chunks=len(e.chunk_ids))

    def community(self, community_id: str, members_offset: int = 0, members_limit: int = 25) -> CommunityDetail:
        """A community with one page of its members (most-mentioned first), its report rendered from Markdown,
        and the graph of its best-connected members."""
        c = self.communities.get(community_id)
        if c is None:
            raise NotFound(f"no community {community_id!r} in the served index")
        members_offset, members_limit = max(0, members_offset), max(0, min(members_limit, MAX_PAGE))
        members = sorted((self.member(e) for e in c.entity_ids), key=lambda m: (-m.chunks, m.name))
        report = self.reports.get(c.id)
        report_view = None if report is None else ReportView(
            title=report.title, summary=report.summary, summary_html=render_markdown(report.summary),
            rating=report.rating, mode=report.mode, model=report.model, created_at=report.created_at,
            stale=report.stale,
            findings=[FindingView(text=f.text, chunk_ids=list(f.chunk_ids), start=f.start, end=f.end,
                                  html=render_markdown(f.text)) for f in report.findings])
        parent = self.communities.get(c.parent_id) if c.parent_id else None
        return CommunityDetail(community=self.summary(c), parent=self.summary(parent) if parent else None,
                               children=[self.summary(self.communities[k]) for k in self.children.get(c.id, [])
                                         if k in self.communities],
                               members=members[members_offset:members_offset + members_limit],
                               members_total=len(members), members_offset=members_offset,
                               members_limit=members_limit, report=report_view,
                               graph=self.subgraph(list(c.entity_ids)))

    # -- graphs -------------------------------------------------------------------------------------------
    def subgraph(self, entity_ids: list[str], focus: str | None = None) -> GraphView:
        """The relations among ``entity_ids``; beyond :data:`MAX_GRAPH_NODES` the best-connected are kept
        (the focus entity always)."""
        wanted = set(entity_ids)

        def degree(e: str) -> int:
            return sum(1 for n in self.adjacency.get(e, {}) if n in wanted)

        ranked = sorted(wanted, key=lambda e: (e != focus, -degree(e), self.member(e).name))
        kept = ranked[:MAX_GRAPH_NODES]
        keep = set(kept)
        nodes = [GraphNode(id=e, name=self.member(e).name, type=self.member(e).type, focus=e == focus) for e in kept]
        edges, seen = [], set()
        for e in kept:
            for other, rel in self.adjacency.get(e, {}).items():
                if other in keep and rel.id not in seen:
                    seen.add(rel.id)
                    edges.append(GraphEdge(source=rel.source_id, target=rel.target_id, weight=rel.weight,
                                           description=rel.description))
        return GraphView(nodes=nodes, edges=edges, truncated=len(wanted) - len(kept))

    def neighbourhood(self, entity_id: str) -> NeighbourhoodView:
        if entity_id not in self.entities:
            raise NotFound(f"no entity {entity_id!r} in the served index")
        ids = [entity_id, *self.adjacency.get(entity_id, {})]
        return NeighbourhoodView(entity=self.member(entity_id), communities=self.communities_of.get(entity_id, []),
                                 graph=self.subgraph(ids, focus=entity_id))


class ViewCache:
    """The console view of whichever generation the engine serves now, built on first use."""

    def __init__(self, engine_provider: Callable[[], QueryEngine]) -> None:
        self._provider = engine_provider
        self._views: "weakref.WeakKeyDictionary[Any, ConsoleView]" = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self) -> ConsoleView:
        engine = self._provider()
        snap = engine.acquire()
        try:
            view = self._views.get(snap.index)
            if view is None:
                with self._lock:
                    view = self._views.get(snap.index)
                    if view is None:
                        view = ConsoleView.build(snap.index, snap.communities, snap.reports, snap.graph())
                        self._views[snap.index] = view
            return view
        finally:
            engine.release(snap)
