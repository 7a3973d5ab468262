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
    if op == "in":
        return any(_cmp(a, "eq", x) for x in b)
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if isinstance(a, str) != isinstance(b, str):
        return False
    try:
        if op == "eq":
            return a == b
        if op == "ne":
            return a != b
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


class ColumnIndex:
    """Per-field columns over the rows' metadata, built on first use, so a filter costs numpy operations
    instead of a Python loop over every row. Semantics are those of :func:`matches`."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self.rows = rows
        self.n = len(rows)
        self._eq: dict[str, dict[Any, np.ndarray]] = {}
        self._num: dict[str, np.ndarray] = {}
        self._str: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._has_list: dict[str, bool] = {}

    def _key(self, v: Any) -> Any:
        return ("b", v) if isinstance(v, bool) else ("s", v) if isinstance(v, str) else ("n", float(v))

    def _eq_index(self, field: str) -> dict[Any, np.ndarray]:
        if field not in self._eq:
            lists: dict[Any, list[int]] = {}
            has_list = False
            for i, r in enumerate(self.rows):
                v = r.get(field)
                if isinstance(v, list):
                    has_list = True
                    for x in set(map(self._key, (x for x in v if isinstance(x, Scalar)))):
                        lists.setdefault(x, []).append(i)
                elif isinstance(v, Scalar):
                    lists.setdefault(self._key(v), []).append(i)
            self._eq[field] = {k: np.asarray(v, np.int64) for k, v in lists.items()}
            self._has_list[field] = has_list
        return self._eq[field]

    def _rows_mask(self, rows: np.ndarray) -> np.ndarray:
        m = np.zeros(self.n, bool)
        m[rows] = True
        return m

    def _range(self, c: Condition) -> np.ndarray:
        self._eq_index(c.field)
        if self._has_list[c.field]:
            return np.fromiter((matches(r, [c]) for r in self.rows), bool, count=self.n)
        if isinstance(c.value, str):
            if c.field not in self._str:
                vals = [r.get(c.field) for r in self.rows]
                present = np.fromiter((isinstance(v, str) for v in vals), bool, count=self.n)
                self._str[c.field] = (np.array([v if isinstance(v, str) else "" for v in vals]), present)
            arr, present = self._str[c.field]
        elif isinstance(c.value, bool):
            return np.fromiter((matches(r, [c]) for r in self.rows), bool, count=self.n)
        else:
            if c.field not in self._num:
                self._num[c.field] = np.array([float(v) if isinstance(v, (int, float)) and not isinstance(v, bool)
                                               else np.nan for v in (r.get(c.field) for r in self.rows)])
            arr = self._num[c.field]
            present = ~np.isnan(arr)
        with np.errstate(invalid="ignore"):
            cmp = {"gt": arr > c.value, "gte": arr >= c.value, "lt": arr < c.value, "lte": arr <= c.value}[c.op]
        return cmp & present

    def mask(self, conds: Sequence[Condition], alive: np.ndarray | None = None) -> np.ndarray:
        out = np.ones(self.n, bool) if alive is None else alive[: self.n].copy()
        for c in conds:
            if c.op in ("eq", "ne", "in"):
                index = self._eq_index(c.field)
                values = c.value if c.op == "in" else [c.value]
                rows = [index.get(self._key(v)) for v in values]
                hit = self._rows_mask(np.concatenate([r for r in rows if r is not None])) if any(
                    r is not None for r in rows) else np.zeros(self.n, bool)
                out &= ~hit if c.op == "ne" else hit
            else:
                out &= self._range(c)
        return out
