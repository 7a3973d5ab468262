"""Prompt templates, kept as files with declared inputs and validated when loaded.

Each ``*.txt`` file starts with a header line ``# inputs: a, b, c`` and uses ``$a``-style placeholders
(``string.Template``), so JSON braces in a prompt need no escaping. Loading checks that the placeholders and the
declared inputs are the same set; rendering checks that every input is given. A folder in settings
(``llm.prompts_dir``) can override any template by file name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

PROMPTS_DIR = Path(__file__).resolve().parent
NAMES = ("extract_entities", "passage", "example_prose", "example_technical", "glean", "repair_json", "merge_descriptions",
         "community_report", "global_map", "global_reduce", "route", "local_answer")


class PromptError(ValueError):
    """A prompt file is malformed, or rendered with missing or unknown inputs."""


@dataclass(frozen=True, slots=True)
class Prompt:
    name: str
    inputs: frozenset[str]
    template: Template
    path: Path

    def render(self, **values: object) -> str:
        given = set(values)
        if given != self.inputs:
            missing, extra = sorted(self.inputs - given), sorted(given - self.inputs)
            raise PromptError(f"prompt {self.name!r}: missing inputs {missing}, unknown inputs {extra}")
        return self.template.substitute({k: str(v) for k, v in values.items()})


def _parse(name: str, path: Path) -> Prompt:
    text = path.read_text(encoding="utf-8")
    first, _, body = text.partition("\n")
    m = re.fullmatch(r"#\s*inputs:\s*(.*)", first.strip())
    if not m:
        raise PromptError(f"{path}: the first line must declare the inputs, e.g. '# inputs: text, entity_types'")
    declared = frozenset(x.strip() for x in m.group(1).split(",") if x.strip())
    template = Template(body)
    used = {g[1] or g[2] for g in Template.pattern.findall(body) if g[1] or g[2]}
    if used != declared:
        raise PromptError(f"{path}: placeholders {sorted(used)} differ from declared inputs {sorted(declared)}")
    return Prompt(name, declared, template, path)


def load_prompt(name: str, override_dir: Path | None = None) -> Prompt:
    """The named prompt, from ``override_dir`` when it has a file of that name, else the packaged one."""
    if name not in NAMES:
        raise PromptError(f"unknown prompt {name!r}; known: {', '.join(NAMES)}")
    if override_dir is not None:
        candidate = Path(override_dir) / f"{name}.txt"
        if candidate.exists():
            return _parse(name, candidate)
    return _parse(name, PROMPTS_DIR / f"{name}.txt")
