"""Property tests (hypothesis) for the filter grammar and the memory-query contract: any JSON-like input is
either accepted or refused with a ValueError naming the field (never another exception), the columnar filter
agrees with the row-by-row one on any rows (huge stored integers included), and every accepted request
serializes back to strict JSON."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from retrieval.contract import MemoryQueryRequest
from retrieval.filters import MAX_FILTER_FIELDS, ColumnIndex, matches, parse_filter
from strata.api_errors import error_body

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.booleans(), st.integers(min_value=-(10**30), max_value=10**30), st.integers(min_value=10**308, max_value=10**320),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.sampled_from(["\ud800", "2024-01-01", "a", "b"]), st.none())
json_like = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.one_of(st.sampled_from(["eq", "ne", "in", "gt", "gte", "lt", "lte", "after", "team", "n"]), st.text(max_size=4)),
    inner, max_size=4), max_leaves=12)


@FAST
@given(st.dictionaries(st.text(max_size=6), json_like, max_size=5))
def test_parse_filter_accepts_or_names_the_problem(spec: dict) -> None:
    try:
        conds = parse_filter(spec)
    except ValueError as exc:
        assert str(exc).startswith("metadata_filter")
        return
    for c in conds:
        assert c.op in ("eq", "ne", "in", "gt", "gte", "lt", "lte")
        values = c.value if c.op == "in" else [c.value]
        assert all(not isinstance(v, float) or math.isfinite(v) for v in values)


field_names = st.sampled_from(["team", "n", "tags", "date", "flag", "missing"])
valid_scalar = st.one_of(st.booleans(), st.integers(-5, 5), st.sampled_from([2.5, -1.0, 1e300]),
                         st.sampled_from(["a", "b", "x", "2024-03-01"]), st.integers(-(2**70), 2**70))
condition = st.one_of(valid_scalar, st.lists(valid_scalar, max_size=3),
                      st.dictionaries(st.sampled_from(["eq", "ne", "gt", "gte", "lt", "lte"]), valid_scalar,
                                      min_size=1, max_size=2),
                      st.builds(lambda v: {"in": v}, st.lists(valid_scalar, max_size=3)))
stored_value = st.one_of(st.none(), valid_scalar, st.integers(10**400, 10**401), st.lists(valid_scalar, max_size=3))
rows = st.lists(st.dictionaries(field_names.filter(lambda f: f != "missing"), stored_value, max_size=5), max_size=25)


@FAST
@given(rows, st.dictionaries(field_names, condition, min_size=1, max_size=3))
def test_columns_agree_with_row_by_row_matching(data: list[dict], spec: dict) -> None:
    conds = parse_filter(spec)
    expected = np.array([matches(r, conds) for r in data], bool)
    assert np.array_equal(ColumnIndex(data, max_fields=2).mask(conds), expected)


def test_many_unknown_fields_cost_nothing_and_caches_stay_bounded() -> None:
    data = [{"team": "a", f"f{i}": i} for i in range(2000)]
    cols = ColumnIndex(data, max_fields=8)
    for start in range(0, 60, 10):
        spec = {f"f{i}": {"ne": -1} for i in range(start, start + 10)}
        cols.mask(parse_filter(spec))
        cols.mask(parse_filter({f"unknown{i}": 1 for i in range(MAX_FILTER_FIELDS)}))
    assert len(cols._cols) <= 8
    assert not cols.mask(parse_filter({"nowhere": 1})).any()
    assert cols.mask(parse_filter({"nowhere": {"ne": 1}})).all()


def test_huge_stored_number_does_not_break_the_field() -> None:
    data = [{"year": 10**400}, {"year": 2020}, {"year": "2021"}]
    cols = ColumnIndex(data)
    assert cols.mask(parse_filter({"year": {"gt": 2000}})).tolist() == [True, True, False]
    assert cols.mask(parse_filter({"year": 2020})).tolist() == [False, True, False]
    assert cols.mask(parse_filter({"year": {"in": [2020, "2021"]}})).tolist() == [False, True, True]


@pytest.mark.parametrize("bad", [{"year": 10**400}, {"year": {"gt": 10**400}}, {"year": {"in": [1, 10**400]}},
                                 {"year": float("nan")}, {"year": {"lt": float("inf")}}, {"\ud800": 1},
                                 {"t": "\udfff"}, {"d": {"after": 1}}, {"d": {}}, {"d": {"eq": None}},
                                 {f"f{i}": 1 for i in range(MAX_FILTER_FIELDS + 1)}])
def test_invalid_filters_are_value_errors(bad: dict) -> None:
    with pytest.raises(ValueError, match="metadata_filter"):
        parse_filter(bad)


requests = st.fixed_dictionaries(
    {"query_id": st.one_of(st.text(max_size=5), st.just("\ud800")), "search_text": st.one_of(st.text(max_size=12), st.just("\udc00x"))},
    optional={"top_k": st.one_of(st.integers(-5, 2000), st.booleans(), st.floats(), st.integers(10**30, 10**31)),
              "hybrid_params": st.dictionaries(st.sampled_from(["dense_weight", "sparse_weight", "rrf_k_constant", "x"]),
                                               st.one_of(st.floats(), st.integers(-10, 10**400), st.booleans(), st.text(max_size=2)),
                                               max_size=3),
              "metadata_filter": st.dictionaries(st.text(max_size=4), json_like, max_size=3)})


@FAST
@given(requests)
def test_contract_accepts_only_what_serializes(body: dict) -> None:
    try:
        request = MemoryQueryRequest.model_validate(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        raw = error_body([(list(e["loc"]), e["msg"], e["type"]) for e in errors])
        assert json.loads(raw)["detail"]  # the refusal itself always serializes
        return
    dumped = request.model_dump_json(by_alias=True)
    json.loads(dumped, parse_constant=lambda c: pytest.fail(f"non-finite {c} accepted"))
    assert isinstance(request.top_k, int) and not isinstance(request.top_k, bool) and 1 <= request.top_k <= 1000
    hp = request.hybrid_params
    assert hp is None or all(math.isfinite(v) for v in (hp.dense_weight, hp.sparse_weight, hp.rrf_k_constant))
