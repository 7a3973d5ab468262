"""Metadata filters, applied inside both engines before ranking (never after truncation).

A filter maps a field to a condition:
- a scalar: equality (``{"service": "billing"}``);
- a list: any of the values (``{"team": ["core", "payments"]}``);
- an object of ``gte``/``gt``/``lte``/``lt``/``eq``/``ne``/``in``: comparisons, e.g. date ranges on ISO dates
  (``{"date": {"gte": "2024-01-01", "lt": "2024-07-01"}}``), which compare as strings, or numbers.
Several fields must all match. A chunk's fields are its document's metadata plus ``document_id`` and ``source``.
A list-valued metadata field matches when any of its values matches.

The grammar is a pydantic model (:data:`MetadataFilter`, a condition per field discriminated by its JSON
shape), so it appears in the API's OpenAPI schema with its limits: at most :data:`MAX_FILTER_FIELDS` fields,
:data:`MAX_FILTER_VALUES` values in a list, strings of valid Unicode up to :data:`MAX_STRING_CHARS`, integers
and numbers that are finite and within a float's range (an integer too large for a float is refused, one that
is stored in metadata compares as +-infinity).
"""

from __future__ import annotations

import math
import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Annotated, Any, Mapping, Sequence, Union

import numpy as np
from pydantic import (BaseModel, ConfigDict, Discriminator, Field, PlainValidator, Tag, TypeAdapter, ValidationError,
                      WithJsonSchema, model_validator)

OPERATORS = ("eq", "ne", "in", "gt", "gte", "lt", "lte")
Scalar = (str, int, float, bool)
MAX_FILTER_FIELDS = 64
MAX_FILTER_VALUES = 1000
MAX_STRING_CHARS = 1024
MAX_FIELD_CHARS = 128
MAX_NUMBER = sys.float_info.max


def check_unicode(text: str) -> str:
    """``text`` unchanged, or ValueError when it holds a lone surrogate (not encodable as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"text must be valid Unicode (a lone surrogate at position {exc.start})") from None
    return text


def _scalar(v: Any) -> str | int | float | bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        if abs(v) > MAX_NUMBER:
            raise ValueError("number out of range: at most 1.7976931348623157e308 in magnitude")
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError("number must be finite (no NaN or Infinity)")
        return v
    if isinstance(v, str):
        if len(v) > MAX_STRING_CHARS:
            raise ValueError(f"string longer than {MAX_STRING_CHARS} characters")
        return check_unicode(v)
    raise ValueError("expected a string, number or boolean")


FilterScalar = Annotated[
    Union[bool, int, float, str],
    PlainValidator(_scalar),
    WithJsonSchema({"anyOf": [
        {"type": "string", "maxLength": MAX_STRING_CHARS},
        {"type": "number", "minimum": -MAX_NUMBER, "maximum": MAX_NUMBER},
        {"type": "boolean"},
    ], "description": "a string, a finite number or a boolean"}),
]
FilterValues = Annotated[list[FilterScalar], Field(max_length=MAX_FILTER_VALUES)]
FieldName = Annotated[str, PlainValidator(lambda v: _field_name(v)),
                      WithJsonSchema({"type": "string", "minLength": 1, "maxLength": MAX_FIELD_CHARS})]


def _field_name(v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise ValueError("field names must be non-empty strings")
    if len(v) > MAX_FIELD_CHARS:
        raise ValueError(f"field name longer than {MAX_FIELD_CHARS} characters")
    return check_unicode(v)


def _operators_schema(schema: dict[str, Any]) -> None:
    # In the schema an operator is given a value or left out: null is not offered, and one is required.
    for prop in schema.get("properties", {}).values():
        options = [o for o in prop.pop("anyOf", []) if o.get("type") != "null"]
        if options:
            prop.update(options[0])
        prop.pop("default", None)
    schema["minProperties"] = 1


class FilterOperators(BaseModel):
    """Comparisons on one field; every operator given must hold."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, json_schema_extra=_operators_schema)

    eq: FilterScalar | None = None
    ne: FilterScalar | None = None
    in_: FilterValues | None = Field(None, alias="in")
    gt: FilterScalar | None = None
    gte: FilterScalar | None = None
    lt: FilterScalar | None = None
    lte: FilterScalar | None = None

    @model_validator(mode="after")
    def _some_operator(self) -> "FilterOperators":
        if not self.given():
            raise ValueError(f"empty condition: give at least one of {', '.join(OPERATORS)}")
        return self

    def given(self) -> list[tuple[str, Any]]:
        return [(op, getattr(self, "in_" if op == "in" else op)) for op in OPERATORS
                if getattr(self, "in_" if op == "in" else op) is not None]


def _condition_kind(v: Any) -> str:
    if isinstance(v, (Mapping, FilterOperators)):
        return "operators"
    if isinstance(v, list):
        return "any_of"
    return "value"


FilterCondition = Annotated[
    Union[Annotated[FilterScalar, Tag("value")], Annotated[FilterValues, Tag("any_of")],
          Annotated[FilterOperators, Tag("operators")]],
    Discriminator(_condition_kind),
]
MetadataFilter = Annotated[dict[FieldName, FilterCondition], Field(
    max_length=MAX_FILTER_FIELDS,
    description="field -> a value (equality), a list (any of the values), or an object of operators "
                "(eq, ne, in, gt, gte, lt, lte); every field must match")]
_FILTER = TypeAdapter(MetadataFilter)


@dataclass(frozen=True, slots=True)
class Condition:
    field: str
    op: str
    value: Any


_TAGS = ("value", "any_of", "operators")


def tidy_filter_error(loc: tuple[str | int, ...], type_: str, msg: str) -> tuple[tuple[str | int, ...], str]:
    """A filter error's location without the discriminator's tags, and its message in the grammar's words
    (an unknown operator is named with the allowed ones)."""
    loc = tuple(p for p in loc if p not in _TAGS)
    msg = msg.removeprefix("Value error, ")
    if type_ == "extra_forbidden" and loc:
        msg = f"unknown operator {loc[-1]!r} (use one of {', '.join(OPERATORS)})"
        loc = loc[:-1]
    return loc, msg


def filter_errors(exc: ValidationError) -> list[tuple[tuple[str | int, ...], str]]:
    """The errors of a filter's validation as (location inside the filter, message)."""
    return [tidy_filter_error(tuple(e["loc"]), e["type"], e["msg"])
            for e in exc.errors(include_url=False, include_input=False)]


def validate_filter(spec: Any) -> dict[str, Any]:
    """The filter validated against the grammar (pydantic ValidationError otherwise)."""
    return _FILTER.validate_python(spec)


def parse_filter(spec: Mapping[str, Any] | None) -> list[Condition]:
    """Validate a filter and turn it into conditions; ValueError names the offending field or operator."""
    if not spec:
        return []
    if not isinstance(spec, Mapping):
        raise ValueError("metadata_filter must be an object")
    try:
        checked = validate_filter(dict(spec))
    except ValidationError as exc:
        raise ValueError("; ".join(".".join(["metadata_filter", *map(str, loc)]) + f": {msg}"
                                   for loc, msg in filter_errors(exc))) from None
    conds: list[Condition] = []
    for field, cond in checked.items():
        if isinstance(cond, FilterOperators):
            conds.extend(Condition(field, op, value) for op, value in cond.given())
        elif isinstance(cond, list):
            conds.append(Condition(field, "in", cond))
        else:
            conds.append(Condition(field, "eq", cond))
    return conds


def limit_errors(spec: Mapping[str, Any] | None, max_fields: int, max_values: int) -> list[tuple[tuple[str, ...], str]]:
    """Violations of the configured (tighter than the grammar's) limits on a validated filter."""
    if not spec:
        return []
    out: list[tuple[tuple[str, ...], str]] = []
    if len(spec) > max_fields:
        out.append(((), f"at most {max_fields} fields per filter (server.max_filter_fields), got {len(spec)}"))
    for field, cond in spec.items():
        values = cond if isinstance(cond, list) else cond.in_ if isinstance(cond, FilterOperators) else None
        if values is not None and len(values) > max_values:
            out.append(((field,), f"at most {max_values} values in a list (server.max_filter_values), got {len(values)}"))
    return out


def _number(v: Any) -> float:
    """A stored number as a float; integers too large for one become +-inf (their order is kept)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


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


@dataclass
class _FieldColumns:
    """One field's columns: rows by equality key, and (built on first range query) numbers and strings."""

    eq: dict[Any, np.ndarray]
    has_list: bool
    num: np.ndarray | None = None
    str_: tuple[np.ndarray, np.ndarray] | None = None


class ColumnIndex:
    """Per-field columns over the rows' metadata, built on first use, so a filter costs numpy operations
    instead of a Python loop over every row. Semantics are those of :func:`matches`.

    A field no row holds costs nothing (its condition is decided at once), and at most ``max_fields`` fields'
    columns are kept (least recently used first out), so filters naming many fields cannot grow memory."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], max_fields: int = 64) -> None:
        self.rows = rows
        self.n = len(rows)
        self.max_fields = max_fields
        self.fields: frozenset[str] = frozenset(k for r in rows for k in r)
        self._cols: OrderedDict[str, _FieldColumns] = OrderedDict()

    @staticmethod
    def _key(v: Any) -> Any:
        # ints and floats that are equal hash equal, so ("n", 2) finds ("n", 2.0); no float() of huge ints.
        return ("b", v) if isinstance(v, bool) else ("s", v) if isinstance(v, str) else ("n", v)

    def _columns(self, field: str) -> _FieldColumns:
        col = self._cols.get(field)
        if col is not None:
            self._cols.move_to_end(field)
            return col
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
        col = _FieldColumns({k: np.asarray(v, np.int64) for k, v in lists.items()}, has_list)
        self._cols[field] = col
        while len(self._cols) > self.max_fields:
            self._cols.popitem(last=False)
        return col

    def _rows_mask(self, rows: np.ndarray) -> np.ndarray:
        m = np.zeros(self.n, bool)
        m[rows] = True
        return m

    def _range(self, c: Condition, col: _FieldColumns) -> np.ndarray:
        if col.has_list or isinstance(c.value, bool):
            return np.fromiter((matches(r, [c]) for r in self.rows), bool, count=self.n)
        if isinstance(c.value, str):
            if col.str_ is None:
                vals = [r.get(c.field) for r in self.rows]
                present = np.fromiter((isinstance(v, str) for v in vals), bool, count=self.n)
                col.str_ = (np.array([v if isinstance(v, str) else "" for v in vals]), present)
            arr, present = col.str_
        else:
            if col.num is None:
                col.num = np.array([_number(v) if isinstance(v, (int, float)) and not isinstance(v, bool)
                                    else np.nan for v in (r.get(c.field) for r in self.rows)])
            arr = col.num
            present = ~np.isnan(arr)
        value = c.value if isinstance(c.value, str) else _number(c.value)
        with np.errstate(invalid="ignore"):
            cmp = {"gt": arr > value, "gte": arr >= value, "lt": arr < value, "lte": arr <= value}[c.op]
        return cmp & present

    def mask(self, conds: Sequence[Condition], alive: np.ndarray | None = None) -> np.ndarray:
        out = np.ones(self.n, bool) if alive is None else alive[: self.n].copy()
        for c in conds:
            if c.field not in self.fields:
                # No row holds the field: "ne" holds everywhere, every other operator nowhere.
                if c.op != "ne":
                    out[:] = False
                continue
            col = self._columns(c.field)
            if c.op in ("eq", "ne", "in"):
                values = c.value if c.op == "in" else [c.value]
                rows = [col.eq.get(self._key(v)) for v in values]
                hit = self._rows_mask(np.concatenate([r for r in rows if r is not None])) if any(
                    r is not None for r in rows) else np.zeros(self.n, bool)
                out &= ~hit if c.op == "ne" else hit
            else:
                out &= self._range(c, col)
        return out
