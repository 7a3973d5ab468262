"""What every ``strata`` command shares: exit codes, the two consoles, the one-line error, settings read from
the flags and the environment (with BLAS threads and logging set up as each command starts)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT, EXIT_PARTIAL = 0, 1, 2, 3

err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


class CliError(Exception):
    """A failure the CLI reports as one line (the problem and the fix) with an exit code."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


def say(kind: str, message: str) -> None:
    err.print(f"[red]{kind}:[/red] ", end="")
    err.print(message, markup=False, highlight=False)


def settings_problem(exc: Exception) -> str:
    """A settings error in one line naming the environment variable to fix."""
    import os

    from pydantic import ValidationError

    from core.settings import env_name

    if not isinstance(exc, ValidationError):
        return str(exc)
    parts = []
    for e in exc.errors(include_url=False, include_input=False):
        loc = tuple(e["loc"])
        # A value from the environment is named by its variable; the whole section's variable if that is set.
        name = next((env_name(loc[:i]) for i in range(len(loc), 0, -1) if env_name(loc[:i]) in os.environ),
                    env_name(loc))
        value = os.environ.get(name)
        shown = f"={value!r}" if value is not None and "KEY" not in name and "PASSWORD" not in name else ""
        parts.append(f"{name}{shown}: {e['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def flags_of(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags; ``--config FILE`` names the project file (passed on as STRATA_CONFIG, so that
    server workers and flow runs started from here read it too)."""
    import os

    from core.project_source import CONFIG_ENV

    if getattr(args, "config", None):
        if not Path(args.config).is_file():
            raise CliError(f"--config {args.config}: no such project file; write one with `strata init`", EXIT_BAD_INPUT)
        os.environ[CONFIG_ENV] = str(args.config)
    overrides: dict[str, Any] = {}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    return overrides


def load_settings(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from pydantic import ValidationError

    from core.settings import StrataSettings, unknown_env_vars

    for name, hint in unknown_env_vars():
        err.print(f"[yellow]warning:[/yellow] {name} is not a Strata setting and is ignored"
                  + (f" ({hint})" if hint else ""), markup=True, highlight=False)
    try:
        settings = StrataSettings(**flags_of(args))
        settings.llm_mode  # validates the llm section against the mode
        if settings.log.format == "json":  # machine-read logs: index stages and runs as JSON lines on stderr
            from strata.logs import configure_logging

            configure_logging(settings.log)
        from core.threads import configure

        configure(settings.compute)  # BLAS and worker threads for the CPU-bound stages
        return settings
    except (ValidationError, ValueError) as exc:
        raise CliError(f"invalid settings: {settings_problem(exc)}", EXIT_BAD_INPUT) from exc
