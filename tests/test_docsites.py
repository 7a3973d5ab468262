"""Docs sites read as documents: clean text from generator Markdown, whole chunks with heading paths, document kinds,
names judged by the corpus's own words, titles led by pages, whole-corpus answers weighted by page kind, and the
drift page's table sorted and paged. The pages here imitate MkDocs Material's markup; they are written for the test."""

from __future__ import annotations

from pathlib import Path

from core.records import Document, Report
from core.settings import ChunkingSettings
from extraction.chunking import chunk_document
from core.text.junk import junk_reason
from extraction.kinds import kind_of
from extraction.loader import load_folder
from extraction.markdown_text import normalize_markdown
from core.text.names import find_entities
from extraction.wordlike import WordModel

PAGE = '''---
title: Wildcards
---

# Wildcard certificates { #wildcards .big }

-----

A <dfn title="a certificate for many names">wildcard certificate</dfn> covers every subdomain. Press <kbd>Ctrl</kbd>
to copy. The value must be `g`reater than the <abbr title="time to live">TTL</abbr> of the record[^1].
<!-- a note for writers -->

!!! note "Renewal order"
    Certificates renew before they expire.

!!! tip
    Keep the key safe.

=== "pyproject.toml"

    ```toml
    [tool.example]
    key = "value"
    ```

=== "example.toml"

    ```toml
    key = "value"
    ```

- [x] done item
{ .annotate }

- **`locale`**{ #page-locale }: The locale used.

> Old style:
>
> ```python
> print("hi")
> ```

| Option | Meaning |
| --- | --- |
| `ttl` | how long |

[^1]: Records are cached.
'''

CHANGELOG = '''# Release notes

## 1.2.0 - 2026-01-05

- Add the `wild` option.
- Fix renewal of expired certificates.

## 1.1.0 - 2025-12-01

- Add support for AC/DC power supplies.
- Fix the I/O timeout.
'''


def test_generator_markdown_becomes_clean_text() -> None:
    text = normalize_markdown(PAGE.split("---\n", 2)[2]).text
    assert text.startswith("# Wildcard certificates\n")
    for leak in ("{ #", "{:", "{ .", "<dfn", "</", "<kbd", "<!--", "!!!", "===", "-----", "[^1]", "[x]"):
        assert leak not in text, leak
    assert "A wildcard certificate covers every subdomain. Press Ctrl to copy." in text
    assert "must be greater than the TTL of the record." in text  # a code span inside a word is part of it
    assert "- `locale`: The locale used." in text  # an attribute list after emphasis goes
    assert '> Old style:\n>\n```python\nprint("hi")\n```' in text  # code in a quote is code where a line opens
    assert "Renewal order" in text and "Certificates renew before they expire." in text
    assert "\nNote\n" not in text and "\nTip\n" not in text  # a bare admonition's type is not the writer's words
    assert "pyproject.toml\n\n```toml\n[tool.example]\nkey = \"value\"\n```" in text  # a tab: its label, its code
    assert "| `ttl` | how long |" in text and "- done item" in text and "Records are cached." in text


def test_hugo_shortcodes_leave_their_text_and_links_their_words() -> None:
    """Hugo's shortcodes: a line of them alone leaves nothing, one giving a link its target leaves the link's
    text, any other inline one leaves nothing; inside fenced code they are code."""
    page = """# Groups

See [Dependency groups]({{< relref "managing-dependencies#dependency-groups" >}}) and the
[Introduction]({{< relref "docs" >}} "Introduction"), or ask on [Discord].

{{% note %}}
Poetry {{< param version >}} reads groups; write `{{< ref "x" >}}` to link a page.
{{% /note %}}

{{< tabs tabTotal="2" >}}
{{< tab tabID="a" >}}
Install it.
{{< /tab >}}
{{< /tabs >}}

```toml
x = "{{< kept >}}"
```

  [FAQ]: {{< relref "faq" >}}
  [Discord]: https://discord.example
"""
    text = normalize_markdown(page).text
    assert "See Dependency groups and the Introduction, or ask on Discord." in text, text
    assert "Poetry reads groups; write `{{< ref \"x\" >}}` to link a page." in text and "[" not in text, text
    assert "Install it." in text and 'x = "{{< kept >}}"' in text
    assert "{{" not in text.replace('"{{< kept >}}"', "").replace('`{{< ref "x" >}}`', ""), text


def test_references_resolved_elsewhere_and_generic_blocks_read_as_text() -> None:
    page = """# Fields

Pydantic raises a [`ValidationError`][pydantic_core.ValidationError]. Only [`list`][] instances are valid in
strict mode; see [the guide][guide]. Code keeps its brackets: `x[a][b]`, and so does an index, m[0][1] or
grid[row][col].

/// version-changed | v2
A field annotated as [`Any`][typing.Any] has no default.
///

/// admonition | Mutable defaults
    type: warning

Defaults are copied for each instance.
///

```python
value = table[row][column]
```

<figure markdown="span">
  ![A diagram](img/flow.png){ width="500" }
  <figcaption>The [validation](validation.md) flow</figcaption>
</figure>

[guide]: https://example.org/guide
"""
    text = normalize_markdown(page).text
    assert "Pydantic raises a `ValidationError`. Only `list` instances are valid in strict mode; see the guide." in text
    assert "`x[a][b]`" in text and "m[0][1] or grid[row][col]." in text and "value = table[row][column]" in text
    assert "][" not in text.replace("x[a][b]", "").replace("m[0][1]", "").replace("table[row][column]", "").replace(
        "grid[row][col]", "")
    assert "///" not in text and "type: warning" not in text
    assert "\nMutable defaults\n\nDefaults are copied for each instance." in text  # the block's title stays
    assert "\nA field annotated as `Any` has no default." in text
    tabbed = normalize_markdown('=== "Python"\n\n    /// note | Careful\n    Body text.\n    ///\n').text
    assert "Careful" in tabbed and "/" not in tabbed  # a block inside a content tab, whose body is dedented
    assert "The validation flow" in text and "![" not in text and "width=" not in text  # Markdown inside HTML


def test_markdown_inside_html_only_where_marked_and_blocks_in_their_container() -> None:
    page = """Intro.

<div>
Use the &lt;T&gt; parameter 2*3*4 times.
</div>

- An item

    /// note | Careful
    Body text here.
    ///

```
```python
```

请参阅[`BaseModel`][pydantic.BaseModel]了解详情。 See [`list`][] too.
"""
    text = normalize_markdown(page).text
    assert "Use the <T> parameter 2*3*4 times." in text  # an unmarked HTML block is text as written
    assert "Body text here." in text and "```\nBody text here." not in text  # the block stays in its list item
    assert "请参阅`BaseModel`了解详情。 See `list` too." in text  # after a fence with an info string closes nothing
    assert "][" not in text


def test_the_loader_reads_markdown_pages_clean_and_records_their_kind(tmp_path: Path) -> None:
    (tmp_path / "wild.md").write_text(PAGE, encoding="utf-8")
    (tmp_path / "changes.md").write_text(CHANGELOG, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("Plain <b>text</b> stays as written.\n", encoding="utf-8")
    docs = {d.id: d for d in load_folder(tmp_path).documents}
    assert "{ #" not in docs["wild.md"].text and docs["wild.md"].metadata["kind"] == "guide"
    assert docs["changes.md"].metadata["kind"] == "changelog"
    assert "kind" not in docs["notes.txt"].metadata and "<b>" in docs["notes.txt"].text


def test_pages_without_a_title_of_their_own_take_the_site_navigation_title(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "docs" / "concepts").mkdir(parents=True)
    (site / "mkdocs.yml").write_text("""site_name: Example
markdown_extensions:
  - pymdownx.emoji:
      emoji_index: !!python/name:material.extensions.emoji.twemoji
extra:
  analytics: !ENV [ANALYTICS_KEY, none]
nav:
  - Get Started:
      - Welcome: ./index.md
  - Concepts:
      - Models and fields: concepts/models.md
      - Own heading: concepts/headed.md
  - Source: https://example.org/repo
""", encoding="utf-8")
    (site / "docs" / "index.md").write_text("---\ntitle: Front matter wins\n---\n\nHello there.\n", encoding="utf-8")
    (site / "docs" / "concepts" / "models.md").write_text("Models hold fields. Fields hold values.\n", encoding="utf-8")
    (site / "docs" / "concepts" / "headed.md").write_text("# A heading\n\nText under it.\n", encoding="utf-8")
    (site / "docs" / "loose.md").write_text("A page the navigation does not list.\n", encoding="utf-8")
    for root, prefix in ((site / "docs", ""), (site, "docs/")):  # the docs folder, or the project holding it
        docs = {d.id: d for d in load_folder(root).documents}
        assert docs[f"{prefix}concepts/models.md"].metadata["title"] == "Models and fields"
        assert docs[f"{prefix}index.md"].metadata["title"] == "Front matter wins"
        assert "title" not in docs[f"{prefix}concepts/headed.md"].metadata  # its own heading titles it
        assert docs[f"{prefix}loose.md"].metadata["title"] == "Loose"  # unlisted: titled by its file's name
    looped = tmp_path / "looped"
    (looped / "docs").mkdir(parents=True)
    (looped / "mkdocs.yml").write_text("nav: &a\n  - Section: *a\n  - 2024: page.md\n", encoding="utf-8")
    (looped / "docs" / "page.md").write_text("A page.\n", encoding="utf-8")
    assert load_folder(looped / "docs").documents[0].metadata["title"] == "2024"  # a YAML loop is not followed
    other = tmp_path / "other"
    other.mkdir()
    (other / "page.md").write_text("No site here.\n", encoding="utf-8")
    assert load_folder(other).documents[0].metadata["title"] == "Page"


def test_a_page_with_no_title_anywhere_is_titled_by_its_file_name_as_generators_title_it(tmp_path: Path) -> None:
    """Without a title, heading or navigation entry, a Markdown page's file name titles it (as MkDocs and a
    GitHub wiki title it): a folder of such pages then gets community titles and a sections line made of its
    pages' names instead of "Identifier entities about ...". A plain-text file keeps no title."""
    (tmp_path / "concepts").mkdir()
    (tmp_path / "concepts" / "json_schema.md").write_text("Schemas describe models.\n", encoding="utf-8")
    (tmp_path / "concepts" / "index.md").write_text("What the concepts are.\n", encoding="utf-8")
    (tmp_path / "Getting-Started.md").write_text("Install it first.\n", encoding="utf-8")
    (tmp_path / "index.md").write_text("Welcome.\n", encoding="utf-8")
    (tmp_path / "2024-05-01.md").write_text("A dated note.\n", encoding="utf-8")
    (tmp_path / "headed.md").write_text("# Its own heading\n\nText.\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("Plain notes.\n", encoding="utf-8")
    (tmp_path / "3f2a9b1c.md").write_text("A note named by a hash.\n", encoding="utf-8")
    (tmp_path / "_Sidebar.md").write_text("Links.\n", encoding="utf-8")
    (tmp_path / "upgrade-to-2.0.md").write_text("Steps to take.\n\n1. Back up.\n2. Upgrade.\n", encoding="utf-8")
    docs = {d.id: d for d in load_folder(tmp_path).documents}
    titles = {i: d.metadata.get("title") for i, d in docs.items()}
    assert titles == {"concepts/json_schema.md": "Json schema", "concepts/index.md": "Concepts",
                      "Getting-Started.md": "Getting Started", "index.md": None, "2024-05-01.md": None,
                      "headed.md": None, "notes.txt": None, "3f2a9b1c.md": None, "_Sidebar.md": None,
                      "upgrade-to-2.0.md": "Upgrade to 2.0"}
    assert docs["upgrade-to-2.0.md"].metadata["kind"] != "changelog"  # a file's name is no heading for its kind


def test_kinds_from_structure() -> None:
    assert kind_of(normalize_markdown(CHANGELOG).shape) == "changelog"
    assert kind_of(normalize_markdown("# Hatch v1.8.0\n\nWe are pleased to announce it.\n").shape) == "changelog"
    reference = "# Options\n\n" + "".join(f"## `opt{i}`\n\nSets {i}.\n\n" for i in range(5))
    assert kind_of(normalize_markdown(reference).shape) == "reference"
    glossary = "# Terms\n\n" + "".join(f"Term{i}\n:   Meaning {i}.\n\n" for i in range(6))
    assert kind_of(normalize_markdown(glossary).shape) == "glossary"
    index = "# Start\n\n" + "".join(f"- [Page {i}](p{i}.md)\n" for i in range(8))
    assert kind_of(normalize_markdown(index).shape) == "index"
    assert kind_of(normalize_markdown("# Guide\n\nRead this first. Then that.\n").shape) == "guide"
    # long release notes: each release's own sections ("Fixed", a feature it explains) sit a level below its
    # heading and outnumber the releases, and prose paragraphs describe some of them
    releases = "# Release Notes\n\n## Upgrading\n\nRun the upgrade.\n\n" + "".join(
        f"## Version 1.{i}.0 (2024-0{i}-01)\n\n### Local preview\n\nThe preview is faster.\n\n"
        f"### Themes\n\nThemes load faster.\n\n### Fixed\n\n- Fix {i}.\n- Fix {i + 1}.\n- Fix {i + 2}.\n\n"
        for i in range(1, 5))
    assert kind_of(normalize_markdown(releases).shape) == "changelog"
    # an upgrade guide's few target versions, each with its sections, are no releases
    upgrade = "# Upgrading\n\n" + "".join(
        f"## Upgrading to {v}.0\n\n### Configuration\n\n- Rename a key.\n- Drop a key.\n\n### Plugins\n\n"
        f"- Update hooks.\n\n### Themes\n\n- Move templates.\n\n" for v in (2, 3))
    assert kind_of(normalize_markdown(upgrade).shape) == "guide"
    # any level whose headings are releases counts, whichever level has more of them
    django = "# Notes\n\n" + "".join(
        f"## Django 4.{i}\n\n" + "".join(f"### Features deprecated in 4.{i}\n\n- Item.\n- Item.\n\n"
                                          f"### Section {j}\n\n- Item.\n\n" for j in range(2))
        + f"### Other\n\n- Item.\n\n" for i in range(3))
    assert kind_of(normalize_markdown(django).shape) == "changelog"
    # a title ending with a version names a release, tables of changes and all; a version followed by more words
    # is that of what the page documents
    oauth = ("# OAuth 2.0 Client Credentials\n\nThe middleware secures routes.\n\n## Options\n\n"
             "| Field | Description |\n| --- | --- |\n" + "".join(f"| `f{i}` | Sets {i}. |\n" for i in range(6)))
    assert kind_of(normalize_markdown(oauth).shape, "OAuth 2.0 Client Credentials") == "reference"
    assert kind_of(normalize_markdown(oauth).shape) == "reference"  # (the level-1 heading as its title)
    release = "# Release 2.3.0\n\nWhat changed.\n\n" + "".join(f"- Fix {i}.\n" for i in range(3))
    assert kind_of(normalize_markdown(release).shape) == "changelog"
    python = ("# Python 3.12\n\nWhat it supports.\n\n| Option | Default |\n| --- | --- |\n"
              + "".join(f"| `o{i}` | {i} |\n" for i in range(4)))
    assert kind_of(normalize_markdown(python).shape) == "reference"  # (a title ending with a version, over tables)
    for title in ("Hatch v1.8.0", "Version 1.6.1 (2024-08-30)", "What's new in 2.0"):
        assert kind_of(normalize_markdown(f"# {title}\n\nWe are pleased to announce it.\n").shape) == "changelog", title


def test_chunks_end_on_block_boundaries_and_carry_their_heading_path() -> None:
    body = "# Guide\n\n" + "".join(
        f"## Part {p}\n\n" + "".join(f"Sentence {p}.{i} says something useful about part {p}. " for i in range(6))
        + "\n\n- an item of part %d\n- another item\n\n```sh\nrun --part %d\n```\n\n" % (p, p) for p in range(6))
    doc = Document("g.md", "g.md", body, "h")
    chunks = chunk_document(doc, ChunkingSettings(chunk_tokens=60, overlap_tokens=10))
    assert len(chunks) > 3
    for c in chunks:
        assert body[c.start:c.end] == c.text
        assert c.text.rstrip()[-1] in ".m`" or c.text.rstrip().endswith("```"), c.text[-40:]  # whole units
        assert c.text.count("```") % 2 == 0  # a code block whole or not at all
        assert not c.text.rstrip().splitlines()[-1].startswith("#")  # never ends on a heading
        assert c.metadata["headings"][0] == "Guide"
    assert any(c.metadata["headings"] == ["Guide", "Part 3"] for c in chunks)
    assert chunk_document(doc, ChunkingSettings(chunk_tokens=60, overlap_tokens=10)) == chunks  # stable ids
    tiny = chunk_document(Document("t", "t", "# T\n\n" + "A sentence of words here. " * 20 + "\n\nEnd.", "h"),
                          ChunkingSettings(chunk_tokens=100, overlap_tokens=0))
    assert all(c.n_tokens >= 8 for c in tiny)  # a chunk shorter than a sentence is merged


PROSE = " ".join([
    "Certificates are renewed automatically by the server before they expire, and the renewal window is configurable.",
    "The proxy forwards requests to upstream servers and balances the load between them with several policies.",
    "Logs are written as structured records, and each record holds the time, the level and a message.",
] * 30)


def test_word_likeness_is_learned_from_the_corpus() -> None:
    model = WordModel.of_texts([PROSE])
    for junk in ("CYaIb8sB", "P4uod1", "Qof8h", "D7FF", "xE000", "ccc", "le 0.5", "0 123"):
        assert not model.wordlike(junk), junk
    for name in ("Certificates", "renewal window", "upstream servers", "TLS", "AC/DC", "HTTP 504", "Records"):
        assert model.wordlike(name), name
    assert WordModel.of_texts(["too few words"]).wordlike("CYaIb8sB")  # no model without prose to learn from


def test_names_with_a_slash_are_names_and_paths_are_not() -> None:
    for name in ("AC/DC", "TCP/IP", "I/O", "CI/CD"):
        assert junk_reason(name) is None, name
    for path in ("docs/index", "a/b", "/etc", "package/"):
        assert junk_reason(path) is not None, path
    assert [f.name for f in find_entities("The band AC/DC played over TCP/IP.")] == ["AC/DC", "TCP/IP"]


def test_whole_corpus_answers_rank_changelog_communities_low_unless_set() -> None:
    import json

    from strata.topics import whole_corpus_reports

    def report(cid: str, members: int, chunks: list[str]) -> Report:
        inputs = json.dumps({"entities": {f"e{i}": "" for i in range(members)}, "chunks": {c: "" for c in chunks}})
        return Report(cid, 0, cid, "", (), 0.0, "", "offline", "extractive", "", inputs=inputs)

    reports = [report("changes", 40, ["log#0", "log#1"]), report("guide", 20, ["g#0"]), report("ref", 10, ["r#0"])]
    kinds = {"log#0": "changelog", "log#1": "changelog", "g#0": "guide", "r#0": "reference"}
    weights = {"changelog": 0.2, "guide": 1.0, "reference": 1.0}
    assert [r.community_id for r in whole_corpus_reports(reports, kinds, weights, 3)] == ["guide", "ref", "changes"]
    assert whole_corpus_reports(reports, kinds, {**weights, "changelog": 1.0}, 1)[0].community_id == "changes"


def test_the_drift_table_is_sorted_by_drift_and_paged() -> None:
    from communities.drift import DriftEntry, DriftReport
    from communities.drift_render import TABLE_PAGE, to_html

    entries = tuple(DriftEntry(f"c{i}", 0, f"A rather long community title number {i} that goes on", (i % 7) / 10,
                               "fresh", "exists", 1.0, 0, 0, 0, 0, 0, 0, 0, "offline", "", "")
                    for i in range(2 * TABLE_PAGE + 5))
    report = DriftReport("2026-01-01T00:00:00", entries, {"reports": len(entries)},
                         {"reports": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0}, {"members": 1.0})
    html = to_html(report, [])
    assert html.count("<details class='page'") == 3 and "reports 101–105 of 105" in html
    table = html[html.index("Reports (most drifted first)"):]
    scores = [float(x) for x in __import__("re").findall(r"<td class=n>(\d\.\d\d)</td><td class=n>1</td>", table)]
    assert scores == sorted(scores, reverse=True) and len(scores) == len(entries)


def test_a_table_cell_opens_like_a_sentence_and_no_name_runs_across_cells() -> None:
    """An option table's description cell opens like a sentence ("Main server ..." names no "Main", "Disables
    ..." no "Disables"), and capitalized words in neighbouring cells are no one name ("Retry | Main" was "Retry
    Main"); a name inside a cell is still found, and the extractor reads the cells, not the pipes."""
    from core.settings import ExtractionSettings
    from extraction.loader import document_from_text
    from extraction.offline import OfflineExtractor

    text = ("# Options\n\n| option | retry | description |\n|---|---|---|\n"
            "| `upstream` | Retry | Main server the request goes to |\n"
            "| `tls` | none | Disables the check that Kubernetes runs |\n")
    doc = document_from_text("options.md", text)
    chunks = chunk_document(doc, ChunkingSettings())
    found = OfflineExtractor(ExtractionSettings()).extract(chunks).extractions
    names = {e.name for x in found for e in x.entities}
    assert {"upstream", "tls", "Kubernetes"} <= names, names
    assert not names & {"Main", "Retry", "Retry Main", "Disables"}, names


def test_backticks_pair_in_order_so_prose_between_two_code_spans_is_no_code() -> None:
    """`b` is too short to name anything; its closing backtick still closes it, so the prose up to the next
    span ("doesn't get the") is not read as a code span and made an identifier."""
    sentence = "The list validator for `b` doesn't get the `allow_partial` instruction from `x` or `strict`."
    found = [(f.name, f.type) for f in find_entities(sentence)]
    assert found == [("allow_partial", "identifier"), ("strict", "identifier")]
    long = "Run `" + "a" * 90 + "` and then the `max_connections` setting applies."
    assert [f.name for f in find_entities(long)] == ["max_connections"]
    # quotes typed as ``...'' (as in Wikipedia dumps): the prose between two of them is no code, and its names
    # are still names
    quoted = ("``Hello'' is a single the band Red Velvet recorded for an album that SM Entertainment released "
              "in Seoul in 2016, after ``Automatic''.")
    assert {"Red Velvet", "SM Entertainment", "Seoul"} <= {f.name for f in find_entities(quoted)}
    stray = ("Don`t worry about this long preamble that goes on and on for well over eighty characters, until we "
             "set `retry` and `timeout` here.")
    assert {"retry", "timeout"} <= {f.name for f in find_entities(stray)}
    doubled = "Use `` `x` `` in the config and `max_size` after it."  # a span holding a backtick, as CommonMark writes it
    assert [f.name for f in find_entities(doubled)] == ["max_size"]


def test_a_name_a_table_wraps_with_line_breaks_reads_as_one_name() -> None:
    """A narrow table column writes one option as code spans joined by <br> after each dot; the page means one
    name, so the text holds it whole (and the extractor finds it). Spans with no joining character stay apart."""
    page = ("| Field | Description |\n|---|---|\n"
            "| <a id=\"e\" href=\"#e\">`providers.`<br/>`kubernetesIngressNGINX.`<br/>`endpoint`</a> | Server URL.<br />"
            "More here. |\n| `retry`<br>`timeout` | Two options. |\n")
    text = normalize_markdown(page).text
    assert "`providers.kubernetesIngressNGINX.endpoint`" in text and "`retry` `timeout`" in text
    paths = normalize_markdown("Look in `src/`<br>`tests/` and `https://a.example/`<br>`https://b.example/`.\n").text
    assert "`src/` `tests/`" in paths and "`https://a.example/` `https://b.example/`" in paths  # paths stay apart
    assert "Server URL. More here." in text
    names = [f.name for line in text.splitlines() for f in find_entities(line)]
    assert "providers.kubernetesIngressNGINX.endpoint" in names and "kubernetesIngressNGINX." not in names
