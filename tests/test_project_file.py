"""The project file: `strata init` writes every setting with its default (generated from the model), settings
are read flags > STRATA_* > .env > project file > defaults, and `strata config` says where each came from."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel

from core.project_file import MASK, effective_settings, render_project_file
from core.settings import StrataSettings
from strata.cli import main


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No STRATA_* variable from outside, and a fresh current folder (no strata.toml, no .env)."""
    import os

    for key in list(os.environ):
        if key.upper().startswith("STRATA_"):
            monkeypatch.delenv(key)
    # `--config` passes the file on in STRATA_CONFIG: make sure it is removed again after each test.
    monkeypatch.setenv("STRATA_CONFIG", "")
    monkeypatch.delenv("STRATA_CONFIG")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _sections(text: str) -> dict[str, dict[str, str]]:
    """{section: {field: the rest of its line}} for every `name = value` line, commented out or not."""
    found: dict[str, dict[str, str]] = {"": {}}
    section = ""
    for line in text.splitlines():
        if m := re.fullmatch(r"\[(\w+)\]", line):
            section = m.group(1)
            found[section] = {}
        elif m := re.fullmatch(r"(?:# )?(\w+) = (.*)", line):
            found[section][m.group(1)] = m.group(2)
    return found


def test_every_setting_appears_with_its_default() -> None:
    text = render_project_file()
    tomllib.loads(text)  # the file as written parses
    found = _sections(text)
    defaults = StrataSettings.model_construct()
    for name, info in StrataSettings.model_fields.items():
        sub = info.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            assert name in found, f"section [{name}] missing"
            for field in sub.model_fields:
                assert field in found[name], f"{name}.{field} missing from the project file"
                if getattr(getattr(defaults, name), field) is None:
                    assert "not set by default" in found[name][field]
        else:
            assert name in found[""], f"{name} missing from the project file"


def test_uncommented_template_equals_the_defaults(tmp_path: Path) -> None:
    """Every default written is the real one: uncommenting every line changes nothing."""
    lines = []
    for line in render_project_file().splitlines():
        m = re.fullmatch(r"# (\w+ = .*)", line)
        if m and "not set by default" not in line:
            line = m.group(1)
        lines.append(line)
    (tmp_path / "strata.toml").write_text("\n".join(lines), encoding="utf-8")
    data = tomllib.loads((tmp_path / "strata.toml").read_text())
    assert data["llm"]["model"] == "gpt-4o-mini" and "chunk_tokens" in data["chunking"]
    settings, values = effective_settings()
    assert settings.model_dump() == StrataSettings.model_construct().model_dump()
    assert {v.origin for v in values if v.value is not None} == {"project file"}


def test_precedence_and_origins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "strata.toml").write_text(
        '[chunking]\nchunk_tokens = 100\noverlap_tokens = 10\n[llm]\nmodel = "from-file"\n'
        '[retrieval]\ntop_k = 3\n[store]\nneo4j_password = "file-secret"\n', encoding="utf-8")
    (tmp_path / ".env").write_text("STRATA_CHUNKING__CHUNK_TOKENS=200\nSTRATA_LLM__MODEL=from-dotenv\n"
                                   "STRATA_LLM__API_KEY=dotenv-secret\n", encoding="utf-8")
    monkeypatch.setenv("STRATA_CHUNKING__CHUNK_TOKENS", "250")
    settings, values = effective_settings({"data_dir": tmp_path / "flagged"})
    by = {v.key: v for v in values}
    assert (settings.chunking.chunk_tokens, by["chunking.chunk_tokens"].origin) == (250, "environment")
    assert (settings.llm.model, by["llm.model"].origin) == ("from-dotenv", ".env")
    assert (settings.retrieval.top_k, by["retrieval.top_k"].origin) == (3, "project file")
    assert (settings.chunking.overlap_tokens, by["chunking.overlap_tokens"].origin) == (10, "project file")
    assert by["data_dir"].origin == "flag" and settings.data_dir == tmp_path / "flagged"
    assert by["retrieval.embedder"].origin == "default"
    assert by["llm.api_key"].value == MASK and by["store.neo4j_password"].value == MASK
    assert settings.llm.api_key is not None and settings.llm.api_key.get_secret_value() == "dotenv-secret"


def test_config_flag_paths_relative_to_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "proj"]) == 0
    project = tmp_path / "proj" / "strata.toml"
    text = project.read_text()
    project.write_text(text.replace('# prompts_dir =    (not set by default)', 'prompts_dir = "my-prompts"'))
    capsys.readouterr()
    assert main(["config", "--config", str(project), "--json"]) == 0
    shown = {s["key"]: s for s in json.loads(capsys.readouterr().out)["settings"]}
    assert shown["data_dir"] == {"key": "data_dir", "value": str(tmp_path / "proj" / ".strata"),
                                 "origin": "project file", "env": "STRATA_DATA_DIR"}
    assert shown["llm.prompts_dir"]["value"] == str(tmp_path / "proj" / "my-prompts")
    # --data-dir (a flag) wins over the file.
    assert main(["config", "--config", str(project), "--data-dir", "elsewhere", "--json"]) == 0
    shown = {s["key"]: s for s in json.loads(capsys.readouterr().out)["settings"]}
    assert (shown["data_dir"]["value"], shown["data_dir"]["origin"]) == ("elsewhere", "flag")


def test_init_refuses_to_overwrite_and_secrets_stay_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init"]) == 0
    assert main(["init"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["init", "--force"]) == 0
    monkeypatch.setenv("STRATA_LLM__API_KEY", "sk-very-secret")
    monkeypatch.setenv("STRATA_SERVER__API_KEYS", '["key-one", "key-two"]')
    capsys.readouterr()
    assert main(["config"]) == 0
    table = capsys.readouterr().out
    assert "sk-very-secret" not in table and "key-one" not in table and MASK in table
    assert re.search(r"llm\.api_key\s.*\*{8}.*environment", table)
    assert main(["config", "--json"]) == 0
    shown = {s["key"]: s for s in json.loads(capsys.readouterr().out)["settings"]}
    assert shown["server.api_keys"]["value"] == [MASK, MASK]


@pytest.mark.parametrize("content, message", [
    ("[chunking]\nchunk_tokns = 100\n", "unknown setting 'chunking.chunk_tokns' (did you mean 'chunking.chunk_tokens'?)"),
    ("[retrieval]\nembeder = 'none'\n", "unknown setting 'retrieval.embeder'"),
    ("[chunking\n", "not valid TOML"),
    ("[chunking]\nchunk_tokens = 2\n", "STRATA_CHUNKING__CHUNK_TOKENS"),
    # A setting renamed when its meaning changed is named with its new name, not matched to the closest one; a
    # value written for the old meaning (a cosine) is refused under the new name.
    ("[retrieval]\ngraph_vector_threshold = 0.5\n", "'retrieval.graph_vector_threshold' was renamed "
                                                     "'retrieval.graph_vector_score': a standard score now"),
    ("[retrieval]\ngraph_vector_score = 0.5\n", "STRATA_RETRIEVAL__GRAPH_VECTOR_SCORE"),
])
def test_bad_project_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str,
                                   message: str) -> None:
    (tmp_path / "strata.toml").write_text(content, encoding="utf-8")
    assert main(["status"]) == 2
    assert message in capsys.readouterr().err


def test_missing_config_file_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--config", "nowhere.toml"]) == 2
    assert "--config nowhere.toml: no such project file" in capsys.readouterr().err
