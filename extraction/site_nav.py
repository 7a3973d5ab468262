"""Page titles from a documentation generator's navigation: MkDocs's ``nav`` in ``mkdocs.yml``.

Many pages of an MkDocs site have neither front matter nor a first-line ``#`` heading: the generator titles them
from the ``nav`` of ``mkdocs.yml`` (``- Models: concepts/models.md``). Read without it, such a page has no title,
and the communities built on its passages have no page to be titled by. :func:`nav_titles` reads the ``nav`` of
the ``mkdocs.yml`` (or ``mkdocs.yaml``) whose ``docs_dir`` (default ``docs``) is the indexed folder or lies below
it, found in the folder or its parent, and maps each page's path relative to the folder to its title. Tags the
configuration uses for MkDocs plugins (``!!python/name:...``, ``!ENV``) are read as plain values; a file that
cannot be read gives no titles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CONFIG_NAMES = ("mkdocs.yml", "mkdocs.yaml")


class _Lenient(yaml.SafeLoader):
    """A safe loader that reads any tag as the plain value under it (MkDocs configurations tag Python names)."""


def _untagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_Lenient.add_multi_constructor("", _untagged)


def nav_titles(root: Path) -> dict[str, str]:
    """Each page's path (relative to ``root``, ``/``-separated) and the title the site's navigation gives it."""
    root = root.resolve()
    for where in (root, root.parent):
        for name in CONFIG_NAMES:
            config = where / name
            if config.is_file():
                titles = _titles(config, root)
                if titles:
                    return titles
    return {}


def _titles(config: Path, root: Path) -> dict[str, str]:
    try:
        data = yaml.load(config.read_text(encoding="utf-8"), Loader=_Lenient)  # noqa: S506 - a SafeLoader
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("nav"), list):
        return {}
    docs = (config.parent / str(data.get("docs_dir") or "docs")).resolve()
    if docs != root and root not in docs.parents:
        return {}  # the navigation of another folder
    prefix = docs.relative_to(root).as_posix()
    out: dict[str, str] = {}
    for title, page in _pages(data["nav"]):
        if "://" in page or not page.lower().endswith((".md", ".markdown")):
            continue  # a link out of the site, or a page no title comes for
        page = page.replace("\\", "/")
        page = page[2:] if page.startswith("./") else page
        rel = page if prefix == "." else f"{prefix}/{page}"
        out.setdefault(rel, " ".join(title.split()))
    return out


MAX_DEPTH = 12  # sections within sections; deeper (or a YAML alias that nests a list in itself) is not read


def _pages(nav: Any, depth: int = 0) -> list[tuple[str, str]]:
    """(title, page) for every titled page in a ``nav`` list, sections walked in order."""
    out: list[tuple[str, str]] = []
    if depth > MAX_DEPTH:
        return out
    for item in nav if isinstance(nav, list) else []:
        if not isinstance(item, dict):
            continue  # a bare path: MkDocs titles it from the page itself
        for title, value in item.items():
            name = str(title).strip() if isinstance(title, (str, int, float)) else ""
            if isinstance(value, str) and name:
                out.append((name, value))
            elif isinstance(value, list):
                out.extend(_pages(value, depth + 1))
    return out
