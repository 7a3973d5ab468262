"""Checks of flow parameters, run first in every flow: a bad value fails the run at once with a message naming
the parameter and its value (a relative path is shown with the working directory it was resolved against, since
a deployment's run starts in the project folder its pull step names)."""

from __future__ import annotations

from pathlib import Path


class FlowParameterError(ValueError):
    """A flow parameter that cannot work; the message names the parameter and the value."""


def _where(path: Path) -> str:
    return "" if path.is_absolute() else f" (relative to the working directory {Path.cwd()})"


def existing_folder(name: str, value: str) -> str:
    """``value`` if it names a folder; else a FlowParameterError naming ``name`` and the folder."""
    if not isinstance(value, str) or not value.strip():
        raise FlowParameterError(f"parameter '{name}': a folder is required, got {value!r}")
    path = Path(value).expanduser()
    if not path.exists():
        raise FlowParameterError(f"parameter '{name}': folder {value}{_where(path)} does not exist")
    if not path.is_dir():
        raise FlowParameterError(f"parameter '{name}': {value}{_where(path)} is a file, not a folder")
    return str(path)


def other_folder_policy(name: str, value: str) -> str:
    """``value`` if it is one of the folder policies (refuse, add, replace); else a FlowParameterError."""
    from strata.folders import POLICIES

    if value not in POLICIES:
        raise FlowParameterError(f"parameter '{name}': must be one of {', '.join(POLICIES)}, got {value!r}")
    return value


def checked_folder(name: str, value: str | None, data_dir: str | Path | None, policy: str = "refuse") -> str | None:
    """The folder to index: ``value`` when it names a folder the workspace may index (see
    :mod:`strata.folders`); None (the workspace's own folders) when it is not given and the workspace records
    some. Else a FlowParameterError naming ``name``: no folder given nor recorded, no such folder, or a folder of
    another workspace's documents without an ``add`` or ``replace`` policy."""
    from core.settings import StrataSettings
    from strata.folders import FolderError, plan_folders
    from strata.workspace import Workspace

    folder = None if value is None or (isinstance(value, str) and not value.strip()) else existing_folder(name, value)
    root = Path(data_dir) if data_dir else Path(StrataSettings().data_dir)
    try:
        plan_folders(Workspace(root), folder, policy, ("other_folder='add'", "other_folder='replace'"))
    except FolderError as exc:
        raise FlowParameterError(f"parameter '{name}': {exc}" + ("" if folder else f"; pass {name}=/path/to/notes")
                                 ) from None
    return folder


def published_workspace(name: str, data_dir: Path) -> Path:
    """``data_dir`` if it holds a published index generation; else a FlowParameterError naming ``name``."""
    from strata.workspace import Workspace

    if Workspace(Path(data_dir)).current_number() is None:
        raise FlowParameterError(f"parameter '{name}': no published index in {data_dir}{_where(Path(data_dir))}; "
                                 "run the index (or reindex) deployment first")
    return Path(data_dir)
