"""Offline extractive reports and answers: whole sentences quoted exactly, chosen for the question."""

from __future__ import annotations

from pathlib import Path

import pytest

from communities.context import GraphIndex
from communities.reports import ExtractiveReportWriter, write_reports
from communities.sentences import lexrank, mmr, normalized, whole_sentences
from communities.titles import made_of_words
from core.text.junk import FUNCTION_WORDS
from core.records import Chunk, Community, Finding, GraphSnapshot, Report
from core.settings import CommunitySettings, RetrievalSettings
from core.store.codec import findings_from_json, findings_to_json
from extraction.offline import OfflineExtractor
from extraction.resolution import resolve
from core.settings import ExtractionSettings
from answers.answer import local_answer
from answers.global_answer import global_answer
from retrieval.index import ChunkIndex
from routing.router import RouteDecision, forced

import numpy as np

DOCS = {
    "ops": ("The billing-service returned HTTP 504 when PostgreSQL ran out of connections. "
            "Priya Raman raised db.pool.size on the billing-service, and the timeouts stopped. "
            "The billing-service now retries failed invoices with backoff.\n\n"
            "Marco Lindqvist moved the search-api cache to Redis. The search-api falls back to Elasticsearch "
            "when Redis is unreachable. Marco Lindqvist set cache.ttl_seconds to 300 for the search-api."),
    "tale": ("Ebenezer Scrooge counted coins in his cold office, and Bob Cratchit shivered at his desk. "
             "Scrooge refused to give Bob Cratchit more coal for the fire. "
             "On Christmas morning Scrooge laughed, bought a turkey, and raised Bob Cratchit's salary.\n\n"
             "Tiny Tim sat beside Bob Cratchit at the small dinner table. Tiny Tim blessed everyone at the table, "
             "and Bob Cratchit smiled at his son."),
}


def _chunks() -> list[Chunk]:
    out = []
    for doc, text in DOCS.items():
        out.append(Chunk(f"{doc}#0000", doc, 0, text, 0, len(text), len(text.split()), doc, doc))
    return out


@pytest.fixture(scope="module")
def built() -> tuple[ChunkIndex, list[Report]]:
    chunks = _chunks()
    entities, relations = resolve(OfflineExtractor(ExtractionSettings()).extract(chunks).extractions)
    snap = GraphSnapshot(tuple(entities), tuple(relations))
    by_doc: dict[str, list[str]] = {}
    for e in entities:
        by_doc.setdefault(e.chunk_ids[0].split("#")[0], []).append(e.id)
    comms = [Community(f"c_{d}", 0, None, tuple(sorted(ids))) for d, ids in sorted(by_doc.items())]
    settings = CommunitySettings(report_max_findings=3)
    reports, _ = write_reports(comms, snap, ExtractiveReportWriter(settings, {c.id: c for c in chunks}), settings,
                               chunk_hashes={c.id: c.content_hash for c in chunks})
    index = ChunkIndex(RetrievalSettings(embedder="none"))
    index.add(chunks)
    return index, reports


def test_whole_sentences_drop_cut_ends_and_join_dialogue_tags() -> None:
    text = "ing the end of a cut sentence. “Spirit!” said Scrooge, “show me no more.” He wept. And then the"
    spans = whole_sentences(text, at_document_start=False)
    quoted = [text[s:e] for s, e in spans]
    assert quoted == ["“Spirit!” said Scrooge, “show me no more.”"]  # "He wept." has under four words
    first = whole_sentences("Alpha beta gamma delta. Epsilon zeta eta theta iota", at_document_start=True)
    assert [(s, e) for s, e in first] == [(0, 23)]


def test_lexrank_prefers_the_sentence_similar_to_the_others_and_mmr_skips_repeats() -> None:
    sim = np.array([[1, .9, .8, 0], [.9, 1, .1, 0], [.8, .1, 1, 0], [0, 0, 0, 1]], float)
    assert int(np.argmax(lexrank(sim))) == 0
    assert mmr([1.0, 0.99, 0.5, 0.4], np.array([[1, .99, 0, 0], [.99, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], float),
               2, lam=0.5) == [0, 2]


def test_reports_quote_whole_sentences_with_offsets_and_titles_that_are_not_name_lists(built) -> None:
    index, reports = built
    texts = {c.id: c.text for c in _chunks()}
    for r in reports:
        assert r.findings and all(f.quoted for f in r.findings)
        for f in r.findings:
            assert texts[f.chunk_ids[0]][f.start:f.end] == f.text
            assert f.text.rstrip("”\"'").endswith((".", "!", "?"))
        # A title says what links the community's main entities, in words (not "X: a, b and c" keywords).
        assert made_of_words(r.title) and ":" not in r.title
        assert any(w.islower() and w not in FUNCTION_WORDS for w in r.title.split())  # a verb or a noun, not names only
    assert len({r.title for r in reports}) == len(reports)
    assert findings_from_json(findings_to_json(reports[0].findings)) == reports[0].findings


def test_global_answers_differ_by_question_and_quote_exactly(built) -> None:
    index, reports = built
    ops = global_answer("Which problems did the services have with timeouts and connections?", forced("global"),
                        reports, index, None, 8, 3)
    tale = global_answer("How does Scrooge treat Bob Cratchit?", forced("global"), reports, index, None, 8, 3)
    assert ops.covered and tale.covered
    assert {p.text for p in ops.points} != {p.text for p in tale.points}
    assert any("HTTP 504" in p.text for p in ops.points)
    assert any("Scrooge" in p.text for p in tale.points)
    for answer in (ops, tale):
        for p in answer.points:
            row = index.rows[index.by_id[p.chunk_id]]
            assert row.text[p.start:p.end] == p.text and normalized(p.text) in answer.text
        assert p.title in answer.text


def test_a_quoted_sentence_wrapped_across_lines_reads_as_one_line_of_the_answer() -> None:
    text = ("The billing-service is sensitive to\nPostgreSQL latency, whether through connection limits or slow\n"
            "queries. Priya Raman raised db.pool.size on the billing-service after the PostgreSQL timeouts.")
    chunk = Chunk("wrap#0000", "wrap", 0, text, 0, len(text), len(text.split()), "wrap", "wrap")
    entities, relations = resolve(OfflineExtractor(ExtractionSettings()).extract([chunk]).extractions)
    settings = CommunitySettings(report_max_findings=3)
    community = Community("c_wrap", 0, None, tuple(sorted(e.id for e in entities)))
    reports, _ = write_reports([community], GraphSnapshot(tuple(entities), tuple(relations)),
                               ExtractiveReportWriter(settings, {chunk.id: chunk}), settings,
                               chunk_hashes={chunk.id: chunk.content_hash})
    index = ChunkIndex(RetrievalSettings(embedder="none"))
    index.add([chunk])
    answer = global_answer("How sensitive is the billing-service to PostgreSQL latency?", forced("global"),
                           reports, index, None, 8, 3)
    wrapped = [p for p in answer.points if "\n" in p.text]
    assert wrapped, [p.text for p in answer.points]  # the quote itself keeps the text as written
    for p in wrapped:
        assert f"- {normalized(p.text)} [" in answer.text  # shown on one line
    assert all(line.startswith("- ") or "(report " in line or line.startswith("Across the corpus") or not line
               for line in answer.text.splitlines())


def test_global_answer_says_plainly_when_the_corpus_does_not_cover_the_question(built) -> None:
    """Forced global, with the router's reading kept: a specific question whose words the corpus never uses is
    declined, naming them; questions that read as about the collection as a whole are answered whatever they
    call it ("these notes", "the files"): no list of framing words decides it."""
    from routing.router import Router

    index, reports = built
    router = Router.for_index(index, None)

    def ask(question: str):  # type: ignore[no-untyped-def]
        return global_answer(question, forced("global", router.route(question)), reports, index, None, 8, 3)

    answer = ask("What is the recipe for chocolate cake?")
    assert not answer.covered and not answer.points and "does not seem to cover" in answer.text
    assert "'chocolate'" in answer.text
    for question in ("What are the main themes across the corpus?", "What are the recurring problems across these notes?",
                     "Summarize what the files say.", "What do the records and logs collectively show?"):
        answer = ask(question)
        assert answer.covered and answer.points, question


def test_local_answer_quotes_whole_sentences_with_their_chunk(built) -> None:
    index, _ = built
    answer = local_answer("Who raised db.pool.size?", forced("local"), index, 4, 2)
    assert answer.points[0].text == "Priya Raman raised db.pool.size on the billing-service, and the timeouts stopped."
    assert "[ops#0000]" in answer.text.splitlines()[0]
    for p in answer.points:
        assert index.rows[index.by_id[p.chunk_id]].text[p.start:p.end] == p.text


def test_a_finding_without_offsets_is_not_a_quote() -> None:
    f = Finding("written by a model", ("a#0000",))
    assert not f.quoted and findings_from_json(findings_to_json((f,))) == (f,)
    Report("c", 0, "t", "s", (f,), 1.0, "fp", "llm", "m", "now")  # the record still takes written findings


def test_a_local_answer_declines_a_question_the_corpus_does_not_cover(built) -> None:
    """A local question about what the corpus never speaks of is declined, not given the least unrelated
    sentences; one with a word or two the corpus lacks is still answered."""
    index, _ = built
    off = local_answer("What is the recipe for chocolate cake?", forced("local"), index, 4, 2)
    assert not off.covered and not off.points, off.text
    near = local_answer("Who raised the pool size on the billing-service yesterday?", forced("local"), index, 4, 2)
    assert near.covered and near.points and "Priya Raman" in near.text


def test_the_answer_embeds_the_question_as_the_dense_search_does() -> None:
    """A model with query and passage prefixes (E5) embeds a question as a query: the answer's closeness checks
    use that vector, the one the dense search ranked with, not the passage embedding of the question."""
    from answers.answer import query_vector as _query_vector
    from retrieval.embed import HashingEmbedder

    class Prefixed(HashingEmbedder):
        def __init__(self, dim: int) -> None:
            super().__init__(dim)
            self.semantic = True

        def embed_queries(self, texts):  # type: ignore[no-untyped-def]
            return self.embed([f"query: {t}" for t in texts])

    chunks = [Chunk(f"d{i}#0", f"d{i}", 0, text, 0, len(text), 4, f"d{i}.md", f"h{i}")
              for i, text in enumerate(["billing service timeouts", "the ledger sync job"])]
    index = ChunkIndex(RetrievalSettings(), embedder=Prefixed(64))
    index.add(chunks)
    got = _query_vector(index, "which job syncs the ledger", None)
    assert np.allclose(got, index.embedder.embed(["query: which job syncs the ledger"])[0])
    assert not np.allclose(got, index.embedder.embed(["which job syncs the ledger"])[0])


def test_an_answer_about_the_whole_names_the_corpus_sections_by_their_share(built) -> None:
    """A question about the whole names the top folders, largest share of the text first (ties by name), each
    with its largest pages by title (a file name where a page has none); a corpus in one folder has none."""
    from dataclasses import replace

    from answers.sections import corpus_sections, describe_sections

    index, reports = built
    whole = replace(forced("global"), global_score=0.99)  # read as about the whole, naming nothing
    flat = global_answer("What are the main topics?", whole, reports, index, None, 8, 3)
    assert flat.covered and flat.points and "sections" not in flat.text

    pages = [("reference/cli.md", None, 4), ("reference/api.md", "API", 1), ("guide/install.md", "Installing", 3),
             ("guide/config.md", "Configuration", 2), ("index.md", "Home", 1)]
    chunks = []
    for path, title, n in pages:
        meta = {"path": path, **({"title": title} if title else {})}
        for i in range(n):
            text = f"Page {path} part {i} says how the billing-service retries invoices."
            chunks.append(Chunk(f"{path}#{i:04d}", path, i, text, 0, len(text), 9, path, f"h{path}{i}", meta))
    folders = ChunkIndex(RetrievalSettings(embedder="none"))
    folders.add(chunks)
    sections = corpus_sections(folders)
    assert [(s.name, round(s.share, 2), s.pages) for s in sections] == [
        ("guide", 0.45, ("Installing", "Configuration")), ("reference", 0.45, ("cli", "API")), ("", 0.09, ("Home",))]
    assert describe_sections(sections, "What are the main topics?") == (
        "The corpus's sections, by their share of its text: guide (45%: Installing, Configuration); reference (45%: "
        "cli, API); the top-level pages (9%: Home).")
    # in the question's language (Traditional characters as the question writes them)
    assert describe_sections(sections, "这些文件主要涵盖哪些主题？") == (
        "语料的各个部分，按所占文本比例：guide（45%：Installing、Configuration）；reference（45%：cli、API）；顶层页面（9%：Home）。")
    assert describe_sections(sections, "這些文件主要涵蓋哪些主題？").startswith("語料的各個部分")
    assert describe_sections(sections, "Jakie są główne tematy tych dokumentów?") == (
        "Części korpusu według udziału w tekście: guide (45%: Installing, Configuration); reference (45%: cli, API); "
        "strony najwyższego poziomu (9%: Home).")

    # The reports' own chunks, filed in two folders: the answer opens with them, then the communities' points.
    filed = ChunkIndex(RetrievalSettings(embedder="none"))
    filed.add([replace(c, metadata={"path": f"{'runbooks' if c.document_id == 'ops' else 'stories'}/{c.document_id}.md"})
               for c in _chunks()])
    answer = global_answer("What are the main topics?", whole, reports, filed, None, 8, 3)
    assert answer.text.startswith("The corpus's sections, by their share of its text: runbooks (50%: ops); "
                                  "stories (50%: tale).\n\nAcross the corpus") and answer.points


def test_a_chinese_global_answer_gives_the_corpus_words_alone() -> None:
    """Asked in Chinese, the offline global answer has no English sentence of its own: report titles joined in the
    corpus's language, quotes, and the citation marks ([chunk id], (report id)) a reader and the console follow."""
    import re

    texts = ["调度器负责把任务分配给工作节点。调度器每五分钟运行一次。", "工作节点每秒发送心跳。心跳中断后工作节点被标记为离线。"]
    chunks = [Chunk(f"z{i}#0000", f"z{i}", 0, t, 0, len(t), len(t), f"z{i}", f"z{i}h") for i, t in enumerate(texts)]
    entities, relations = resolve(OfflineExtractor(ExtractionSettings()).extract(chunks).extractions)
    settings = CommunitySettings(report_max_findings=3)
    community = Community("c_zh", 0, None, tuple(sorted(e.id for e in entities)))
    reports, _ = write_reports([community], GraphSnapshot(tuple(entities), tuple(relations)),
                               ExtractiveReportWriter(settings, {c.id: c for c in chunks}), settings,
                               chunk_hashes={c.id: c.content_hash for c in chunks})
    index = ChunkIndex(RetrievalSettings(embedder="none"))
    index.add(chunks)
    read = RouteDecision("global", (), 0.1, 0.9)  # as the router reads it: about the corpus as a whole
    answer = global_answer("调度器和工作节点之间是什么关系？", forced("global", read), reports, index, None, 8, 3)
    assert answer.points, answer.text
    bare = re.sub(r"\[[^\[\]]+\]|\(report [^()]+\)", "", answer.text)
    assert not re.search(r"[A-Za-z]", bare), answer.text
    english = global_answer("How does the component called 调度器 relate to the others in these notes?",
                            forced("global", read), reports, index, None, 8, 3)
    assert english.text.startswith("Across the corpus"), english.text
    # Read as a question about specific things, its words the two passages never use decline it, and say which
    # (the bigrams that straddle two of its words, 么关 of 什么 + 关系, are none of them).
    declined = global_answer("调度器和工作节点之间是什么关系？", forced("global"), reports, index, None, 8, 3)
    assert not declined.covered and "\u201c什么\u201d" in declined.text and "么关" not in declined.text, declined.text
    assert not re.search(r"[A-Za-z]", declined.text), declined.text  # and says so in Chinese


def test_a_polish_question_the_corpus_covers_is_not_declined_and_english_asked_of_chinese_names_is_english() -> None:
    """The question's words are tokenized in the question's language (Polish lemmas), not each word alone (which
    reads as no language and gets English stems); a short English question quoting a Chinese name is English."""
    from answers.global_answer import coverage
    from answers.messages import answer_language

    texts = ["Raport o awariach opisuje wnioski zespołu po przerwie w dostawie prądu.",
             "Zespół przygotował raport o awariach serwerów i wnioski na przyszłość.",
             "W tym roku nie było awarii w sieci w Krakowie.", "Wnioski z raportu trafiły do zarządu firmy."]
    chunks = [Chunk(f"p{i}#0000", f"p{i}", 0, t, 0, len(t), len(t.split()), f"p{i}", f"p{i}h") for i, t in enumerate(texts)]
    index = ChunkIndex(RetrievalSettings(embedder="none"))
    index.add(chunks)
    cover = coverage("Jakie są najważniejsze wnioski z raportów o awariach?", index, lambda: None, forced("global"))
    assert cover.covered, cover
    assert answer_language("What does 调度器 do?") == answer_language("Main topics?") == "en"
    assert answer_language("这些文件主要涵盖哪些主题？") == "zh" and answer_language("Jakie są tematy tych notatek?") == "pl"


def test_an_answer_about_the_whole_quotes_a_communitys_guide_before_its_changelog_and_keeps_a_changelog_community() -> None:
    """A question about the whole weighs each quoted point by its page's kind over the best kind among its
    community's points: a community quotes its guide's sentence before its changelog's line (unless the weights
    count changelogs as any page), and a community of changelog lines alone still answers (which communities
    answer was weighed by kind before: strata.topics)."""
    from dataclasses import replace

    texts = {"log#0000": "Version 2 fixed the retry loop of the billing-service. Version 3 dropped Python 3.8.",
             "guide#0000": "The billing-service retries failed invoices with backoff. It stops after five tries.",
             "news#0000": "Version 4 added dark mode. Version 5 added exports."}
    kinds = {"log#0000": "changelog", "guide#0000": "guide", "news#0000": "changelog"}
    index = ChunkIndex(RetrievalSettings(embedder="none"))
    index.add([Chunk(cid, cid.split("#")[0], 0, t, 0, len(t), len(t.split()), cid, cid, {"kind": kinds[cid]})
               for cid, t in texts.items()])

    def finding(cid: str, n: int) -> Finding:
        text = texts[cid]
        start = 0 if n == 0 else text.index(". ") + 2
        end = text.index(".", start) + 1
        return Finding(text[start:end], (cid,), start, end)

    mixed = Report("c_mixed", 0, "Billing retries", "", (finding("log#0000", 0), finding("guide#0000", 0)), 0.0, "",
                   "offline", "extractive", "")
    news = Report("c_news", 0, "Releases", "", (finding("news#0000", 0), finding("news#0000", 1)), 0.0, "",
                  "offline", "extractive", "")
    whole = replace(forced("global"), global_score=0.99)

    def ask(weights: dict[str, float] | None) -> tuple[list[str], set[str]]:
        answer = global_answer("What are the main topics?", whole, [mixed, news], index, None, 8, 4,
                               kind_weights=weights)
        return ([q.chunk_id for q in answer.points if q.title == "Billing retries"],
                {q.title for q in answer.points})

    order, titles = ask(None)
    assert order[0] == "guide#0000" and titles == {"Billing retries", "Releases"}, (order, titles)
    order, _ = ask({"changelog": 1.0})
    assert order[0] == "log#0000", order  # the report's first finding, as any page


def test_an_answer_about_the_whole_puts_a_community_of_changelog_lines_after_one_of_guides(built) -> None:
    """A report's breadth counts at the mean kind of its points' pages: the broader community, all changelog,
    comes after the other by default, and first when changelogs count as any page."""
    from dataclasses import replace

    index, reports = built
    whole = replace(forced("global"), global_score=0.99)
    kinds = ChunkIndex(RetrievalSettings(embedder="none"))
    kinds.add([replace(c, metadata={"kind": "changelog" if c.document_id == "ops" else "guide"}) for c in _chunks()])

    def first(weights: dict[str, float] | None) -> str:
        answer = global_answer("What are the main topics?", whole, reports, kinds, None, 8, 3, kind_weights=weights)
        return answer.points[0].chunk_id.split("#")[0]

    plain = global_answer("What are the main topics?", whole, reports, index, None, 8, 3)
    assert plain.points[0].chunk_id.split("#")[0] == "ops"  # the broadest, with no kinds
    assert first({"changelog": 1.0}) == "ops"
    assert first(None) == "tale"
