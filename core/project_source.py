"""Where the project file (``strata.toml``) is and how it is read as a settings source: the part of the project
file that the settings model itself needs (core/settings.py uses :class:`ProjectFileSource`). It knows no
settings model of its own, only the one it is given, so the imports run one way: this module <- core/settings.py
<- core/project_file.py (what ``strata init`` writes, and where each effective setting came from).

Relative paths in the project file are relative to the file's folder. A key the settings do not have is an
error naming the key (and the closest one), not silently ignored.
"""

from __future__ import annotations

import difflib
import os
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Callable, get_args, get_origin

from pydantic import BaseModel
from pydantic_settings import BaseSettings, TomlConfigSettingsSource

PROJECT_FILE_NAME = "strata.toml"
CONFIG_ENV = "STRATA_CONFIG"
def project_file_path() -> Path | None:
    """The project file in use: ``$STRATA_CONFIG`` when set (it must exist), else ``./strata.toml`` if present."""
    given = os.environ.get(CONFIG_ENV)
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise ValueError(f"project file {given} (--config / {CONFIG_ENV}): no such file; "
                             "write one with `strata init`")
        return path
    here = Path(PROJECT_FILE_NAME)
    return here if here.is_file() else None


def section_model(annotation: Any) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _is_path(annotation: Any) -> bool:
    if annotation is Path:
        return True
    return get_origin(annotation) in (typing.Union, types.UnionType) and Path in get_args(annotation)


def _dotted_keys(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> list[str]:
    out = []
    for name, info in model.model_fields.items():
        sub = section_model(info.annotation)
        out += _dotted_keys(sub, (*prefix, name)) if sub is not None else [".".join((*prefix, name))]
    return out


def _closest(root: type[BaseModel], dotted: str) -> str | None:
    """The setting of ``root`` nearest to a misspelled one, comparing whole names and the last part alone."""
    best, score = None, 0.6
    for known in _dotted_keys(root):
        s = max(difflib.SequenceMatcher(None, dotted, known).ratio(),
                difflib.SequenceMatcher(None, dotted.rsplit(".", 1)[-1], known.rsplit(".", 1)[-1]).ratio())
        if s > score:
            best, score = known, s
    return best


# Settings whose meaning changed, under their old names: a value written for the old meaning would be wrong for
# the new one, so it is named, not matched to the closest name.
RENAMED: dict[str, tuple[str, str]] = {
    "retrieval.graph_vector_threshold": ("retrieval.graph_vector_score",
                                         "a standard score now (5 by default), no longer a cosine"),
    "retrieval.graph_vector_strong": ("retrieval.graph_vector_strong_score",
                                      "a standard score now (8 by default), no longer a cosine"),
}


def renamed(dotted: str, spell: Callable[[str], str] = lambda name: f"'{name}'") -> str | None:
    """What to tell a user who set ``dotted`` (``"retrieval.graph_vector_threshold"``), a setting renamed when its
    meaning changed, its new name written by ``spell`` (a dotted key quoted, or an environment variable): "was
    renamed ...: why"; None for any other name."""
    if dotted not in RENAMED:
        return None
    new, why = RENAMED[dotted]
    return f"was renamed {spell(new)}: {why}"


def _check_and_anchor(model: type[BaseModel], data: dict[str, Any], base: Path, file: Path,
                      prefix: tuple[str, ...] = (), root: type[BaseModel] | None = None) -> dict[str, Any]:
    """``data`` with relative paths made relative to ``base``; unknown keys raise a ValueError naming them."""
    root = root or model
    fields = model.model_fields
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key not in fields:
            dotted = ".".join((*prefix, key))
            hint = renamed(dotted)
            if hint:
                raise ValueError(f"project file {file}: '{dotted}' {hint}")
            close = _closest(root, dotted)
            raise ValueError(f"project file {file}: unknown setting '{dotted}'"
                             + (f" (did you mean '{close}'?)" if close else ""))
        annotation = fields[key].annotation
        sub = section_model(annotation)
        if sub is not None and isinstance(value, dict):
            out[key] = _check_and_anchor(sub, value, base, file, (*prefix, key), root)
        elif _is_path(annotation) and isinstance(value, str) and not Path(value).expanduser().is_absolute():
            out[key] = str(base / value)
        else:
            out[key] = value
    return out


class ProjectFileSource(TomlConfigSettingsSource):
    """The project file as a settings source (lowest priority above the defaults)."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None = None) -> None:
        self._model = settings_cls
        self.path = path
        super().__init__(settings_cls, toml_file=path)

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        try:
            data = super()._read_file(file_path)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"project file {file_path}: not valid TOML ({exc})") from exc
        return _check_and_anchor(self._model, data, Path(file_path).parent, Path(file_path))
