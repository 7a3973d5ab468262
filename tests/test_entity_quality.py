"""Entities and community titles that mean something, offline, on any corpus.

Junk never becomes an entity; Markdown, front matter and licence boilerplate are not prose; spellings of one name
are one entity, and a name is merged with its longer forms only while its document supports it; every title is
made of words and no two are the same.
"""

from __future__ import annotations

import json

from pathlib import Path

from communities.context import GraphIndex
from communities.reports import ExtractiveReportWriter, write_reports
from communities.sentences import whole_sentences
from communities.titles import made_of_words
from core.records import Chunk, Community, Entity, GraphSnapshot, Relation
from core.settings import CommunitySettings, ExtractionSettings, StrataSettings
from core.store import open_store
from extraction.aliases import AliasMerge, alias_merges
from extraction.canonical import extraction_from_json
from core.text.sentences import split_sentences
from extraction.offline import OfflineExtractor
from extraction.resolution import resolve


def _chunk(text: str, doc: str = "d", ordinal: int = 0, start: int = 0) -> Chunk:
    return Chunk(f"{doc}#{ordinal:04d}", doc, ordinal, text, start, start + len(text), len(text.split()), doc, "h")


def _names(*chunks: Chunk) -> set[str]:
    result = OfflineExtractor(ExtractionSettings()).extract(list(chunks))
    return {m.name for ex in result.extractions for m in ex.entities}


def test_junk_is_never_an_entity() -> None:
    text = ("---\ntitle: Exporters\nsection: 1\n---\n"
            "# Node Exporter\n\n"
            "The [Node Exporter](https://github.com/prometheus/node_exporter) MUST run on every host, and "
            "Prometheus SHOULD scrape it. See ![logo](logo.png) and www.example.com for `and` and `true`.\n\n"
            "The playlist PLoz-W_CUquUlnvoEBbqChb7A0ZEZsWSXt was fixed in commit 3461ce1f on 2024-03-05.\n\n"
            "TODO: document the `YYYY-mm-dd` format of `logo.png` and `https://prometheus.io/docs`.\n\n"
            "The exporter unpacks into `package/` before it starts.\n\n"
            "| Option | Default |\n|---|---|\n| `--web.listen-address` | `:9100` |\n\n"
            "```yaml\nscrape_configs:\n  - job_name: node\n```\n"
            "Prometheus stores what the Node Exporter exposes. <div class=\"note\">Prometheus pulls.</div>\n")
    names = _names(_chunk(text))
    assert {"Node Exporter", "Prometheus"} <= names
    junk = {"and", "true", "MUST", "SHOULD", "TODO", "logo.png", "https", "www", "com", "github", "github.com",
            "www.example.com", "PLoz-W_CUquUlnvoEBbqChb7A0ZEZsWSXt", "3461ce1f", "YYYY-mm-dd", "2024-03-05",
            "9100", ":9100", "title", "section", "Exporters", "scrape_configs", "job_name", "div", "note",
            "https://prometheus.io/docs", "package/", "package"}
    assert not names & junk, names & junk
    assert all(not any(ch in n for ch in "<>[]()/`#|*=") for n in names), names


def test_markdown_is_not_prose_and_a_heading_is_a_unit_of_its_own() -> None:
    text = "## Install the agent\nRun the installer first. Then restart it.\n\n```sh\nnpm install x. Done.\n```\nAll good here now."
    units = [text[s:e] for s, e in split_sentences(text)]
    assert units == ["## Install the agent", "Run the installer first.", "Then restart it.", "All good here now."]


def test_gutenberg_licence_is_kept_out_of_entities_and_quotes() -> None:
    header = ("The Project Gutenberg eBook of A Tale\n\nThis ebook is for the use of anyone anywhere in the United "
              "States. Release date: December 24, 2007.\n\n*** START OF THE PROJECT GUTENBERG EBOOK A TALE ***\n\n")
    body = "Scrooge met Marley at the Counting House. Marley warned Scrooge about Christmas Eve.\n\n"
    footer = ("*** END OF THE PROJECT GUTENBERG EBOOK A TALE ***\n\n"
              + "The Project Gutenberg Literary Archive Foundation owns the trademark. Section 501 of the Internal "
                "Revenue Service code applies to Salt Lake City donations. " * 6)
    text = header + body + footer
    # Cut like the chunker does: the footer's later windows hold no marker of their own.
    cut = [0, len(header) + len(body) + 20, len(header) + len(body) + 300, len(text)]
    chunks = [_chunk(text[a:b], "tale", i, a) for i, (a, b) in enumerate(zip(cut, cut[1:]))]
    names = _names(*chunks)
    assert {"Scrooge", "Marley", "Christmas Eve"} <= names
    assert not {n for n in names if "Gutenberg" in n or n in {"Internal Revenue Service", "Salt Lake City",
                                                            "United States", "Foundation"}}, names
    head = chunks[0].text
    assert all("Gutenberg" not in head[s:e] for s, e in whole_sentences(head))


def test_a_title_line_is_not_the_first_words_of_the_text_below_it(tmp_path: Path) -> None:
    """A passage's title on its own line ("Kate Ramsay" above "Kate Ramsay is a fictional character ...": a text
    file's first line, a .jsonl row's ``title``) is a name of its own, not one name with the words after it; a
    name wrapped over two lines of prose still reads as one."""
    assert _names(_chunk("Kate Ramsay\nKate Ramsay is a character in the soap opera Neighbours.")) == \
        {"Kate Ramsay", "Neighbours"}
    assert _names(_chunk("Drew Fuller\nAndrew Alan Fuller is an actor from Atlanta.")) >= {"Drew Fuller", "Andrew Alan Fuller"}
    assert "Jacob Marley" in _names(_chunk("It was the ghost of Jacob\nMarley that spoke to Ebenezer Scrooge."))
    (tmp_path / "rows.jsonl").write_text(json.dumps({"_id": "p1", "title": "Leland, North Carolina",
                                                     "text": "Leland is a town in Brunswick County."}) + "\n")
    from extraction.loader import load_folder

    doc = load_folder(tmp_path).documents[0]
    names = _names(_chunk(doc.text, "p1"))
    assert "North Carolina" in names and not any("Carolina Leland" in n for n in names), names


def test_a_possessive_phrase_is_an_entity_only_when_the_document_repeats_it() -> None:
    text = ("Scrooge's nephew came in. Scrooge's nephew laughed. Scrooge's hat fell. "
            "Marley's ghost appeared.")
    names = _names(_chunk(text))
    assert "Scrooge's nephew" in names and "Scrooge's hat" not in names and "Marley's ghost" not in names


def test_a_common_word_capitalized_mid_sentence_is_part_of_the_name() -> None:
    """Where a clause opens, its capital says nothing, and a common word leading a name is left out ("The Ghost",
    "On Monday Scrooge"); mid-sentence a capital is the word's own ("in New York", "from Let's Encrypt")."""
    text = ("The Ghost of Christmas Past came in. Fred went to New York and to Great Britain. Caddy gets "
            "certificates from Let's Encrypt. On Monday Scrooge woke.")
    names = _names(_chunk(text))
    assert {"Ghost of Christmas Past", "New York", "Great Britain", "Let's Encrypt", "Scrooge"} <= names, names
    assert not names & {"York", "Britain", "Encrypt", "Monday Scrooge", "The Ghost of Christmas Past"}, names


def test_spellings_of_one_name_are_one_entity() -> None:
    text = ("The node_exporter exposes host metrics. Node Exporter runs on port 9100 next to Prometheus. "
            "Restart the node-exporter after Prometheus reloads.")
    entities, _ = resolve(OfflineExtractor(ExtractionSettings()).extract([_chunk(text)]).extractions)
    spellings = [e for e in entities if e.name.replace("_", " ").replace("-", " ").lower() == "node exporter"]
    assert len(spellings) == 1 and len(entities) == 2, [e.name for e in entities]


def _index(folder: Path, data_dir: Path) -> tuple[list[Entity], list[AliasMerge]]:
    from strata.pipeline import index_folder

    settings = StrataSettings(data_dir=data_dir, extraction={"mode": "offline"}, retrieval={"embedder": "none"})
    index_folder(folder, settings)
    store = open_store(settings)
    try:
        entities = sorted(store.read_graph().entities, key=lambda e: e.id)
        payloads = store.extractions()
    finally:
        store.close()
    return entities, alias_merges([extraction_from_json(cid, payloads[cid]) for cid in sorted(payloads)])


def test_a_name_and_its_longer_forms_merge_while_the_document_supports_it(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    story = folder / "story.md"
    other = folder / "other.md"
    other.write_text("The incident report was filed by Alex with Jordan Hayes.\n", encoding="utf-8")
    filler = "the rain kept falling on the old roof of the base while the radio hummed. " * 30
    story.write_text("Agent Alex Mercer entered the briefing room with Sam Rivera. Later, Alex Mercer read the "
                     f"file. Sam Rivera waited while Alex studied the map.\n\n{filler}\n\nAlex closed the file. "
                     "Alex Mercer nodded to Sam Rivera.\n", encoding="utf-8")
    entities, merges = _index(folder, tmp_path / "ws")
    names = {e.name for e in entities}
    alex = [e for e in entities if "Alex" in e.name]
    # In story.md, where Alex recurs chunk after chunk, the three forms are one entity; other.md has no longer
    # form, so its Alex stays apart.
    assert len(alex) == 2 and sorted(len(e.chunk_ids) for e in alex) == [1, 2]
    assert "Alex" in names and not names & {"Mercer"}
    merged = next(e for e in alex if e.name != "Alex")
    assert merged.name in {"Alex Mercer", "Agent Alex Mercer"}
    assert {c.split("#")[0] for c in merged.chunk_ids} == {"story.md"}
    assert AliasMerge("story.md", "alex", "agent alex mercer") in merges
    assert not [m for m in merges if m.document_id == "other.md"]

    # The evidence goes: the longer forms leave story.md, and the next run undoes the merge.
    story.write_text("Alex entered the briefing room with Sam Rivera. Sam Rivera waited while Alex studied the "
                     "map.\n", encoding="utf-8")
    entities, merges = _index(folder, tmp_path / "ws")
    assert not [e for e in entities if "Mercer" in e.name]
    assert [e.name for e in entities if "Alex" in e.name] == ["Alex"]
    assert not [m for m in merges if m.alias == "alex"]

    # Deterministic: a fresh index of the same folder has the same entities, field by field.
    fresh, _ = _index(folder, tmp_path / "ws-fresh")
    assert fresh == entities


def test_a_name_met_once_beside_a_longer_one_stays_its_own_entity(tmp_path: Path) -> None:
    # "Mohawk River" in a passage about the East Branch is the river of the other passage, not an alias of its
    # tributary: merged, the walk from one passage to the other would be cut (MuSiQue's bridges).
    folder = tmp_path / "wiki"
    folder.mkdir()
    rows = [{"_id": "east", "title": "East Branch Mohawk River",
             "text": "The East Branch Mohawk River is a river in New Hampshire. It is a tributary of the Mohawk River."},
            {"_id": "mohawk", "title": "Mohawk River",
             "text": "The Mohawk River flows west to the Connecticut River in northern New Hampshire."}]
    (folder / "rivers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    entities, merges = _index(folder, tmp_path / "ws")
    river = [e for e in entities if e.name == "Mohawk River"]
    assert len(river) == 1 and {c.split("#")[0] for c in river[0].chunk_ids} == {"east", "mohawk"}, merges
    assert not [m for m in merges if m.alias == "mohawk river"]


def test_titles_are_words_and_never_shared() -> None:
    names = ["https", "PLoz-W_CUquUlnvoEBbqChb7A0ZEZsWSXt", "Scrooge", "Bob Cratchit", "Fred", "Fezziwig",
             "logo.png", "</"]
    ents = tuple(Entity(f"e{i}", n, "name", f"{n} appears.", (f"c{i % 2}",)) for i, n in enumerate(names))
    rels = (Relation("r1", "e2", "e3", "Scrooge said to Bob Cratchit", ("c0",)),
            Relation("r2", "e0", "e1", "https PLoz-W_CUquUlnvoEBbqChb7A0ZEZsWSXt", ("c1",)),
            Relation("r3", "e2", "e4", "Scrooge, Fred", ("c0",)),
            Relation("r4", "e3", "e5", "Bob Cratchit danced for Fezziwig", ("c1",)),
            Relation("r5", "e6", "e7", "logo.png </", ("c0",)))
    snap = GraphSnapshot(ents, rels)
    comms = [Community("c0", 0, None, ("e2", "e3", "e4", "e5")),
             Community("c1", 1, "c0", ("e2", "e3", "e4", "e5")),  # a child with its parent's members
             Community("c2", 1, "c0", ("e2", "e3", "e4")),
             Community("c3", 0, None, ("e0", "e1", "e6", "e7"))]  # nothing but junk
    settings = CommunitySettings()
    reports, _ = write_reports(comms, snap, ExtractiveReportWriter(settings), settings)
    titles = [r.title for r in reports]
    assert all(made_of_words(t) for t in titles), titles
    assert len({t.casefold() for t in titles}) == len(titles), titles
    assert all(":" not in t for t in titles), titles
    by_id = {r.community_id: r.title for r in reports}
    # What links the main entities, in words; the parent c0 keeps it, its children are told apart by members.
    assert by_id["c0"] == "Scrooge said to Bob Cratchit"
    assert by_id["c1"] == "Scrooge said to Bob Cratchit, with Fezziwig"
    assert by_id["c2"].startswith("Scrooge said to Bob Cratchit, with ")
    assert by_id["c3"].startswith("Name entities")  # no member's name is made of words
    # A kept report keeps its title; the same reports again change nothing.
    again, written = write_reports(comms, snap, ExtractiveReportWriter(settings), settings, existing=reports)
    assert written == 0 and [r.title for r in again] == titles


def test_a_docs_community_is_titled_by_its_pages_and_commands_not_plain_words_or_spans_cut_mid_list() -> None:
    # A docs site: "latest" and "git" are the best connected members, but they are words of the text; the
    # members that title the community's pages (npm-update, npm-outdated) and other commands say what it is about.
    names = ["latest", "git", "npm-update", "npm-outdated", "npm access", "cpu", "os", "libc", "devEngines"]
    ents = tuple(Entity(f"e{i}", n, "identifier", f"{n} appears.", ("u#0000", "o#0000"))
                 for i, n in enumerate(names))
    rels = [Relation(f"r{i}{j}", f"e{i}", f"e{j}", f"{names[i]} {names[j]}", ("u#0000",))
            for i in range(2) for j in range(9) if i != j]
    rels += [Relation("rx", "e2", "e3", "npm-update npm-outdated", ("u#0000",)),
             Relation("ry", "e2", "e4", "npm-update npm access", ("o#0000",)),
             # spans that are a list of members and a phrase cut before its second half: never titles
             Relation("rl", "e8", "e5", "devEngines property are cpu os libc and runtime", ("o#0000",)),
             Relation("rc", "e2", "e0", "npm-update has run the latest script for both latest", ("u#0000",))]
    chunks = {"u#0000": Chunk("u#0000", "u", 0, "Update packages.", 0, 16, 3, "u.md", "h1", {"title": "npm-update"}),
              "o#0000": Chunk("o#0000", "o", 0, "Check outdated.", 0, 15, 3, "o.md", "h2", {"title": "npm-outdated"})}
    snap = GraphSnapshot(ents, tuple(rels))
    settings = CommunitySettings()
    comms = [Community("c0", 0, None, tuple(e.id for e in ents))]
    reports, _ = write_reports(comms, snap, ExtractiveReportWriter(settings, chunks), settings)
    title = reports[0].title
    assert title.split(":")[0] in ("npm-update", "npm-outdated"), title  # led by the page its members are on
    assert "cpu" not in title and "property" not in title and "both" not in title, title
    # One book: its title names every community alike, so it leads none.
    one = {k: Chunk(c.id, c.document_id, 0, c.text, 0, 15, 3, c.source, c.content_hash, {"title": "A Book"})
           for k, c in chunks.items()}
    assert not ExtractiveReportWriter(settings, one)._page_titles(GraphIndex(snap).context(comms[0]))
    book, _ = write_reports(comms, snap, ExtractiveReportWriter(settings, one), settings)
    assert not book[0].title.startswith(("latest", "git")), book[0].title


def test_a_community_is_titled_by_the_page_most_about_it_not_by_a_reference_page_that_names_everything() -> None:
    # A reference page ("Options") names the community's members more often than their own page ("Redis") does,
    # but it names forty other options as well: it is about none of them in particular.
    members = ["Redis", "Sentinel", "RedisCluster", "Failover"]
    others = [f"Option{i}" for i in range(40)]
    ref = [f"ref#{i:04d}" for i in range(8)]
    ents = tuple(Entity(f"m{i}", n, "name", f"{n} stores sessions.", tuple(ref[:3]) + ("redis#0000",))
                 for i, n in enumerate(members))
    ents += tuple(Entity(f"o{i}", n, "name", f"{n} is an option.", (ref[i % 8],)) for i, n in enumerate(others))
    rels = tuple(Relation(f"r{i}{j}", f"m{i}", f"m{j}", f"{members[i]} with {members[j]}", ("redis#0000",))
                 for i in range(4) for j in range(i + 1, 4))
    chunks = {cid: Chunk(cid, "ref", k, "Redis, Sentinel, RedisCluster and Failover are options.", 0, 56, 9,
                         "ref.md", f"h{k}", {"title": "Options"}) for k, cid in enumerate(ref)}
    chunks["redis#0000"] = Chunk("redis#0000", "redis", 0, "Redis with Sentinel keeps sessions.", 0, 35, 6,
                                 "redis.md", "hr", {"title": "Redis sessions"})
    snap = GraphSnapshot(ents, rels)
    settings = CommunitySettings()
    comms = [Community("c0", 0, None, tuple(f"m{i}" for i in range(4)))]
    reports, _ = write_reports(comms, snap, ExtractiveReportWriter(settings, chunks), settings)
    assert reports[0].title.startswith("Redis sessions"), reports[0].title
