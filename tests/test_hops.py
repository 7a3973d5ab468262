"""The second hop by title (retrieval/hops.py): the passages a first-hop passage names by their titles move up
beside it, in a pure step and in a search; titles that cannot name one document never link."""

from __future__ import annotations

from pathlib import Path

from core.settings import StrataSettings
from retrieval.hops import TitleHops, base_title, names

STOP = {"about", "the", "and", "of", "overview"}


def hops(rows: list[tuple[str | None, str]], mentions: dict[str, int] | None = None,
         documents: list[str] | None = None) -> TitleHops:
    """TitleHops over rows given as (title, text), one document each unless ``documents`` says otherwise."""
    return TitleHops([t for t, _ in rows], documents or [f"d{i}" for i in range(len(rows))],
                     [x for _, x in rows], lambda s: all(w in STOP for w in s.split()), mentions or {},
                     n_chunks=len(rows), max_entity_share=0.1)


SOUNDTRACK = ("Natural Born Killers (soundtrack)",
              "The soundtrack was produced by Trent Reznor of Nine Inch Nails, who chose the songs.")
REZNOR = ("Trent Reznor", "Michael Trent Reznor (born May 17, 1965) is an American singer and producer.")
OTHERS = [("Oliver Stone", "Oliver Stone directed Natural Born Killers in 1994."),
          ("Tom Sizemore", "Tom Sizemore played a detective in Natural Born Killers."),
          ("Juliette Lewis", "Juliette Lewis starred in the film with Woody Harrelson.")]


def test_the_passage_the_first_hop_names_moves_up_beside_it() -> None:
    t = hops([SOUNDTRACK, *OTHERS, REZNOR])
    question = "The soundtrack from the film Natural Born Killers was produced by a man born in what year?"
    order, moved = t.promote(question, [0, 1, 2, 3, 4], per_hop=2, window=20)
    assert order == [0, 4, 1, 2, 3]
    assert [(h.row, h.named_by, h.title) for h in moved] == [(4, 0, "Trent Reznor")]
    # Off, or nothing named: the order stands.
    assert t.promote(question, [0, 1, 2, 3, 4], per_hop=0, window=20) == ([0, 1, 2, 3, 4], [])
    # A passage lower down that the question names by its title is a first hop too, and brings what it names.
    order, moved = t.promote(question, [1, 2, 0, 3, 4], per_hop=2, window=20)
    assert order == [1, 0, 4, 2, 3] and [h.row for h in moved] == [4]
    assert t.promote("Who produced it?", [3, 1, 2, 0, 4], per_hop=2, window=20) == ([3, 1, 2, 0, 4], [])
    # Only candidates within the window are looked at.
    assert t.promote(question, [0, 1, 2, 3, 4], per_hop=2, window=4)[0] == [0, 1, 2, 3, 4]


def test_a_comparison_names_both_first_hops_and_each_brings_what_it_names() -> None:
    rows = [("Alpha Film", "Alpha Film was directed by Rosa Vantler."),
            ("Vantler Street", "A street."),
            ("Beta Film", "Beta Film was directed by Karl Oduya in 1990."),
            ("Rosa Vantler", "Rosa Vantler was born in Lisbon."),
            ("Karl Oduya", "Karl Oduya was born in Lagos."),
            ("Gamma", "Gamma mentions Alpha Film and Beta Film.")]
    t = hops(rows)
    q = "Which film has the director born first, alpha film or Beta Film?"  # any case in a question
    order, moved = t.promote(q, [0, 1, 5, 2, 3, 4], per_hop=2, window=20)
    assert order == [0, 2, 3, 4, 1, 5]
    assert {(h.row, h.named_by) for h in moved} == {(3, 0), (4, 2)}
    # A question naming two titles reorders the top even when neither first hop names anything.
    plain = hops([("Alpha Film", "A film."), ("Other", "x"), ("Third One", "y"), ("Beta Film", "A film too.")])
    assert plain.promote(q, [0, 1, 2, 3], per_hop=2, window=20) == ([0, 3, 1, 2], [])
    # A candidate that names a first hop (the link backwards) is not moved: Gamma stays where it was.
    assert order.index(5) > order.index(1)


def test_titles_match_word_for_word_with_their_capitals() -> None:
    assert base_title("Steve Johnson (American football, born 1956)") == "Steve Johnson"
    assert base_title("(film)") == "(film)"
    assert names("He starred in Charmed, a series on The WB.", "Charmed")
    assert not names("She was charmed by the town.", "Charmed")
    assert names("Npm install reads package.json.", "npm install") and names("run `npm install` first", "npm install")
    assert not names("npm installs nothing", "npm install") and not names("Eunji", "Eun-ji")
    assert names("with Jung Eun–ji and others", "Jung Eun-ji")  # any dash or space between its words
    assert names("she was charmed, then Charmed aired", "Charmed")  # the next occurrence
    assert not names("", "Charmed") and not names("x", "")
    # A one-word title opening a sentence is any word's capital; inside one, or in a longer title, it names.
    assert not names("Configuration is read at start. Then it runs.", "Configuration")
    assert not names("It starts.\nConfiguration follows.", "Configuration")
    assert names("See the Configuration page.", "Configuration")
    assert names("Trent Reznor produced it.", "Trent Reznor")
    assert names("who is dawn penn", "Dawn Penn", any_case=True) and not names("who is dawn penn", "Dawn Penn")
    assert names("Café Müller opened", "Café Müller") and names("at the Ｃafe", "Cafe")  # NFKC: a full-width letter


def test_titles_that_cannot_name_one_document_never_link() -> None:
    rows = [("Hub", "Hub page names About, Go, Install guide and Overview and Shared Name."),
            ("About", "About page."), ("Go", "Go page."), ("Install guide", "Install guide page."),
            ("Overview", "Overview page."),
            *[("Shared Name", f"Shared Name page {i}.") for i in range(4)]]
    t = hops(rows, mentions={"install guide": 40}, documents=[f"d{i}" for i in range(len(rows))])
    for row in range(1, len(rows)):  # stop words, too short, mentioned everywhere, shared by four documents
        assert t.title_of(row) is None, rows[row]
    assert t.promote("What does the hub say?", list(range(len(rows))), 2, 20)[1] == []
    # Several chunks of one document are one document: its best-ranked chunk moves, once.
    doc = hops([("Hub", "The Hub names Lantern Keys."), ("Lantern Keys", "part one"), ("Lantern Keys", "part two"),
                ("Lantern Keys", "part three"), ("Lantern Keys", "part four"), ("Other Page", "other")],
               documents=["hub", "keys", "keys", "keys", "keys", "other"])
    assert doc.title_of(1) == "Lantern Keys"
    order, moved = doc.promote("What does the hub name?", [0, 5, 3, 2, 1, 4], 2, 20)
    assert order == [0, 3, 5, 2, 1, 4] and [h.row for h in moved] == [3]

CORPUS = {
    "soundtrack.md": "# Quillon Harbour Soundtrack\n\nThe Quillon Harbour Soundtrack album was produced by "
                     "Mirela Kastrovic of the band Glass Tides, who picked every song for the film.\n",
    "mirela.md": "# Mirela Kastrovic\n\nMirela Kastrovic has taught piano in Vienna since 1990.\n",
    **{f"album{i}.md": f"# Harbour Album {i}\n\nThe Harbour Album {i} soundtrack was produced for a film about "
                       f"Quillon and its harbour in year {1990 + i}.\n" for i in range(6)},
}


def test_a_search_moves_the_named_passage_up_and_says_so(tmp_path: Path) -> None:
    from strata.engine import Engine
    from strata.pipeline import index_folder

    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in CORPUS.items():
        (folder / name).write_text(text, encoding="utf-8")
    question = "The Quillon Harbour Soundtrack was produced by someone living in which city?"
    results = {}
    for links in (0, 2):
        settings = StrataSettings(data_dir=tmp_path / f"ws{links}", extraction={"mode": "offline"},
                                  retrieval={"hop_links": links})
        index_folder(folder, settings)
        engine = Engine(settings)
        try:
            results[links] = engine.index.search_detailed(question, 4)
        finally:
            engine.close()
    off, on = results[0], results[2]
    assert off.hits[0].chunk_id == on.hits[0].chunk_id == "soundtrack.md#0000"
    # "The Quillon Harbour Soundtrack" links the three-word title though the span opens with an article.
    assert off.graph_weight > 0 and "Quillon Harbour Soundtrack" in off.graph_seeds and off.hops == ()
    assert [h.chunk_id for h in on.hits][:2] == ["soundtrack.md#0000", "mirela.md#0000"]
    if "mirela.md#0000" in [h.chunk_id for h in off.hits][:2]:
        raise AssertionError("the named passage was second already: the test shows nothing")
    assert on.hops == (("mirela.md#0000", "soundtrack.md#0000", "Mirela Kastrovic"),)
    assert "1 passage(s) it names by title" in on.ranking
    scores = [h.score for h in on.hits]
    assert scores == sorted(scores, reverse=True)  # a moved passage takes its place's score
