"""Metadata filters, applied inside both engines before ranking (never after truncation).

A filter maps a field to a condition:
- a scalar: equality (``{"service": "billing"}``);
- a list: any of the values (``{"team": ["core", "payments"]}``);
- an object of ``gte``/``gt``/``lte``/``lt``/``eq``/``ne``/``in``: comparisons, e.g. date ranges on ISO dates
  (``{"date": {"gte": "2024-01-01", "lt": "2024-07-01"}}``), which compare as strings, or numbers.
Several fields must all match. A chunk's fields are its document's metadata plus ``document_id`` and ``source``.
A list-valued metadata field matches when any of its values matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

OPERATORS = {"eq", "ne", "in", "gt", "gte", "lt", "lte"}
Scalar = (str, int, float, bool)


@dataclass(frozen=True, slots=True)
class Condition:
    field: str
    op: str
    value: Any


def parse_filter(spec: Mapping[str, Any] | None) -> list[Condition]:
    """Validate a filter and turn it into conditions; ValueError names the offending field or operator."""
    if not spec:
        return []
    if not isinstance(spec, Mapping):
        raise ValueError("metadata_filter must be an object")
    conds: list[Condition] = []
    for field, cond in spec.items():
        if not isinstance(field, str) or not field:
            raise ValueError("metadata_filter: field names must be non-empty strings")
        if isinstance(cond, Mapping):
            if not cond:
                raise ValueError(f"metadata_filter.{field}: empty condition")
            for op, value in cond.items():
                if op not in OPERATORS:
                    raise ValueError(f"metadata_filter.{field}: unknown operator {op!r} (use one of {sorted(OPERATORS)})")
                if op == "in":
                    if not isinstance(value, list) or not all(isinstance(v, Scalar) for v in value):
                        raise ValueError(f"metadata_filter.{field}.in: expected a list of scalars")
                elif not isinstance(value, Scalar):
                    raise ValueError(f"metadata_filter.{field}.{op}: expected a string, number or boolean")
                conds.append(Condition(field, op, value))
        elif isinstance(cond, list):
            if not all(isinstance(v, Scalar) for v in cond):
                raise ValueError(f"metadata_filter.{field}: a list must hold only strings, numbers or booleans")
            conds.append(Condition(field, "in", cond))
        elif isinstance(cond, Scalar):
            conds.append(Condition(field, "eq", cond))
        else:
            raise ValueError(f"metadata_filter.{field}: unsupported condition {cond!r}")
    return conds


def _cmp(a: Any, op: str, b: Any) -> bool:
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if isinstance(a, str) != isinstance(b, str):
        return False
    try:
        if op == "eq":
            return a == b
        if op == "ne":
            return a != b
        if op == "in":
            return a in b
        if op == "gt":
            return a > b
        if op == "gte":
            return a >= b
        if op == "lt":
            return a < b
        if op == "lte":
            return a <= b
    except TypeError:
        return False
    return False


def matches(fields: Mapping[str, Any], conds: Sequence[Condition]) -> bool:
    for c in conds:
        value = fields.get(c.field)
        values = value if isinstance(value, list) else [value]
        if c.op == "ne":
            if any(_cmp(v, "eq", c.value) for v in values):
                return False
            continue
        if not any(v is not None and _cmp(v, c.op, c.value) for v in values):
            return False
    return True


def filter_mask(rows: Sequence[Mapping[str, Any]], conds: Sequence[Condition], alive: np.ndarray | None = None) -> np.ndarray | None:
    """A boolean mask of rows matching every condition (and alive), or None when nothing is filtered."""
    if not conds:
        return alive
    mask = np.fromiter((matches(r, conds) for r in rows), bool, count=len(rows))
    return mask & alive if alive is not None else mask
