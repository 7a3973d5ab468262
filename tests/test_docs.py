"""The documentation: the configuration reference covers the settings model, and the README and docs/ name only
commands, targets, modules and pages that exist.

The reference is generated (strata/docs_config.py), so these tests walk the settings model on their own and check
the rendered page against it, rather than trusting the renderer's walk. The README and the pages are checked for
what a reader would type: `make` targets, `python -m` modules, `strata` subcommands, `scripts/` commands, and
the relative links between them (mkdocs' strict build checks the links inside docs/; the README is outside it).
"""

from __future__ import annotations

import argparse
import re
import unicodedata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel, Field

from core.settings import StrataSettings, known_env_names
from strata import docs_config
from tests.conftest import ROOT

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
README = ROOT / "README.md"


def leaves(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every setting below ``model``: dotted name -> its FieldInfo."""
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            out.update(leaves(annotation, (*prefix, name)))
        else:
            out[".".join((*prefix, name))] = info
    return out


def table_rows(markdown: str) -> dict[str, list[str]]:
    """The reference's rows: the setting's dotted name -> its cells (setting, type, default, variable, meaning)."""
    rows = {}
    for line in markdown.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        rows[cells[0].strip("`")] = cells
    return rows


def expected_env(key: str) -> str:
    return "STRATA_" + "__".join(part.upper() for part in key.split("."))


def test_the_reference_has_one_row_per_setting_with_its_variable_type_and_default() -> None:
    rows = table_rows(docs_config.render_reference())
    fields = leaves(StrataSettings)
    assert set(rows) == set(fields), (sorted(set(fields) - set(rows)), sorted(set(rows) - set(fields)))
    for key, info in fields.items():
        setting, kind, default, env, meaning = rows[key]
        assert env == f"`{expected_env(key)}`" and expected_env(key) in known_env_names(), key
        assert kind, key
        value = info.get_default(call_default_factory=True)
        if value is None:
            assert default == "unset", key
        elif isinstance(value, (int, float, str)) and not isinstance(value, bool):
            assert default == f"`{value}`", (key, default)
        if info.description:
            assert meaning.startswith(info.description.split()[0].replace("_", "\\_")), (key, meaning)


def test_the_reference_has_a_section_per_settings_section() -> None:
    text = docs_config.render_reference()
    sections = [n for n, i in StrataSettings.model_fields.items()
                if isinstance(i.annotation, type) and issubclass(i.annotation, BaseModel)]
    assert sections and all(f"## `{name}`\n" in text for name in sections)


def test_a_new_setting_appears_in_the_reference_with_its_description() -> None:
    class Extra(BaseModel):
        """A section the real model does not have."""

        fresh_knob: int = Field(7, ge=1, description="something new")

    class Root(BaseModel):
        name: str = "x"
        extra: Extra = Field(default_factory=Extra)

    rows = table_rows(docs_config.render_reference(Root))
    assert rows["extra.fresh_knob"] == ["`extra.fresh_knob`", "int (>= 1)", "`7`", "`STRATA_EXTRA__FRESH_KNOB`",
                                        "something new"]
    assert rows["name"][3] == "`STRATA_NAME`"


def test_words_for_undescribed_settings_name_real_settings_the_model_leaves_undescribed() -> None:
    fields = leaves(StrataSettings)
    unknown = [k for k in docs_config.UNDESCRIBED if k not in fields]
    described = [k for k in docs_config.UNDESCRIBED if k in fields and fields[k].description]
    assert not unknown, f"UNDESCRIBED names no setting: {unknown}"
    assert not described, f"the model now describes these; drop them from UNDESCRIBED: {described}"


def test_model_descriptions_are_escaped_for_markdown() -> None:
    rows = table_rows(docs_config.render_reference())
    assert "&lt;name&gt;.txt" in rows["llm.prompts_dir"][4]


def page(src_uri: str) -> SimpleNamespace:
    return SimpleNamespace(file=SimpleNamespace(src_uri=src_uri))


def test_the_build_hook_fills_the_configuration_page_and_leaves_the_others() -> None:
    source = (DOCS / docs_config.REFERENCE_PAGE).read_text(encoding="utf-8")
    built = docs_config.on_page_markdown(source, page=page(docs_config.REFERENCE_PAGE), config={}, files=None)
    assert docs_config.MARKER not in built and docs_config.render_reference() in built
    other = (DOCS / "index.md").read_text(encoding="utf-8")
    assert docs_config.on_page_markdown(other, page=page("index.md"), config={}, files=None) == other


def test_the_build_fails_when_the_configuration_page_loses_its_marker() -> None:
    with pytest.raises(ValueError, match="exactly once"):
        docs_config.on_page_markdown("# Configuration\n", page=page(docs_config.REFERENCE_PAGE), config={}, files=None)


def test_the_readme_stays_short() -> None:
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= 200, f"README.md has {lines} lines; move detail into docs/ (issue #41)"


def test_every_page_is_in_the_site_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert [p.name for p in PAGES if f": {p.name}" not in nav] == []


# What a reader types: found in code blocks and code spans only, so that prose ("would make a text's vector")
# is not read as a command.
def code_of(text: str) -> str:
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)
    spans = re.findall(r"``(.+?)``|`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    return "\n".join(blocks + [a or b for a, b in spans])


DOC_CODE = {path.relative_to(ROOT).as_posix(): code_of(path.read_text(encoding="utf-8")) for path in [README, *PAGES]}


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return {t for line in re.findall(r"^([a-z][\w .-]*):(?!=)", text, flags=re.M) for t in line.split()}


def cli_commands() -> set[str]:
    from strata.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def found(pattern: str) -> list[tuple[str, str]]:
    return [(doc, m) for doc, code in DOC_CODE.items() for m in re.findall(pattern, code, flags=re.M)]


def test_every_make_target_named_exists() -> None:
    named = found(r"\bmake ([a-z][\w-]*)")
    assert {t for _, t in named} >= {"demo", "test", "test-quick", "docs"}
    targets = make_targets()
    assert [(doc, t) for doc, t in named if t not in targets] == []


def test_every_strata_subcommand_named_exists() -> None:
    # `strata` opening a command (a line or a code span, or after .venv/bin/), then global flags, then the command
    named = found(r"(?:^|bin/)strata(?: --[a-z-]+(?: [^\s`-]\S*)?)* ([a-z]+)\b")
    assert len({c for _, c in named}) >= 10
    commands = cli_commands()
    assert [(doc, c) for doc, c in named if c not in commands] == []


def test_every_project_module_run_with_python_m_exists() -> None:
    named = found(r"python -m ([\w.]+)")
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    assert any(m.startswith("bench.") for _, m in named)
    missing = []
    for doc, module in named:
        if module.split(".")[0] not in packages or not module.islower():
            continue  # a tool from the environment (mkdocs), or a placeholder (bench.NAME)
        path = ROOT.joinpath(*module.split("."))
        if not (path.with_suffix(".py").exists() or (path / "__main__.py").exists()):
            missing.append((doc, module))
    assert missing == []


def test_every_script_command_named_exists() -> None:
    named = found(r"\bscripts/(\w+)(?: (\w+))?")
    assert named
    bad = []
    for doc, (script, command) in named:
        path = ROOT / "scripts" / script
        if not path.exists():
            bad.append((doc, script))
        elif command:
            usage = re.search(r"usage: scripts/\w+ ([\w|]+)", path.read_text(encoding="utf-8"))
            if usage is None or command not in usage.group(1).split("|"):
                bad.append((doc, f"{script} {command}"))
    assert bad == []


def slug(heading: str) -> str:
    """A heading's anchor as Python-Markdown's toc extension makes it (markup dropped, ASCII, hyphens)."""
    text = re.sub(r"[`*]", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def test_the_readmes_links_reach_pages_and_headings_that_exist() -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", README.read_text(encoding="utf-8"))
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert len(local) >= 8
    broken = []
    for link in local:
        target, _, anchor = link.partition("#")
        path = ROOT / target
        if not path.is_file() or (anchor and anchor not in anchors(path)):
            broken.append(link)
    assert broken == []
