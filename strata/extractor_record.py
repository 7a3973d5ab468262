"""The extractor a workspace's extractions were made by, recorded in ``<data-dir>/extractor.json``.

The record is one :class:`extraction.fingerprint.ExtractorFingerprint`, written (atomically) by every index run
once it has published, beside the folders the workspace records (``folders.json``, :mod:`strata.folders`).
Which documents are extracted again is decided per document (each document's revision includes the fingerprint
it was extracted under, :func:`strata.stages.revision`), so a run killed half-way through re-extracting leaves
the rest marked as changed; the record is what an index run compares with to say, in one line, that the
extractor changed and how many documents that sends back to extraction. A workspace written before the record
existed, or whose record cannot be read, counts as extracted by another extractor.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from extraction.fingerprint import ExtractorFingerprint
from strata.workspace import Workspace

EXTRACTOR_FILE = "extractor.json"
UNRECORDED = "none recorded"


def extractor_path(ws: Workspace) -> Path:
    return ws.root / EXTRACTOR_FILE


def recorded_extractor(ws: Workspace) -> ExtractorFingerprint | None:
    """The recorded fingerprint; None when there is none or it cannot be read (a run then records it anew)."""
    try:
        return ExtractorFingerprint.from_json(json.loads(extractor_path(ws).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def record_extractor(ws: Workspace, fingerprint: ExtractorFingerprint) -> None:
    """Write the record (aside, then renamed over the old one), unless it already says ``fingerprint``."""
    if recorded_extractor(ws) == fingerprint:
        return
    path = extractor_path(ws)
    tmp = path.with_name(f"{EXTRACTOR_FILE}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(fingerprint.to_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def change_note(before: ExtractorFingerprint | None, now: ExtractorFingerprint, redo: int, done: int) -> str | None:
    """The one line an index run says when the extractor differs from the recorded one and ``redo`` stored
    documents are extracted again because of it (``done``: stored documents already extracted by ``now``, by a
    run that was killed before it recorded it); None when there is nothing to say."""
    if before == now or redo == 0:
        return None
    was = before.label() if before is not None else UNRECORDED
    what = f"all {redo} documents" if not done else f"{redo} documents ({done} already were, by an unfinished run)"
    return f"extractor changed ({was} -> {now.label()}): re-extracting {what}"


def extractor_status(ws: Workspace, now: ExtractorFingerprint) -> str:
    """What ``strata status`` says of the extractor: the recorded one, and whether the settings' one (``now``)
    differs from it, which makes the next index run extract every document again."""
    recorded = recorded_extractor(ws)
    if recorded == now:
        return now.label()
    if recorded is None:
        return f"{UNRECORDED}; the next index run extracts every document with {now.label()}"
    return f"{recorded.label()}; these settings run {now.label()}: the next index run re-extracts every document"
