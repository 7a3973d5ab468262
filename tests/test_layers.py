"""Imports flow one way: core <- extraction <- communities <- retrieval <- routing <- answers <- strata <- flows
(prompts depends on nothing), counting imports inside functions too; and inside core, the settings and the project file do not
import each other both ways."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

LAYER = {"core": 0, "prompts": 0, "extraction": 1, "communities": 2, "retrieval": 3, "routing": 4, "answers": 5,
         "strata": 6, "flows": 7}


def imported(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return out


def test_no_upward_import() -> None:
    upward = []
    for package, layer in LAYER.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, module in imported(path):
                top = module.split(".")[0]
                if LAYER.get(top, -1) > layer:
                    upward.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not upward, upward


def test_settings_and_project_file_one_way() -> None:
    def core_imports(name: str) -> set[str]:
        return {m for _, m in imported(ROOT / "core" / name) if m.startswith("core.")}

    assert "core.project_file" not in core_imports("settings.py")
    assert "core.settings" not in core_imports("project_source.py")
    assert "core.settings" in core_imports("project_file.py")  # the project file's renderer reads the model


def test_the_question_path_reads_no_extraction_rule() -> None:
    """Search, routing and answering share the text primitives they need with the extractor from core (name finding,
    name keys, junk rules, the LLM client); only their training commands, which index corpora, import extraction."""
    into = [f"{path.relative_to(ROOT)}:{line} imports {module}"
            for package in ("retrieval", "routing", "answers") for path in sorted((ROOT / package).rglob("*.py"))
            if path.name != "train.py"
            for line, module in imported(path) if module.split(".")[0] == "extraction"]
    assert not into, into
