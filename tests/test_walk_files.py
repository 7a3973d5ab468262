"""A generation holds its graph walk built (retrieval/graph_walk.py: save_walk, load_walk), so loading it parses no
graph: the walk it loads is the one its graph would build, an older generation without the walk's files still
loads (from its graph), a walk of other rows is refused, and the lexicon saved with its keys reads as the one
keyed again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from core.settings import StrataSettings
from retrieval.graph_walk import (WALK_ARRAYS, WALK_META, GraphWalk, load_walk, save_walk, walk_for_index,
                                  walk_meta, walk_params)
from retrieval.lexicon import EntityLexicon, KnownEntity
from tests.test_graph_walk import CORPUS, QUESTION, write_corpus

# Polish names (base forms), a Chinese name inside a run of characters, a name too short to link alone.
MORE = {
    "poznan.md": "# Ratusz w Poznaniu\n\nRatusz w Poznaniu stoi na Starym Rynku. Marii Skłodowskiej-Curie "
                 "poświęcono tablicę.\n",
    "hk.md": "# 香港\n\n香港大学位于香港岛西部，是香港历史最悠久的大学。\n",
    "us.md": "The US office of Orbis Press opened in Lowmarsh.\n",
}
QUESTIONS = [QUESTION, "Gdzie stoi ratusz w Poznaniu?", "Kim była Maria Skłodowska-Curie?",
             "香港大学在哪里？", "Where did the US office open?", "who publishes the journal of quantum gardening"]


@pytest.fixture
def settings(tmp_path: Path) -> StrataSettings:
    return StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"})


def _published(settings: StrataSettings, tmp_path: Path):  # type: ignore[no-untyped-def]
    from strata.pipeline import index_folder
    from strata.workspace import Workspace

    index_folder(write_corpus(tmp_path / "notes", {**CORPUS, **MORE}), settings)
    return Workspace(settings.data_dir).current()


def _same_walk(a: GraphWalk, b: GraphWalk) -> None:
    assert a.entity_ids == b.entity_ids and a.names == b.names and a.types == b.types
    assert np.array_equal(a.df, b.df) and a.keys == b.keys and a.parts == b.parts and a.max_words == b.max_words
    assert a.counts == b.counts and a.n_rows == b.n_rows
    assert (a.out_edges != b.out_edges).nnz == 0 and a.out_edges.shape == b.out_edges.shape
    assert a.lexicon.by_key == b.lexicon.by_key and a.lexicon.max_words == b.lexicon.max_words
    assert a.lexicon.entities == b.lexicon.entities
    assert np.array_equal(a.document_of_row, b.document_of_row)
    assert (a.titles is None) == (b.titles is None)
    if a.titles is not None:
        assert a.titles.titles == b.titles.titles and a.titles.linkable == b.titles.linkable
    for q in QUESTIONS:
        assert a.link(q) == b.link(q), q


def test_the_published_walk_is_the_one_its_graph_builds(settings: StrataSettings, tmp_path: Path) -> None:
    from strata.engine import Engine
    from strata.generations import read_graph

    current = _published(settings, tmp_path)
    files = json.loads(current.manifest_path.read_text())["files"]
    assert f"index/{WALK_ARRAYS}" in files and f"index/{WALK_META}" in files  # checked like every file
    engine = Engine(settings)
    try:
        index = engine.index
        assert index.graph_walk.lexicon is engine.lexicon  # loaded from the files (built, it has a lexicon of its own)
        built = walk_for_index(read_graph(current.root), index, walk_params(settings.retrieval),
                               engine.lexicon.bases)
        _same_walk(index.graph_walk, built)
        assert any(s for q in QUESTIONS for s in index.graph_walk.link(q).seeds)  # the check compares something
        assert engine.lexicon.bases  # Polish names with base forms are among them
    finally:
        engine.close()


def test_a_generation_without_the_walk_files_builds_it_from_its_graph(settings: StrataSettings,
                                                                      tmp_path: Path) -> None:
    from strata.engine import Engine

    current = _published(settings, tmp_path)
    engine = Engine(settings)
    try:
        stored = engine.index.graph_walk
        hits = [h.chunk_id for h in engine.index.search(QUESTION, 3, graph_weight=1.0)]
    finally:
        engine.close()
    manifest = json.loads(current.manifest_path.read_text())
    for name in (WALK_ARRAYS, WALK_META):  # as an older version published it
        (current.index_dir / name).unlink()
        del manifest["files"][f"index/{name}"]
    current.manifest_path.write_text(json.dumps(manifest))
    engine = Engine(settings)
    try:
        assert engine.index.graph_walk.lexicon is not engine.lexicon  # built from graph.json
        _same_walk(engine.index.graph_walk, stored)
        assert [h.chunk_id for h in engine.index.search(QUESTION, 3, graph_weight=1.0)] == hits
    finally:
        engine.close()


def test_a_walk_of_other_rows_edge_weights_or_name_keys_is_not_served(settings: StrataSettings, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from retrieval import lexicon as lexicon_module
    from strata.engine import Engine
    from strata.generations import read_graph

    current = _published(settings, tmp_path)
    params = walk_params(settings.retrieval)
    rows = json.loads((current.index_dir / WALK_META).read_text())["rows"]
    lexicon = EntityLexicon.load(current.lexicon_path)
    meta = walk_meta(current.index_dir, rows, params)
    assert meta is not None and "lexicon" not in meta  # it links with the generation's: they agree here
    assert load_walk(current.index_dir, meta, params, lexicon).lexicon is lexicon
    with pytest.raises(ValueError, match=f"{WALK_META} is for {rows} chunk rows, the index holds {rows + 1}"):
        walk_meta(current.index_dir, rows + 1, params)
    # The names' last parts naming no entity: refused with the file named, not a failure at the first question.
    good = (current.index_dir / WALK_META).read_text()
    for parts in ({"x": 0}, {"x": [0.5]}, {"x": ["0"]}, {"x": [10 ** 6]}, None):
        bad = json.loads(good)
        bad["parts"] = parts
        (current.index_dir / WALK_META).write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=WALK_META):
            walk_meta(current.index_dir, rows, params)
    (current.index_dir / WALK_META).write_text(good)
    # Built with another relation weight: None, and the loader builds it from the graph instead.
    assert walk_meta(current.index_dir, rows, replace(params, relation_weight=params.relation_weight * 2)) is None
    # Keys made by other code (another KEYS_VERSION, Unicode data or Polish dictionary): the names are read again.
    monkeypatch.setattr(lexicon_module, "KEYS_VERSION", lexicon_module.KEYS_VERSION + 1)
    assert walk_meta(current.index_dir, rows, params) is None
    again = EntityLexicon.load(current.lexicon_path)
    assert again.by_key == lexicon.by_key  # keyed again by the code that runs (the same here)
    engine = Engine(settings)
    try:
        assert engine.index.graph_walk.lexicon is not engine.lexicon  # built from graph.json
    finally:
        engine.close()
    # A walk whose own lexicon differs from the generation's saves it and links with it.
    graph = read_graph(current.root)
    engine = Engine(settings)
    try:
        walk = walk_for_index(graph, engine.index, params, engine.lexicon.bases)
    finally:
        engine.close()
    other = tmp_path / "other"
    other.mkdir()
    smaller = EntityLexicon(lexicon.entities[:2], lexicon.total_chunks)
    save_walk(walk, other, smaller)
    meta = walk_meta(other, rows, params)
    assert meta is not None and "lexicon" in meta
    assert load_walk(other, meta, params, smaller).lexicon.by_key == walk.lexicon.by_key


def test_a_lexicon_saved_with_its_keys_reads_as_one_keyed_again(tmp_path: Path) -> None:
    entities = [KnownEntity("Maria Skłodowska-Curie", "person", 3, ""),
                KnownEntity("Ratuszu w Poznaniu", "place", 2, "Ratusz w Poznań"),
                KnownEntity("香港大学", "organization", 4), KnownEntity("US", "place", 9),
                KnownEntity("node_exporter", "identifier", 5), KnownEntity("Node Exporter", "name", 2)]
    lexicon = EntityLexicon(entities, 40)
    lexicon.save(tmp_path / "entities.json")
    loaded = EntityLexicon.load(tmp_path / "entities.json")
    assert loaded.by_key == lexicon.by_key and loaded.entities == lexicon.entities
    assert loaded.bases == lexicon.bases == {"Ratuszu w Poznaniu": "Ratusz w Poznań"}
    assert loaded.max_words == lexicon.max_words and loaded.total_chunks == 40
    for q in ["Gdzie jest Ratusz w Poznań?", "香港大学在哪里？", "What is node-exporter?",
              "Who was Maria Skłodowska-Curie?"]:
        assert loaded.find_spans(q) == lexicon.find_spans(q) != [], q
    # A lexicon an older version saved (its entities without keys) is keyed when read.
    data = json.loads((tmp_path / "entities.json").read_text())
    old = {"total_chunks": data["total_chunks"], "entities": data["entities"]}
    assert EntityLexicon.from_json(old).by_key == lexicon.by_key
