"""What a local answer quotes, beyond single passages: one MMR for every selection (a start set and a
near-duplicate cutoff), sentences not cut at abbreviations, link-only lines that are no answer, the second hop
read in the passage the chain leads to, and a question about the whole corpus answered by its broadest
communities."""

from __future__ import annotations

import numpy as np

from communities.sentences import mmr, whole_sentences
from core.records import Chunk
from core.settings import RetrievalSettings
from core.records import chunk_id
from answers.units import answer_units, link_only
from retrieval.index import ChunkIndex


def _chunk(doc: str, text: str) -> Chunk:
    return Chunk(chunk_id(doc, 0), doc, 0, text, 0, len(text), len(text.split()), doc, f"{doc}-0")


def _index(chunks: list[Chunk]) -> ChunkIndex:
    index = ChunkIndex(RetrievalSettings(embedder="hashing"))  # type: ignore[arg-type]
    index.add(chunks)
    return index


def test_mmr_starts_from_a_chosen_set_and_never_adds_a_near_duplicate() -> None:
    sim = np.array([[1.0, 0.97, 0.2, 0.1],
                    [0.97, 1.0, 0.2, 0.1],
                    [0.2, 0.2, 1.0, 0.3],
                    [0.1, 0.1, 0.3, 1.0]])
    scores = [0.9, 1.0, 0.5, 0.2]
    eligible = [True, True, True, False]
    # The start set is kept first, in its order, even an item that is not eligible itself.
    assert mmr(scores, sim, 3, lam=0.75, eligible=eligible, start=[3, 0], max_similarity=0.95)[:2] == [3, 0]
    # Item 1 is the best score but 0.97 like item 0: the same point again is never added.
    assert mmr(scores, sim, 3, lam=0.75, eligible=eligible, start=[0], max_similarity=0.95) == [0, 2]
    # Without the cutoff the penalty alone decides, as before.
    assert mmr(scores, sim, 3, lam=0.75, eligible=eligible, start=[0]) == [0, 1, 2]
    # At most k, start set included; an empty start is plain MMR.
    assert mmr(scores, sim, 1, start=[2, 0]) == [2]
    assert mmr(scores, sim, 2, lam=0.75, eligible=eligible) == mmr(scores, sim, 2, lam=0.75, eligible=eligible, start=())


def test_a_sentence_is_not_cut_at_an_abbreviation_followed_by_a_lower_case_word() -> None:
    text = ("In Indiana, alcohol may be sold only to those 21 years of age or older during the hours 7 a.m. to 3 a.m. "
            "Sales on Sunday were allowed in 2018.\n- first item ends here.\n- second item follows it.\nTail text.")
    quoted = [text[s:e] for s, e in whole_sentences(text, True)]
    assert quoted[0] == text[:text.index(" Sales")]  # "... during the hours 7 a.m. to 3 a.m.", one sentence
    assert "Sales on Sunday were allowed in 2018." in quoted
    assert "first item ends here." in quoted and "second item follows it." in quoted  # list items stay apart


def test_a_line_that_only_points_at_a_link_is_no_unit() -> None:
    text = ("# Pool\n\nA pool of clients to the same upstream.\n\n"
            "Implements [`Dispatcher.close([callback])`](Dispatcher.md#dispatcherclosecallback-promise).\n\n"
            "Use [Agent](Agent.md) to pool connections across many origins.\n")
    units = [u.text for u in answer_units("pool.md#0000", text, True)]
    assert not any(u.startswith("Implements") for u in units), units
    assert "Use [Agent](Agent.md) to pool connections across many origins." in units
    assert link_only("Implements [Client.closed](Client.md#clientclosed).")
    assert not link_only("李白是唐朝著名的诗人。")  # no link: not a pointer, whatever its script


def _report(cid: str, title: str, chunks: list[Chunk], members: int) -> "Report":
    import json

    from core.records import Finding, Report

    findings = []
    for c in chunks[:2]:
        end = min(i for i in (c.text.find("."), c.text.find("。")) if i >= 0) + 1  # the first sentence
        findings.append(Finding(c.text[:end], (c.id,), 0, end))
    inputs = {"entities": {f"{cid}_e{i}": "h" for i in range(members)}, "relations": {},
              "chunks": {c.id: c.content_hash for c in chunks}}
    return Report(cid, 0, title, f"{title}.", tuple(findings), 4.0, cid, "offline", "", "",
                  inputs=json.dumps(inputs))


def test_a_question_about_the_whole_corpus_is_answered_by_its_broadest_communities() -> None:
    """"What are the main topics these docs cover?" names nothing in the corpus: the page about the docs' own
    link syntax shares its words ("topics", "docs", "cover") but is a minor community; the answer leads with the
    communities that span most of the corpus. The router's reading says so (its P(global), kept when the caller
    sets the route), not a list of framing words."""
    from answers.global_answer import global_answer
    from routing.router import Router, forced

    requests = [_chunk(f"req{i}.md", f"Request number {i} is sent by the client through a dispatcher. The pool "
                                     f"keeps connections open for reuse.") for i in range(6)]
    mocks = [_chunk(f"mock{i}.md", f"A mock agent number {i} intercepts requests made in tests. Replies are defined "
                                   f"per path.") for i in range(4)]
    minor = [_chunk("links.md", "These docs cover topics with links written as main topics pages. Each link "
                                "points at a page.")]
    reports = [_report("c_links", "Link syntax", minor, 2), _report("c_req", "Client requests", requests, 30),
               _report("c_mock", "Mocking requests", mocks, 12)]
    index = ChunkIndex(RetrievalSettings(embedder="none"))
    index.add(requests + mocks + minor)
    router = Router.for_index(index, None)

    def ask(q: str):  # type: ignore[no-untyped-def]
        return global_answer(q, forced("global", router.route(q)), reports, index, None, 8, 4)

    answer = ask("What are the main topics these docs cover?")
    assert answer.covered and answer.report_ids[:2] == ("c_req", "c_mock"), answer.text
    # A question that names something is still answered by what matches it.
    named = ask("Which pages describe link syntax?")
    assert named.report_ids[0] == "c_links", named.text


def test_a_chinese_question_about_the_whole_is_not_held_by_the_concept_terms_it_frames_itself_with() -> None:
    """"這些文件的主要主題是什麼？" ("What are the main topics of these documents?") names the corpus's concept
    terms 文件 and 主題 (one minor page repeats them, and no community is titled by them): such a Chinese common
    noun names no entity, as an English question's lower-case nouns name none, so the broadest communities answer
    it. A name the index knows, or a term that titles a community, still makes the question one about it."""
    from dataclasses import replace

    from answers.global_answer import about_the_whole, global_answer
    from retrieval.lexicon import EntityLexicon, KnownEntity
    from routing.router import Router, forced

    ships = [_chunk(f"ship{i}.md", f"第{i}號貨輪從史特拉斯堡港出發，沿萊茵河運送煤炭。港口的倉庫保存貨物。") for i in range(6)]
    rice = [_chunk(f"rice{i}.md", f"稻米第{i}個品種在湖南種植，農民在夏季收割。稻穀曬乾後碾成白米。") for i in range(4)]
    minor = [_chunk("art.md", "新約聖經的主題常見於繪畫。這些主題也出現在文件與電影中，文件記載了它們的來源。")]
    reports = [_report("c_art", "新約聖經", minor, 2), _report("c_ships", "史特拉斯堡港", ships, 30),
               _report("c_rice", "稻", rice, 12)]
    index = ChunkIndex(RetrievalSettings(embedder="none"))
    index.add(ships + rice + minor)
    lexicon = EntityLexicon([KnownEntity("主題", "concept", 1), KnownEntity("文件", "concept", 1),
                             KnownEntity("史特拉斯堡港", "location", 6)], len(index))
    router = Router.for_index(index, lexicon)
    whole = router.route("這些文件的主要主題是什麼？")
    assert set(whole.entities) == set(whole.terms) == {"文件", "主題"}, whole
    assert whole.global_score >= 0.9 and about_the_whole(whole, reports)
    answer = global_answer("這些文件的主要主題是什麼？", forced("global", whole), reports, index, None, 8, 4)
    assert answer.covered and answer.report_ids[:2] == ("c_ships", "c_rice"), answer.text
    named = router.route("史特拉斯堡港的主要主題是什麼？")
    assert "史特拉斯堡港" in named.entities and "史特拉斯堡港" not in named.terms
    assert not about_the_whole(forced("global", named), reports)
    # a term that titles a community is a topic of the corpus: a question naming it is about it, however sure the
    # router is that it reads as global
    steam = replace(whole, entities=("文件", "稻"), terms=("文件", "稻"), global_score=0.97)
    assert not about_the_whole(steam, reports) and about_the_whole(steam, reports[:2])
    # A word the question spells an entity by without naming it is a term (routing.router.named_only): a topic only
    # where it leads a community's title, as a whole word in any case.
    titled = [_report("c_res", "Resolution: uv lock and PubGrub", ships, 30),
              _report("c_lock", "Locking environments: SHA and main", rice, 12)]
    english = replace(whole, entities=(), terms=("main",), global_score=0.97)
    assert about_the_whole(english, titled)  # "main" only follows the colon
    assert not about_the_whole(replace(english, terms=("resolution",)), titled)
    assert about_the_whole(replace(english, terms=("resolut",)), titled)  # a whole word, not a piece of one

def test_an_item_of_a_list_too_long_to_quote_whole_is_one_unit() -> None:
    """An options list longer than a quotable block: each option (its name, type, default and what it does) is
    one unit, not a name line and a sentence that no longer says which option it is about."""
    items = [f"* **option{i}** `number` (optional) - Default: `{i}`. Sets how many things number {i} may hold at "
             f"once before the client waits for a free slot." for i in range(14)]
    items.insert(7, "* **allowH2**: `boolean` - Default: `false`. Enables support for H2 if the server has assigned "
                    "bigger priority to it through ALPN negotiation.")
    text = "# Client\n\n## Parameter: `ClientOptions`\n\n" + "\n".join(items) + "\n\nThat is all.\n"
    units = answer_units("client.md#0000", text, True)
    h2 = [u for u in units if "allowH2" in u.text]
    assert len(h2) == 1 and h2[0].text.endswith("through ALPN negotiation."), [u.text for u in units]
    assert h2[0].text.startswith("**allowH2**") and h2[0].heading == "Parameter: `ClientOptions`"
    assert not any(u.text.startswith("Enables support") for u in units)
    assert text[h2[0].start:h2[0].end] == h2[0].text


def test_a_chunk_that_cuts_code_blocks_at_both_ends_holds_no_fake_block_between_them() -> None:
    """The window opens inside one code block and ends inside the next: the closing fence at the start and the
    opening fence at the end are not one block around the heading and sentence between them."""
    text = ("  retry: true\n})\n```\n\n### `Dispatcher.compose(interceptors)`\n\nCompose a new dispatcher from the "
            "current dispatcher and the given interceptors.\n\n```js\nconst { Client } = require('undici')\n")
    units = answer_units("d.md#0029", text, at_document_start=False)
    assert not any(u.kind == "code" or "```" in u.text for u in units), units


def test_a_what_is_question_quotes_the_definition_on_the_page_titled_by_the_term() -> None:
    """"What is a Dispatcher?": pages that name the Dispatcher in passing (and many times) rank above its own
    page; the answer is the sentence whose subject is the term, on the page titled by it, not a link line."""
    from answers.answer import local_answer
    from routing.router import forced

    others = [_chunk(f"docs/{name}.md", f"# {name}\n\nImplements [`Dispatcher.dispatch()`](Dispatcher.md#dispatch).\n\n"
                                        f"The {name} dispatcher hands each request to a Dispatcher; a Dispatcher "
                                        f"dispatcher pair forwards it to the next Dispatcher.\n")
              for name in ("Pool", "Agent", "Client", "BalancedPool", "ProxyAgent", "RetryAgent")]
    page = _chunk("docs/Dispatcher.md", "# Dispatcher\n\nExtends: `events.EventEmitter`\n\nDispatcher is the core API "
                                        "used to dispatch requests.\n\nRequests are not guaranteed to be dispatched "
                                        "in order of invocation.\n\n## Instance Methods\n\nThere are several methods "
                                        "described below, each with examples and options.\n")
    index = _index(others + [page])
    answer = local_answer("What is a Dispatcher?", forced("local"), index, 4, 2)
    assert answer.points and answer.points[0].text == "Dispatcher is the core API used to dispatch requests.", answer.text
    assert not any(p.text.startswith("Implements") for p in answer.points)


def test_a_report_finding_quoted_with_its_documents_title_line_is_quoted_without_it() -> None:
    """A report written before sentences left out a document's title line (its metadata title) quotes "Lower
    Saxony\\nLower Saxony is a state..." as one sentence: the global answer quotes the sentence alone, still the
    source text at its offsets."""
    from dataclasses import replace

    from answers.global_answer import map_reports
    from core.records import Finding, Report

    text = "Lower Saxony\nLower Saxony is a state in northwestern Germany. Its capital is Hanover on the Leine."
    chunk = replace(_chunk("saxony.md", text), metadata={"title": "Lower Saxony"})
    glued = text.index(".") + 1
    report = Report("c_saxony", 0, "Lower Saxony", "Lower Saxony.", (Finding(text[:glued], (chunk.id,), 0, glued),),
                    4.0, "c_saxony", "offline", "", "")
    index = _index([chunk])
    points = map_reports("Which state is Lower Saxony?", [report], index.tokenizer, 4, index=index)
    quoted = [p for p in points if p.text.endswith("northwestern Germany.")]
    assert [p.text for p in quoted] == ["Lower Saxony is a state in northwestern Germany."]
    assert text[quoted[0].start:quoted[0].end] == quoted[0].text
