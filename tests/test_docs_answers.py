"""Answers on a command-line tool's docs: a comparison quotes the list of differences whole, with the sentence
that introduces it; a second hop needs a name; a global answer names the pages each community quotes."""

from __future__ import annotations

from pathlib import Path

from answers.units import answer_units

CI_PAGE = """---
title: quill-ci
description: Clean install a project
---

### Synopsis

```bash
quill ci
```

### Description

This command is similar to `quill install`, except it is meant to be used in automated environments such as
test platforms and deployment.

The main differences between using `quill install` and `quill ci` are:

* The project must have an existing `quill.lock`.
* If the lock does not match `quillfile.json`, `quill ci` exits with an error instead of updating the lock.
* It never writes to `quillfile.json` or to the lock: installs are frozen.

### Configuration

Options are read from `.quillrc`.
"""

INSTALL_PAGE = """---
title: quill-install
description: Install a package
---

### Description

This command installs a package and any packages that it depends on into the project tree.
"""

HEADERS_PAGE = """---
title: registry-headers
description: What quill sends to the registry
---

### Headers

* `Quill-In-CI`: set to "true" when quill believes this install is running in a ci environment during an
  install, "false" otherwise; every install and every ci install sends it.
* `Quill-Scope`: the scope of the project, when it has one; sent on every install and every ci run too.

Both headers are sent by every install command, ci or not.
"""

RUN_PAGE = """---
title: quill-run-script
description: Run arbitrary package scripts
---

### Synopsis

```bash
quill run-script <command> [-- <args>]
```

### Description

This runs an arbitrary command from a package's `"scripts"` object.
"""

SCRIPTS_PAGE = """---
title: scripts
description: How quill handles the scripts field
---

### Description

The `"scripts"` property of `quillfile.json` holds script commands that are run at various times in the
lifecycle of a package. A script defined in `quillfile.json` runs before or after another script defined in
`quillfile.json` when its name starts with pre or post. Scripts defined in a workspace's `quillfile.json` run in
that workspace. Every script defined in `quillfile.json` gets the project's `bin` folder on its path.
"""


def _docs(folder: Path) -> Path:
    folder.mkdir()
    for name, text in {"quill-ci.md": CI_PAGE, "quill-install.md": INSTALL_PAGE, "registry.md": HEADERS_PAGE,
                       "quill-run-script.md": RUN_PAGE, "scripts.md": SCRIPTS_PAGE}.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_a_list_is_quoted_with_the_sentence_that_introduces_it() -> None:
    text = CI_PAGE.split("---\n", 2)[2]
    lists = [u for u in answer_units("quill-ci.md#0000", text, True) if u.kind == "list"]
    assert len(lists) == 1
    assert lists[0].text.startswith("The main differences between using `quill install` and `quill ci` are:\n\n* ")
    assert lists[0].text.rstrip().endswith("installs are frozen.")
    # the sentence above the introducing one stays a sentence of its own
    assert any(u.kind == "sentence" and u.text.startswith("This command is similar")
               for u in answer_units("quill-ci.md#0000", text, True))


def test_a_comparison_is_answered_by_the_page_of_one_side_that_speaks_of_the_other(tmp_path: Path) -> None:
    from tests.conftest import ask_offline

    answer = ask_offline(_docs(tmp_path / "docs"), tmp_path / "ws",
                         "What is the difference between quill ci and quill install?")
    # the list of differences is quoted whole, with the sentence that introduces it, from quill ci's own page
    lists = [p.text for p in answer.points if p.text.startswith("The main differences between using `quill "
                                                                "install` and `quill ci` are:")]
    assert lists and "installs are frozen." in lists[0], answer.text


def test_a_second_hop_needs_a_name_the_bridge_adds_not_one_of_its_words(tmp_path: Path) -> None:
    """The bridge "Roll out with `deployctl apply --canary 10` ..." adds the name "deployctl apply --canary 10";
    a sentence elsewhere that shares only its word "apply" ("connection limits apply to their pools") is no hop."""
    import shutil

    from tests.conftest import ask_offline
    from tests.test_console_browser import RUNBOOK

    folder = tmp_path / "notes"
    shutil.copytree(Path(__file__).resolve().parents[1] / "samples" / "infra-notes", folder)
    (folder / "deploy-runbook.md").write_text(RUNBOOK, encoding="utf-8")
    answer = ask_offline(folder, tmp_path / "ws", "How do I roll back a deploy with deployctl?", mode="local")
    assert "deployctl rollback --to previous" in answer.text, answer.text
    assert "PostgreSQL" not in answer.text and {c.chunk_id for c in answer.citations} == {"deploy-runbook.md#0000"}


def test_a_global_answer_names_the_pages_each_community_quotes(tmp_path: Path) -> None:
    from tests.conftest import ask_offline

    folder = _docs(tmp_path / "docs")
    answer = ask_offline(folder, tmp_path / "ws", "What are the main topics these docs cover?")
    assert answer.route.route == "global", answer.route
    titles = {"quill-ci", "quill-install", "registry-headers", "quill-run-script", "scripts"}
    lines = [ln for ln in answer.text.splitlines() if "(report " in ln]
    assert lines and all("; on the pages " in ln for ln in lines), answer.text
    named = {t.strip() for ln in lines for t in ln.split("; on the pages ", 1)[1].split(",")}
    assert named and named <= titles, named
    # One untitled text names no pages: every community would be "on" the same one.
    book = tmp_path / "book"
    book.mkdir()
    (book / "tale.txt").write_text(" ".join(
        f"Marley warned Scrooge on night {i}. Scrooge and Bob Cratchit kept the counting-house open." for i in range(30)),
        encoding="utf-8")
    tale = ask_offline(book, tmp_path / "ws2", "What are the main themes of the whole story?")
    assert "; on the pages " not in tale.text


ENV_PAGE = """# Environment variables

Quill reads the variables below when it starts, before any configuration file.

## `SSL_CERT_FILE`

If this environment variable is set, quill loads the CA certificate from the specified file instead of the
default location.

## `QUILL_TIMEOUT`

Seconds to wait for the registry before giving up. Quill waits thirty seconds when it is not set.
"""


def test_a_quoted_unit_is_shown_under_the_heading_that_names_its_subject() -> None:
    """"If this environment variable is set ..." names its variable only in the heading above it: the answer shows
    the heading once above the units under it, each label a block of its own."""
    from answers.answer import quoted_text

    units = answer_units("env.md#0000", ENV_PAGE, True)
    intro, ssl, seconds, waits = units
    assert intro.heading == "Environment variables" and ssl.heading == "`SSL_CERT_FILE`"
    assert seconds.heading == waits.heading == "`QUILL_TIMEOUT`"
    assert quoted_text([ssl, seconds, waits]) == "\n".join([
        "\u00a7 `SSL_CERT_FILE`", "", f"{ssl.text} [env.md#0000]", "",
        "\u00a7 `QUILL_TIMEOUT`", "", f"{seconds.text} [env.md#0000]", f"{waits.text} [env.md#0000]"])
    # a unit under no heading: of another document after a labelled one, it is labelled with its document, not
    # left under the section before; of the same document (a later chunk of the section), it continues it
    titled = answer_units("notes.md#0003", "Quill settings\nQuill reads its settings at start.", True)
    assert titled and titled[0].title
    assert quoted_text([ssl, titled[0]]).endswith(f"\n\n\u00a7 notes.md\n\n{titled[0].text} [notes.md#0003]")
    later = answer_units("env.md#0001", "certificates in PEM format.\n\nQuill reads the file once, when it starts.",
                         False)
    assert later and not later[0].heading
    assert quoted_text([ssl, later[0]]).endswith(f"{ssl.text} [env.md#0000]\n{later[0].text} [env.md#0001]")
    # an answer without headings reads as before; a heading too long to be a label is cut at a word
    assert quoted_text(titled) == f"{titled[0].text} [notes.md#0003]"
    long = type(ssl)("env.md#0000", ssl.start, ssl.end, ssl.text, ssl.kind, "word " * 60)
    label = quoted_text([long]).split("\n", 1)[0]
    assert len(label) <= 2 + 120 and label.endswith("word\u2026")
    # the same heading in another document starts a section of its own
    other = type(seconds)("other.md#0000", seconds.start, seconds.end, seconds.text, seconds.kind, seconds.heading)
    assert quoted_text([seconds, waits, other]).count("\u00a7 `QUILL_TIMEOUT`") == 2


def test_an_answer_names_the_section_its_sentence_sits_under(tmp_path: Path) -> None:
    from tests.conftest import ask_offline

    folder = _docs(tmp_path / "docs")
    (folder / "environment.md").write_text(ENV_PAGE, encoding="utf-8")
    answer = ask_offline(folder, tmp_path / "ws", "Which environment variable points quill at a custom CA "
                         "certificate file?", mode="local")
    lines = answer.text.splitlines()
    at = [i for i, line in enumerate(lines) if line.startswith("If this environment variable is set")]
    assert at and lines[at[0] - 2:at[0]] == ["\u00a7 `SSL_CERT_FILE`", ""], answer.text
