"""Community reports: the offline extractive writer (the LLM writer lives beside it).

An extractive report quotes the community's most central whole sentences exactly as they stand in its source
passages (each finding cites its chunk and the sentence's offsets in it), and takes its title from its main
entities and what links them, in words (:mod:`communities.titles`). Reports are written bottom-up (deepest
level first), so a parent can lean on its children's reports; no two reports share a title.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace
from datetime import datetime, timezone
from functools import lru_cache
from typing import Callable, Collection, Iterable, Mapping, Protocol, Sequence

import numpy as np

from communities.context import CommunityContext, GraphIndex, fingerprint, inputs_manifest
from communities.drift import score_inputs
from communities.sentences import Idf, Sentence, key_terms, lexrank, mmr, normalized, sentences_of, stems, tfidf
from core.text.glue import ENGLISH, glue_for
from communities.titles import extractive_title, title_rank, title_worthy, topic_title, unique_titles
from core.records import Chunk, Community, Entity, Finding, GraphSnapshot, Report, document_of
from core.settings import CommunitySettings
from core.settings import kind_weight
from extraction.wordlike import prose_tokens


class ReportWriter(Protocol):
    mode: str
    model: str

    def write(self, ctx: CommunityContext, children: Sequence[Report]) -> Report: ...


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


_WORD = re.compile(r"\w+")
_NONE: frozenset[int] = frozenset()


@lru_cache(maxsize=65_536)
def _name_pattern(name: str) -> re.Pattern[str]:
    """An entity name as a whole word (compiled once per name, not once per community)."""
    return re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)")


class ExtractiveReportWriter:
    """Deterministic reports without a model.

    Given the corpus's chunks, a report quotes the community's most central whole sentences exactly (offsets
    kept): the candidates are the whole sentences of the community's source passages; their centrality is
    LexRank over TF-IDF similarity (IDF from all chunks), weighted towards sentences that name the community's
    members (by their degree); MMR picks ``report_max_findings`` of them without repeating one another. The
    title names the main entities and what links them (:func:`communities.titles.extractive_title`). Without chunks (or when no
    passage has a whole sentence) the findings come from the graph's relation and entity descriptions.
    """

    mode = "offline"
    model = "extractive"

    def __init__(self, settings: CommunitySettings, chunks: Mapping[str, Chunk] | None = None,
                 idf: Idf | None = None) -> None:
        """``idf``: the document frequencies of the whole corpus, when ``chunks`` holds only the passages of the
        communities this writer is given (a Dask worker's share); by default they come from ``chunks``."""
        self.settings = settings
        self.chunks = dict(chunks or {})
        self._idf: Idf | None = idf
        self._sentences: dict[str, list[tuple[Sentence, str]]] = {}  # per chunk: its whole sentences, normalized
        self._titled: bool | None = idf.titled if idf is not None else None
        self._prose: frozenset[str] | None = idf.prose if idf is not None else None

    def _page_titles(self, ctx: CommunityContext) -> frozenset[str]:
        """The titles (casefolded) of the community's passages' pages, when the corpus has several titled pages
        (one book's title names every community alike)."""
        if not self._is_titled():
            return frozenset()
        return frozenset(str(c.metadata["title"]).casefold() for cid in ctx.passages
                         if (c := self.chunks.get(cid)) is not None and c.metadata.get("title"))

    def _is_titled(self) -> bool:
        if self._titled is None:
            seen = {str(c.metadata.get("title", "")).casefold() for c in self.chunks.values()} - {""}
            self._titled = len(seen) > 1
        return self._titled

    def _topics(self, ctx: CommunityContext) -> list[tuple[str, float]]:
        """The titles of the pages of the passages the report reads (so a worker holding only those passages writes
        the same title), each weighted by how much the page is about the community: the mentions of members on
        it, each weighing one plus the member's degree in the community (a page naming its central members is
        more about it than one naming many of its leaves), times the share of the page's mentions that are of members (a
        reference page that names every option of a product is about none of them in particular), times the
        page's kind (``kind_weights``); heaviest first; empty unless the corpus has several titled pages."""
        if not self._page_titles(ctx):
            return []
        pages: dict[str, Chunk] = {}
        for cid in ctx.passages:
            c = self.chunks.get(cid)
            if c is not None and c.metadata.get("title"):
                pages.setdefault(c.document_id, c)
        degree = ctx.degree()
        central: Counter[str] = Counter()  # per page: its member mentions, each weighing 1 + the member's degree
        for e in ctx.entities:
            for cid in e.chunk_ids:
                central[document_of(cid)] += 1.0 + degree[e.id]
        weight: Counter[str] = Counter()
        for doc, c in pages.items():
            members, mentions = ctx.pages.get(doc, (0, 0))
            if members:
                weight[str(c.metadata["title"])] += (central[doc] * members / mentions
                                                     * kind_weight(c.metadata.get("kind"), self.settings.kind_weights))
        return sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))

    def _prose_words(self) -> frozenset[str]:
        """The words the corpus's passages use in prose (outside code), casefolded."""
        if self._prose is None:
            self._prose = frozenset(w for c in self.chunks.values() for w in prose_tokens(c.text))
        return self._prose

    def qualifiers(self, ctx: CommunityContext) -> list[str]:
        """What may tell a community's title from another's: its members that may stand in a title (most central
        first), then the other pages they are named on, then the sections (deepest headings) they are named under."""
        names = [e.name for e in title_rank(ctx.entities, ctx.degree(), self._page_titles(ctx)) if self.worthy(e.name)]
        sections: Counter[str] = Counter()
        passages = set(ctx.passages)
        for e in ctx.entities:
            for cid in e.chunk_ids:
                c = self.chunks.get(cid) if cid in passages else None
                heads = c.metadata.get("headings") if c is not None else None
                if isinstance(heads, list) and len(heads) > 1 and self.worthy(str(heads[-1])):
                    sections[str(heads[-1])] += 1
        ranked = sorted(sections, key=lambda t: (-sections[t], t))
        return names + [t for t, _ in self._topics(ctx)[1:]] + ranked

    def worthy(self, name: str) -> bool:
        """Whether a member's name may stand in a title: :func:`communities.titles.title_worthy`, and on a corpus of
        titled pages every word of it is a word its prose uses outside code (an identifier only code spells,
        "PLUGIN_NAME", names nothing a reader of the page knows)."""
        if not title_worthy(name):
            return False
        if not self._is_titled():
            return True
        prose = self._prose_words()
        tokens = [t.strip(",.;:!?()\"'“”‘’").casefold() for t in name.split()]
        return all(t in prose or not any(ch.isalpha() for ch in t) for t in tokens if t)

    @property
    def idf(self) -> Idf:
        if self._idf is None:
            self._idf = Idf(c.text for c in self.chunks.values())
        if self._idf.titled is None or self._idf.prose is None:
            # (the prose words judge titles only on a corpus of titled pages: reading them costs a pass over it)
            titled = self._is_titled()
            self._idf.titled, self._idf.prose = titled, self._prose_words() if titled else frozenset()
        return self._idf

    def _candidates(self, ctx: CommunityContext) -> list[Sentence]:
        seen: set[str] = set()
        out: list[Sentence] = []
        for cid in ctx.passages:
            chunk = self.chunks.get(cid)
            if chunk is None:
                continue
            if cid not in self._sentences:
                title = chunk.metadata.get("title")
                self._sentences[cid] = [(sent, normalized(sent.text))
                                        for sent in sentences_of(cid, chunk.text, chunk.start == 0, title)]
            for sent, key in self._sentences[cid]:
                if key not in seen:
                    seen.add(key)
                    out.append(sent)
        return out

    def write(self, ctx: CommunityContext, children: Sequence[Report] = ()) -> Report:
        deg = ctx.degree()
        ranked = sorted(ctx.entities, key=lambda e: (-deg[e.id], -len(e.chunk_ids), e.name))
        candidates = self._candidates(ctx)
        findings = self._quoted_findings(ctx, ranked, deg, candidates) if candidates else []
        if not findings:
            findings = self._graph_findings(ctx, ranked)
        leads = title_rank(ctx.entities, deg, self._page_titles(ctx))
        main = normalized(leads[0].name) if leads else ctx.community.id
        names = [normalized(e.name) for e in leads]
        texts = [s.text for s in candidates] or [f.text for f in findings]
        terms = key_terms(texts, self.idf, exclude=names, k=5)
        types = Counter(e.type for e in ctx.entities)
        kind = types.most_common(1)[0][0].replace("_", " ") if types else "unnamed"
        about = [t for t in terms if title_worthy(t)][:2]
        topics = self._topics(ctx)
        worthy = [e.name for e in leads if self.worthy(e.name)]
        # (the language of the passages' text: their ids, which had been read here, are Latin whatever the corpus)
        glue = glue_for([self.chunks[cid].text for cid in ctx.passages if cid in self.chunks]
                        or [e.name for e in leads])
        title = topic_title(topics, worthy, glue=glue) or extractive_title(
            leads, ctx.relations, f"{kind[:1].upper()}{kind[1:]} entities" + (f" about {ENGLISH.join(about)}" if about else ""),
            self.worthy, glue)
        type_text = ", ".join(f"{n} {t}" for t, n in types.most_common(4))
        others = [n for n in names[1:4] if n != main]
        summary = (
            ENGLISH.led(main, others)
            + (f"; key terms: {', '.join(terms)}" if terms else "")
            + f". {len(ctx.entities)} entities ({type_text}) joined by {len(ctx.relations)} relations"
            + (f"; {sum(f.quoted for f in findings)} sentences quoted from {len({f.chunk_ids[0] for f in findings if f.quoted})} passages"
               if any(f.quoted for f in findings) else "")
            + (f"; it groups {len(children)} sub-communities: " + "; ".join(c.title for c in children[:4]) if children else "")
            + "."
        )
        # No rating: an extractive report has no judge of importance (a count squashed to 0-10 read 10 for every
        # large community); communities are ranked for answers about the whole corpus by their size and the kinds
        # of their pages (strata.topics).
        return Report(ctx.community.id, ctx.community.level, title, summary, tuple(findings), 0.0,
                      fingerprint(ctx), self.mode, self.model, now_iso())

    def _quoted_findings(self, ctx: CommunityContext, ranked: Sequence[Entity], deg: Mapping[str, float],
                         candidates: Sequence[Sentence]) -> list[Finding]:
        vectors, _ = tfidf([stems(s.text) for s in candidates], self.idf)
        sim = vectors @ vectors.T
        central = lexrank(sim)
        flat = [normalized(s.text) for s in candidates]
        # Which sentences name which members. A whole-word match of a name holds every word of the name as a
        # whole word of the sentence, so only the sentences holding all of them are searched.
        holding: dict[str, set[int]] = {}
        for i, text in enumerate(flat):
            for word in _WORD.findall(text):
                holding.setdefault(word, set()).add(i)
        named = np.zeros(len(candidates))
        every = range(len(flat))
        for e in ranked:
            name = normalized(e.name)
            words = _WORD.findall(name)
            maybe: Iterable[int] = every
            if words:
                sets = sorted((holding.get(w, _NONE) for w in set(words)), key=len)
                maybe = sorted(sets[0].intersection(*sets[1:]))
            if not maybe:
                continue
            pattern = _name_pattern(name)
            weight = 1.0 + deg[e.id]
            for i in maybe:
                if pattern.search(flat[i]):
                    named[i] += weight
        named = named / named.max() if named.max() > 0 else named
        scores = central / central.max() * (0.4 + named)
        chosen = mmr(scores, sim, self.settings.report_max_findings, lam=0.7)
        return [Finding(candidates[i].text, (candidates[i].chunk_id,), candidates[i].start, candidates[i].end)
                for i in chosen]

    def _graph_findings(self, ctx: CommunityContext, ranked: Sequence[Entity]) -> list[Finding]:
        findings: list[Finding] = []
        budget = self.settings.report_max_findings
        for r in sorted(ctx.relations, key=lambda r: (-r.weight, r.id))[: max(1, budget // 2)]:
            text = r.description.split("\n")[0]
            findings.append(Finding(text, tuple(sorted(r.chunk_ids)[:5])))
        seen = {f.text for f in findings}
        for e in ranked:
            if len(findings) >= budget:
                break
            sentence = e.description.split("\n")[0]
            if sentence and sentence not in seen:
                seen.add(sentence)
                findings.append(Finding(sentence, tuple(sorted(e.chunk_ids)[:5])))
        return findings


WriteMany = Callable[[Sequence[tuple[CommunityContext, Sequence[Report]]]], list[Report]]


def quotes_stand(report: Report, read: Mapping[str, str], chunk_hashes: Mapping[str, str]) -> bool:
    """Whether every chunk ``report``'s findings cite still exists (``chunk_hashes``: the store's chunks) and, if
    the report read it as a source passage (``read``: the hashes its inputs manifest holds), still has the text
    it was read with (a quote's offsets hold)."""
    return all(cid in chunk_hashes and read.get(cid, chunk_hashes[cid]) == chunk_hashes[cid]
               for f in report.findings for cid in f.chunk_ids)


def _drifted_little(prior: Report, manifest: dict, chunk_hashes: dict[str, str], min_drift: float) -> bool:  # type: ignore[type-arg]
    """Whether a report whose inputs changed may be kept: ``min_drift`` is above 0, its inputs drifted by less than
    it (:func:`communities.drift.score_inputs`), and every chunk it cites is still there as it was read."""
    if min_drift <= 0 or not prior.inputs:
        return False
    inputs = json.loads(prior.inputs)
    return quotes_stand(prior, inputs.get("chunks", {}), chunk_hashes) and \
        score_inputs(inputs, manifest, chunk_hashes)[0] < min_drift


def write_reports(communities: Sequence[Community], snapshot: GraphSnapshot, writer: ReportWriter,
                  settings: CommunitySettings,
                  existing: Sequence[Report] = (), on_progress: Callable[[int], None] | None = None,
                  chunk_hashes: dict[str, str] | None = None, policy: str = "changed",
                  force: Collection[str] = (), min_drift: float = 0.0,
                  write_many: WriteMany | None = None,
                  inputs_out: dict[str, str | None] | None = None) -> tuple[list[Report], int]:
    """Reports for the communities, deepest level first; returns (reports, how many were written anew).

    Policy ``changed`` rewrites a report whose fingerprint differs and keeps the others (nothing to
    re-summarize; a stale mark left by deleting a document that came back unchanged is cleared). Policy ``missing`` writes only communities that have no report yet and
    keeps every existing one as it is (the drift report then says how far each has drifted). Ids in ``force``
    are rewritten either way (``strata drift --refresh``). With ``min_drift`` above 0, policy ``changed`` also
    keeps a report whose inputs changed by a drift score below it, unless a chunk it cites is gone or changed
    (:func:`quotes_stand`); the drift report still shows the score, which grows with each later change until
    the report is rewritten, and a stale mark is cleared.

    A level's reports depend only on the levels below it, so the reports to write of one level are independent
    of one another: ``write_many`` (default: ``writer.write`` on each in turn) receives them all at once, in
    community-id order, with their children's reports, and may write them anywhere (Dask workers) as long as it
    returns them in the same order.

    ``inputs_out``, when given, is filled with every community's current inputs (:func:`inputs_manifest`, as
    JSON), or None where they are the inputs its report now records: what the drift report of the reports then
    published compares them with (held as text, and only where they differ, so the run does not hold every
    community's inputs twice).
    """
    if policy not in ("changed", "missing"):
        raise ValueError(f"unknown report policy {policy!r} (expected 'changed' or 'missing')")
    index = GraphIndex(snapshot, chunk_hashes, settings.report_passages)
    old = {r.community_id: r for r in existing}
    done: dict[str, Report] = {}
    children: dict[str, list[str]] = {}
    for c in communities:
        if c.parent_id:
            children.setdefault(c.parent_id, []).append(c.id)
    written = 0
    retried: set[str] = set()
    contexts: dict[str, CommunityContext] = {}
    final: set[str] = set()  # reports whose titles stand: deeper levels', and those kept unchanged

    qualifiers = getattr(writer, "qualifiers", None)

    def members(community_id: str) -> list[str]:
        ctx = contexts[community_id]
        if qualifiers is not None:
            return qualifiers(ctx)
        return [e.name for e in title_rank(ctx.entities, ctx.degree()) if title_worthy(e.name)]

    for level in sorted({c.level for c in communities}, reverse=True):
        todo: list[tuple[Community, CommunityContext, dict]] = []  # type: ignore[type-arg]
        for c in sorted((c for c in communities if c.level == level), key=lambda c: c.id):
            ctx = index.context(c)
            contexts[c.id] = ctx
            manifest = inputs_manifest(ctx)
            fp = fingerprint(ctx, manifest)
            prior = old.get(c.id)
            # A report the LLM writer's fallback wrote is never kept by an LLM run: it is retried, and so is every
            # report above it, which may have been written from its text (unchanged prompts come from the cache).
            retry = prior is not None and writer.mode == "llm" and (
                prior.mode == "fallback" or any(k in retried for k in children.get(c.id, ())))
            if retry:
                retried.add(c.id)
            # A report kept for drifting little names its sub-communities as they were: not when one was retitled.
            kids_as_before = all(k not in done or k not in old or done[k].title == old[k].title
                                 for k in children.get(c.id, ()))
            keep = prior is not None and c.id not in force and not retry and (
                policy == "missing" or prior.fingerprint == fp or (
                    kids_as_before and _drifted_little(prior, manifest, index.chunk_hashes, min_drift)))
            if keep and policy == "changed" and prior.stale:
                # Marked stale by a deletion, but its inputs are back as they were (a changed document re-added), or
                # they drifted less than min_drift: reconsidered and kept, so no longer stale.
                done[c.id] = replace(prior, stale=False, inputs=prior.inputs)  # type: ignore[union-attr]
                final.add(c.id)
            elif keep:
                done[c.id] = prior  # type: ignore[assignment]
                final.add(c.id)
            else:
                todo.append((c, ctx, manifest))
                if inputs_out is not None:
                    inputs_out[c.id] = None  # (written now, with these inputs)
                continue
            if inputs_out is not None:
                now = json.dumps(manifest, sort_keys=True)
                inputs_out[c.id] = None if now == prior.inputs else now  # type: ignore[union-attr]
            if on_progress:
                on_progress(1)
        items = [(ctx, [done[k] for k in children.get(c.id, []) if k in done]) for c, ctx, _ in todo]
        if write_many is None:
            reports = []
            for ctx, kids in items:
                reports.append(writer.write(ctx, kids))
                if on_progress:
                    on_progress(1)
        else:
            reports = write_many(items)
            if len(reports) != len(items):
                raise RuntimeError(f"level {level}: {len(items)} reports to write, {len(reports)} returned")
            if on_progress:
                on_progress(len(items))
        for (c, _, manifest), report in zip(todo, reports):
            done[c.id] = replace(report, inputs=json.dumps(manifest, sort_keys=True))
            written += 1
        for cid, title in unique_titles(list(done.values()), members, final).items():
            done[cid] = replace(done[cid], title=title, inputs=done[cid].inputs)
        final.update(done)
    return [done[c.id] for c in communities], written
