"""Encodings shared by the stores: JSON for the fields kept as strings (metadata, report findings), and the
description merge rule."""

from __future__ import annotations

import json
from typing import Any

from core.records import Finding, Report


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def merge_text(old: str, new: str, limit: int = 4000) -> str:
    """How a stored description takes in a new one: kept when it already holds it, else appended (bounded)."""
    if not old:
        return new
    if not new or new in old:
        return old
    return (old + "\n" + new)[:limit]


def findings_to_json(findings: tuple[Finding, ...]) -> str:
    """Findings as JSON; a quoted finding also keeps the offsets of its sentence in its chunk."""
    return dumps([{"text": f.text, "chunk_ids": list(f.chunk_ids), **({"start": f.start, "end": f.end} if f.quoted else {})}
                  for f in findings])


def findings_from_json(raw: str | None) -> tuple[Finding, ...]:
    return tuple(Finding(f["text"], tuple(f["chunk_ids"]), int(f.get("start", -1)), int(f.get("end", -1)))
                 for f in json.loads(raw or "[]"))


def report_row(r: Report) -> dict[str, Any]:
    return {
        "community_id": r.community_id, "level": r.level, "title": r.title, "summary": r.summary,
        "findings": findings_to_json(r.findings), "rating": r.rating, "fingerprint": r.fingerprint,
        "mode": r.mode, "model": r.model, "created_at": r.created_at, "stale": bool(r.stale), "inputs": r.inputs,
    }


def report_from_row(row: Any) -> Report:
    return Report(
        community_id=row["community_id"], level=int(row["level"]), title=row["title"], summary=row["summary"],
        findings=findings_from_json(row["findings"]), rating=float(row["rating"]), fingerprint=row["fingerprint"],
        mode=row["mode"], model=row["model"], created_at=row["created_at"], stale=bool(row["stale"]),
        inputs=row["inputs"] or "",
    )
