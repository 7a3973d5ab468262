"""The project file (``strata.toml``): how ``strata init`` writes it, and where each effective setting came from
(where it is found and how it is read as a settings source is core/project_source.py, below the settings).

Settings are read from, highest first: command-line flags, ``STRATA_*`` environment variables, ``.env`` in the
current folder, then the project file: ``strata.toml`` in the current folder, or the file named by ``--config``
(the CLI passes it on as ``STRATA_CONFIG``, so server workers and flow runs started from it read the same file).
Relative paths in the project file are relative to the file's folder. A key the settings do not have is an
error naming the key (and the closest one), not silently ignored.

The file ``strata init`` writes is generated from the settings model, so it lists every setting with its
current default and cannot drift from the code.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, SecretStr
from pydantic_settings import BaseSettings, DotEnvSettingsSource, EnvSettingsSource

from core.project_source import PROJECT_FILE_NAME, ProjectFileSource, project_file_path, section_model
from core.settings import StrataSettings, env_name

MASK = "********"

Origin = Literal["default", "project file", ".env", "environment", "flag"]


def settings_sources(settings_cls: type[BaseSettings]) -> list[tuple[Origin, Any]]:
    """The sources below the constructor's arguments (flags), highest first, each with its label."""
    return [("environment", EnvSettingsSource(settings_cls)),
            (".env", DotEnvSettingsSource(settings_cls)),
            ("project file", ProjectFileSource(settings_cls, project_file_path()))]


@dataclass(frozen=True)
class SettingValue:
    """One effective setting: its dotted name, its value (secrets masked) and where it came from."""

    key: str
    value: Any
    origin: Origin
    env: str


def _shown(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return MASK if value.get_secret_value() else ""
    if isinstance(value, (list, tuple)):
        return [_shown(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _leaves(model: BaseModel, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    out: list[tuple[tuple[str, ...], Any]] = []
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            out += _leaves(value, (*prefix, name))
        else:
            out.append(((*prefix, name), value))
    return out


def _provides(data: Any, loc: tuple[str, ...]) -> bool:
    """Whether a source's raw values set ``loc`` (or a whole section containing it)."""
    for part in loc:
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
        if not isinstance(data, dict):
            return True
    return True


def effective_settings(flags: dict[str, Any] | None = None) -> tuple[BaseSettings, list[SettingValue]]:
    """The settings built from ``flags`` and every source, and each leaf setting with its origin."""
    flags = flags or {}
    settings = StrataSettings(**flags)
    raw: list[tuple[Origin, dict[str, Any]]] = [("flag", flags)]
    raw += [(label, source()) for label, source in settings_sources(StrataSettings)]
    values = []
    for loc, value in _leaves(settings):
        origin: Origin = next((label for label, data in raw if _provides(data, loc)), "default")
        values.append(SettingValue(".".join(loc), _shown(value), origin, env_name(loc)))
    return settings, values


def _toml_value(value: Any) -> str:
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):  # an inline table: {guide = 1.0, changelog = 0.2}
        return "{" + ", ".join(f"{json.dumps(str(k), ensure_ascii=False)} = {_toml_value(v)}"
                               for k, v in value.items()) + "}"
    return json.dumps(str(value), ensure_ascii=False)


def _hint(annotation: Any, metadata: list[Any]) -> str:
    """Allowed values of a field in a few words: its choices or bounds."""
    args = get_args(annotation)
    choices = next((get_args(a) for a in (annotation, *args) if get_origin(a) is Literal), ())
    if choices:
        return "one of " + ", ".join(f'"{c}"' for c in choices)
    bounds = []
    for m in metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            if getattr(m, attr, None) is not None:
                bounds.append(f"{sign} {getattr(m, attr)}")
    return ", ".join(bounds)


def render_project_file() -> str:
    """The commented ``strata.toml`` ``strata init`` writes: every setting with its default."""
    defaults = StrataSettings.model_construct()
    lines = [
        "# Strata project file, written by `strata init`. Every setting is listed with its default;",
        "# uncomment a line and change its value to change the setting.",
        "# Settings are read from, highest first: command-line flags, STRATA_* environment variables,",
        "# .env in the current folder, then this file (strata.toml in the current folder, or --config FILE).",
        "# Relative paths are relative to this file's folder. Keep secrets (API keys, passwords) in .env or the",
        "# environment rather than here. `strata config` shows every effective setting and where it came from.",
        "",
    ]

    def field_lines(model: type[BaseModel], instance: Any, prefix: tuple[str, ...], active: set[str]) -> None:
        for name, info in model.model_fields.items():
            if section_model(info.annotation) is not None:
                continue
            loc = (*prefix, name)
            notes = [n for n in (info.description, _hint(info.annotation, info.metadata)) if n]
            if isinstance(info.default, SecretStr) or "SecretStr" in repr(info.annotation):
                notes.append("secret: better set in .env or the environment")
            lines.extend(textwrap.wrap("; ".join(notes + [env_name(loc)]), 110, initial_indent="# ",
                                       subsequent_indent="#   ", break_on_hyphens=False))
            value = getattr(instance, name)
            if value is None:
                lines.append(f"# {name} =    (not set by default)")
            else:
                lines.append(f"{'' if name in active else '# '}{name} = {_toml_value(value)}")

    field_lines(StrataSettings, defaults, (), active={"data_dir"})
    for name, info in StrataSettings.model_fields.items():
        sub = section_model(info.annotation)
        if sub is None:
            continue
        doc = " ".join((sub.__doc__ or "").strip().split("\n\n")[0].split())
        lines += ["", f"[{name}]"] + textwrap.wrap(doc, 110, initial_indent="# ", subsequent_indent="# ")
        field_lines(sub, getattr(defaults, name), (name,), active=set())
    return "\n".join(lines) + "\n"


def write_project_file(folder: Path, force: bool = False) -> Path:
    """Write ``folder/strata.toml`` (creating the folder); refuse to replace an existing one unless ``force``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / PROJECT_FILE_NAME
    if path.exists() and not force:
        raise FileExistsError(f"{path} already exists; pass --force to replace it")
    path.write_text(render_project_file(), encoding="utf-8")
    return path
