"""Append-only JSON-lines logs (``runs.jsonl``, ``drift_history.jsonl``) that survive a torn write.

A process killed (or a disk filling up) in the middle of an append leaves a partial last line. Reading skips any
line that is not a whole JSON object, so the log stays readable; the next append first cuts the partial line
off (everything after the last newline), then writes its record as one line with one ``write`` and flushes it
to disk. A record is either in the log whole or not at all.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from core.disk import disk_full, is_disk_full

log = logging.getLogger("strata.jsonlog")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The log's whole records, oldest first; none when it does not exist."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    out: list[dict[str, Any]] = []
    lines = data.split(b"\n")
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            if i < len(lines) - 1:  # a whole line that is not JSON: someone edited the file; say so once
                log.warning("%s:%d is not a JSON record; skipped", path, i + 1)
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append ``record`` as one line, after cutting off a partial last line left by a torn write."""
    path = Path(path)
    line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            end = os.lseek(fd, 0, os.SEEK_END)
            keep = _whole_lines_end(fd, end)
            if keep != end:
                os.ftruncate(fd, keep)
            os.lseek(fd, keep, os.SEEK_SET)
            written = os.write(fd, line)
            if written != len(line):  # a short write: leave no partial record behind
                os.ftruncate(fd, keep)
                raise OSError(28, "No space left on device", str(path))
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        if is_disk_full(exc):
            raise disk_full(exc, path) from exc
        raise


def _whole_lines_end(fd: int, end: int) -> int:
    """The offset just after the file's last newline (0 when it has none)."""
    pos = end
    while pos > 0:
        step = min(4096, pos)
        pos -= step
        block = os.pread(fd, step, pos)
        nl = block.rfind(b"\n")
        if nl >= 0:
            return pos + nl + 1
    return 0
