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


def test_the_question_path_loads_no_extraction_module() -> None:
    """Search, routing and answering share what they need with the extractor from core (the name finder, name
    keys, junk rules, the sentence splitter and the prose view, the LLM client): importing any of their modules,
    with everything they import in turn, loads no module of extraction/. Only their training commands, which
    index corpora, do."""
    import subprocess
    import sys

    modules = [".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
               for package in ("retrieval", "routing", "answers") for p in sorted((ROOT / package).rglob("*.py"))
               if p.name != "train.py"]
    code = ("import importlib, sys\n"
            f"for m in {modules!r}:\n"
            "    importlib.import_module(m)\n"
            "print(sorted(k for k in sys.modules if k.split('.')[0] == 'extraction'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout
