from communities.context import GraphIndex, fingerprint
from communities.leiden import WeightedEdge, detect_communities, hierarchical_leiden, match_identities
from communities.reports import ExtractiveReportWriter, write_reports
from core.records import Chunk, Community, Entity, GraphSnapshot, Relation
from core.settings import CommunitySettings


def planted(groups: int = 6, size: int = 15) -> GraphSnapshot:
    ents, rels = [], []
    for g in range(groups):
        ids = [f"e{g:02d}_{i:02d}" for i in range(size)]
        ents += [Entity(i, f"name {i}", "name", f"desc {i}", (f"c{g}",)) for i in ids]
        for a in range(size):
            for b in range(a + 1, size):
                if (a * 7 + b * 3) % 4 == 0 or b == a + 1:
                    rels.append(Relation(f"r_{ids[a]}_{ids[b]}", ids[a], ids[b], f"{ids[a]} with {ids[b]}", (f"c{g}",)))
        rels.append(Relation(f"r_bridge{g}", ids[0], f"e{(g + 1) % groups:02d}_00", "bridge", ("x",)))
    return GraphSnapshot(tuple(ents), tuple(rels))


def test_same_input_same_communities_and_hierarchy_bounds() -> None:
    snap = planted()
    s = CommunitySettings(max_cluster_size=10)
    a = detect_communities(snap, s)
    b = detect_communities(GraphSnapshot(tuple(reversed(snap.entities)), tuple(reversed(snap.relations))), s)
    assert a == b
    levels = {c.level for c in a}
    assert 0 in levels and 1 in levels  # groups of 15 exceed 10 and are split
    by_id = {c.id: c for c in a}
    for c in a:
        if c.parent_id:
            assert set(c.entity_ids) <= set(by_id[c.parent_id].entity_ids)


def test_leidenalg_engine_gives_the_planted_groups() -> None:
    snap = planted()
    comms = [c for c in detect_communities(snap, CommunitySettings(engine="leidenalg", max_cluster_size=50)) if c.level == 0]
    assert len(comms) == 6


def test_identity_survives_small_changes() -> None:
    old = [Community("keep-me", 0, None, ("a", "b", "c", "d")), Community("other", 0, None, ("x", "y"))]
    new = [Community("c0_new", 0, None, ("a", "b", "c", "e")), Community("c0_zz", 0, None, ("p", "q"))]
    renamed = match_identities(new, old, 0.5)
    assert [c.id for c in renamed] == ["keep-me", "c0_zz"]


def test_reports_cite_member_chunks_and_are_kept_when_unchanged() -> None:
    snap = planted(3, 8)
    comms = hierarchical_leiden([e.id for e in snap.entities],
                                [WeightedEdge(r.source_id, r.target_id, r.weight) for r in snap.relations], CommunitySettings())
    writer = ExtractiveReportWriter(CommunitySettings())
    reports, written = write_reports(comms, snap, writer, CommunitySettings())
    assert written == len(comms) == len(reports)
    index = GraphIndex(snap)
    for c, r in zip(comms, reports):
        ctx = index.context(c)
        assert r.findings and r.fingerprint == fingerprint(ctx)
        assert set(r.chunk_ids) <= set(ctx.chunk_ids) | {"x"}
        assert len(ctx.passages) <= CommunitySettings().report_passages
    again, written2 = write_reports(comms, snap, writer, CommunitySettings(), existing=reports)
    assert written2 == 0 and again == reports


def test_incremental_update_keeps_untouched_communities() -> None:
    from communities.leiden import changed_entities, entity_signatures

    snap = planted(6, 15)
    s = CommunitySettings(max_cluster_size=10)
    before = detect_communities(snap, s)
    # Change one group: a member gets a new description and a new relation inside its group.
    group = [e for e in snap.entities if e.id.startswith("e02_")]
    edited = tuple(Entity(e.id, e.name, e.type, e.description + " (edited)" if e.id == group[0].id else e.description,
                          e.chunk_ids) for e in snap.entities)
    extra = Relation("r_new", group[0].id, group[5].id, "new link", ("c2",))
    after_snap = GraphSnapshot(edited, snap.relations + (extra,))
    touched = changed_entities(entity_signatures(snap), entity_signatures(after_snap))
    assert touched == {group[0].id, group[5].id}
    after = detect_communities(after_snap, s, before, touched)
    untouched_before = {c.id: c for c in before if not set(c.entity_ids) & touched}
    after_by_id = {c.id: c for c in after}
    assert untouched_before and all(after_by_id.get(cid) == c for cid, c in untouched_before.items())
    assert {e for c in after if c.level == 0 for e in c.entity_ids} == {e.id for e in snap.entities}


def test_an_incremental_update_makes_no_sub_community_equal_to_its_parent() -> None:
    # Six entities all linked to each other: no split of them is better than none. The previous hierarchy split
    # them in two at the next level (as an earlier graph may have); one member is described anew. Leiden keeps
    # the six together at both levels, and the untouched half, contracted, must not come out as a child holding
    # all six, which a full run never makes.
    nodes = list("abcdef")
    snap = GraphSnapshot(tuple(Entity(n, n, "name", n + ("+" if n == "d" else ""), ("x",)) for n in nodes),
                         tuple(Relation(f"r{x}{y}", x, y, "", ("x",)) for i, x in enumerate(nodes) for y in nodes[i + 1:]))
    s = CommunitySettings(max_cluster_size=2, max_levels=4)
    previous = [Community("P", 0, None, tuple(nodes)), Community("X", 1, "P", tuple("abc")),
                Community("Y", 1, "P", tuple("def"))]
    after = detect_communities(snap, s, previous, {"d"})
    by_id = {c.id: c for c in after}
    assert [c.entity_ids for c in after if c.level == 0] == [tuple(nodes)]
    assert not [c for c in after if c.parent_id and set(c.entity_ids) == set(by_id[c.parent_id].entity_ids)]
    assert after == [Community("P", 0, None, tuple(nodes))]
    assert [c.entity_ids for c in detect_communities(snap, s)] == [tuple(nodes)]


def _edited(snap: GraphSnapshot, ids: set[str]) -> GraphSnapshot:
    return GraphSnapshot(tuple(Entity(e.id, e.name, e.type, e.description + " (edited)" if e.id in ids else e.description,
                                      e.chunk_ids) for e in snap.entities), snap.relations)


def _written() -> tuple:  # type: ignore[type-arg]
    """Two planted groups of sixteen, their communities, chunk hashes, a writer and the reports it wrote."""
    snap = planted(2, 16)
    s = CommunitySettings(max_cluster_size=50)
    comms = detect_communities(snap, s)
    hashes = {"c0": "h0", "c1": "h1", "x": "hx"}
    writer = ExtractiveReportWriter(s)
    reports, _ = write_reports(comms, snap, writer, s, chunk_hashes=hashes)
    return snap, s, comms, hashes, writer, reports


def test_a_report_that_drifted_less_than_min_drift_is_kept_until_its_drift_adds_up() -> None:
    snap, s, comms, hashes, writer, reports = _written()
    members = sorted(next(c for c in comms if "e00_00" in c.entity_ids).entity_ids)
    # One member of sixteen described anew: a drift of 0.2 / 16, kept at min_drift 0.1, rewritten at 0.
    one = _edited(snap, {members[0]})
    _, rewritten = write_reports(comms, one, writer, s, existing=reports, chunk_hashes=hashes)
    assert rewritten == 1
    kept, written = write_reports(comms, one, writer, s, existing=reports, chunk_hashes=hashes, min_drift=0.1)
    assert written == 0 and kept == reports
    # The drift is scored against what the kept report was written from, so later changes add up to a rewrite.
    half = _edited(snap, set(members[:8]))
    _, written = write_reports(comms, half, writer, s, existing=kept, chunk_hashes=hashes, min_drift=0.1)
    assert written == 1


def test_a_report_citing_a_chunk_that_changed_is_rewritten_however_little_it_drifted() -> None:
    snap, s, comms, hashes, writer, reports = _written()
    cited = next(r for r in reports if "c0" in r.chunk_ids)
    # The passage all its findings cite is edited (new text), or deleted: its quotes no longer stand.
    for now in ({**hashes, "c0": "h0-edited"}, {"c1": "h1", "x": "hx"}):
        again, written = write_reports(comms, snap, writer, s, existing=reports, chunk_hashes=now, min_drift=0.5)
        assert written >= 1
        assert cited.community_id in {r.community_id for r in again if r not in reports}


def test_a_stale_report_kept_for_drifting_little_is_no_longer_stale() -> None:
    from dataclasses import replace

    snap, s, comms, hashes, writer, reports = _written()
    marked = [replace(r, stale=True, inputs=r.inputs) for r in reports]
    members = sorted(next(c for c in comms if "e00_00" in c.entity_ids).entity_ids)
    again, written = write_reports(comms, _edited(snap, {members[0]}), writer, s, existing=marked,
                                   chunk_hashes=hashes, min_drift=0.1)
    assert written == 0 and not any(r.stale for r in again)
    assert [r.findings for r in again] == [r.findings for r in reports]


class _NamedWriter:
    """Reports titled from a dict (the community's id by default), each citing chunk c0."""

    mode, model = "offline", "named"

    def __init__(self, titles: dict[str, str]) -> None:
        self.titles = titles

    def write(self, ctx, children):  # type: ignore[no-untyped-def]
        from core.records import Finding, Report

        c = ctx.community
        return Report(c.id, c.level, self.titles.get(c.id, c.id), "s", (Finding("f", ("c0",)),), 0.0,
                      fingerprint(ctx), self.mode, self.model, "2026-01-01T00:00:00+00:00")


def test_a_parent_is_not_kept_for_drifting_little_when_a_sub_community_was_retitled() -> None:
    snap = planted(3, 15)
    s = CommunitySettings(max_cluster_size=10)
    comms = detect_communities(snap, s)  # groups of fifteen, each split in two or three
    child = next(c for c in comms if c.parent_id is not None)
    parent = next(c for c in comms if c.id == child.parent_id)
    hashes = {"c0": "h0", "c1": "h1", "c2": "h2", "x": "hx"}
    titles: dict[str, str] = {}
    reports, _ = write_reports(comms, snap, _NamedWriter(titles), s, chunk_hashes=hashes)
    edited = _edited(snap, {child.entity_ids[0]})  # a small drift for the child and the parent
    # The child written again under the same title: the parent drifted little and is kept.
    again, _ = write_reports(comms, edited, _NamedWriter(titles), s, existing=reports, chunk_hashes=hashes,
                             force=[child.id], min_drift=0.1)
    assert next(r for r in again if r.community_id == parent.id) in reports
    # Retitled: the parent, which names its sub-communities, is written again.
    again, _ = write_reports(comms, edited, _NamedWriter({child.id: "A new title"}), s, existing=reports,
                             chunk_hashes=hashes, force=[child.id], min_drift=0.1)
    assert next(r for r in again if r.community_id == parent.id) not in reports


def test_a_report_is_written_again_when_a_page_it_reads_is_less_about_its_community() -> None:
    # The title weighs how much of each page the report reads is about the community: more entities named on
    # that page (in a chunk it does not read) change its fingerprint.
    snap = planted(1, 6)
    comm = Community("c", 0, None, tuple(e.id for e in snap.entities))
    before = fingerprint(GraphIndex(snap).context(comm))
    extra = tuple(Entity(f"o{i}", f"option {i}", "name", "an option", ("c0#0009",)) for i in range(5))
    after = fingerprint(GraphIndex(GraphSnapshot(snap.entities + extra, snap.relations)).context(comm))
    assert before != after


def test_a_docs_title_names_the_page_about_the_communitys_central_members() -> None:
    # A community around TLS: TLS is linked to every member, SNI and six options only to TLS. The LDAP page names
    # the six options and nothing else; the TLS page names TLS and SNI on three chunks, beside other entities.
    # Counting mentions alone (6 * 6/6 against 6 * 6/9) the LDAP page would title it; a page naming the central
    # member is more about the community than one naming as many of its leaves.
    def chunk(cid: str, title: str) -> Chunk:
        doc = cid.split("#")[0]
        return Chunk(cid, doc, int(cid[-1]), f"Text of {cid}.", 0, 10, 3, doc, cid, {"title": title})

    tls = [f"tls.md#000{i}" for i in range(3)]
    chunks = {c.id: c for c in [chunk("ldap.md#0000", "LDAP Authentication")] + [chunk(c, "TLS Certificates") for c in tls]}
    options = [Entity(f"o{i}", f"Option{i}", "name", "an option", ("ldap.md#0000",)) for i in range(6)]
    members = [Entity("tls", "TLS", "name", "a protocol", tuple(tls)), Entity("sni", "SNI", "name", "an extension", tuple(tls))]
    others = [Entity(f"x{i}", f"Other{i}", "name", "elsewhere", (tls[i],)) for i in range(3)]
    relations = [Relation(f"r_{e.id}", *sorted(("tls", e.id)), "linked", (e.chunk_ids[0],)) for e in options + members[1:]]
    snap = GraphSnapshot(tuple(members + options + others), tuple(relations))
    comm = Community("c", 0, None, tuple(e.id for e in members + options))
    ctx = GraphIndex(snap).context(comm)
    title = ExtractiveReportWriter(CommunitySettings(), chunks).write(ctx).title
    assert title.startswith("TLS Certificates"), title


def test_a_chinese_communitys_report_title_joins_its_names_with_no_english_words() -> None:
    # The glue is chosen by the language of the community's passages: their text, not their ids (which are Latin
    # in every corpus, and had made every title English: "调度器 with 工作节点 and 心跳").
    import re

    texts = ["调度器负责把任务分配给工作节点。调度器每五分钟运行一次。", "工作节点每秒发送心跳。心跳中断后工作节点被标记为离线。"]
    chunks = {f"d{i}#0000": Chunk(f"d{i}#0000", f"d{i}", 0, t, 0, len(t), len(t), f"d{i}", f"h{i}")
              for i, t in enumerate(texts)}
    ents = [Entity("s", "调度器", "concept", "", ("d0#0000",)), Entity("w", "工作节点", "concept", "", ("d0#0000", "d1#0000")),
            Entity("h", "心跳", "concept", "", ("d1#0000",))]
    snap = GraphSnapshot(tuple(ents), ())  # (no relation whose words could title it: the names are joined)
    ctx = GraphIndex(snap).context(Community("c", 0, None, ("s", "w", "h")))
    title = ExtractiveReportWriter(CommunitySettings(), chunks).write(ctx).title
    assert "工作节点" in title and not re.search(r"[A-Za-z]", title), title


def test_incremental_updates_of_random_graphs_give_valid_hierarchies() -> None:
    # Random planted graphs, a hierarchy from a full run, then a random edit (entities added and deleted, links
    # added and dropped, descriptions changed) and the incremental update; three edits in a row. Every result is a
    # hierarchy a full run could give: ids unique, each entity in at most one community per level, every
    # linked entity at the first level, each child inside its parent one level up and smaller than it.
    import random
    from dataclasses import replace

    from communities.leiden import changed_entities, entity_signatures

    def link(a: str, b: str) -> Relation:
        a, b = sorted((a, b))
        return Relation(f"r_{a}_{b}", a, b, "", ("x",))

    def check(comms: list[Community], snap: GraphSnapshot, s: CommunitySettings) -> None:
        by_id = {c.id: c for c in comms}
        assert len(by_id) == len(comms)
        seen: set[tuple[int, str]] = set()
        for c in comms:
            assert len(c.entity_ids) >= 2 and c.level < s.max_levels
            assert not {(c.level, e) for e in c.entity_ids} & seen
            seen |= {(c.level, e) for e in c.entity_ids}
            if c.parent_id is None:
                assert c.level == 0
            else:
                parent = by_id[c.parent_id]
                assert parent.level == c.level - 1 and set(c.entity_ids) < set(parent.entity_ids)
        linked = {e for r in snap.relations for e in (r.source_id, r.target_id)}
        assert linked <= {e for level, e in seen if level == 0}

    for trial in range(40):
        rng = random.Random(trial)
        s = CommunitySettings(max_cluster_size=rng.randint(3, 12), max_levels=rng.randint(2, 4))
        ids = [f"e{i:03d}" for i in range(rng.randint(12, 80))]
        group = {e: rng.randrange(rng.randint(2, 6)) for e in ids}
        rels = {r.id: r for i, a in enumerate(ids) for b in ids[i + 1:]
                if rng.random() < (0.4 if group[a] == group[b] else 0.02) for r in [link(a, b)]}
        snap = GraphSnapshot(tuple(Entity(e, e, "name", "d", ("c",)) for e in ids), tuple(rels.values()))
        comms = detect_communities(snap, s)
        check(comms, snap, s)
        for _ in range(3):
            ents, rels = {e.id: e for e in snap.entities}, {r.id: r for r in snap.relations}
            for _ in range(rng.randint(1, 6)):
                op, names = rng.choice(["add", "delete", "link", "unlink", "describe"]), sorted(ents)
                if op == "add":
                    e = f"n{len(ents) + rng.randrange(10**6):07d}"
                    ents[e] = Entity(e, e, "name", "new", ("n",))
                    for b in rng.sample(names, min(len(names), rng.randint(0, 4))):
                        rels[link(e, b).id] = link(e, b)
                elif op == "delete" and len(names) > 5:
                    e = rng.choice(names)
                    del ents[e]
                    rels = {k: r for k, r in rels.items() if e not in (r.source_id, r.target_id)}
                elif op == "link":
                    a, b = rng.sample(names, 2)
                    rels[link(a, b).id] = link(a, b)
                elif op == "unlink" and rels:
                    del rels[rng.choice(sorted(rels))]
                elif op == "describe":
                    e = rng.choice(names)
                    ents[e] = replace(ents[e], description=ents[e].description + "+")
            new = GraphSnapshot(tuple(ents[k] for k in sorted(ents)), tuple(rels[k] for k in sorted(rels)))
            comms = detect_communities(new, s, comms, changed_entities(entity_signatures(snap), entity_signatures(new)))
            snap = new
            check(comms, snap, s)
