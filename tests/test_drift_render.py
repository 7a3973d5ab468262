"""The drift report's counts for communities that are gone, and what its Markdown and HTML forms tell a reader."""

from __future__ import annotations

import json
import re

from communities.context import GraphIndex, inputs_manifest
from communities.drift import compute_drift
from communities.drift_render import next_steps, status_meanings, to_html, to_json, to_markdown
from core.records import Community, Entity, Finding, GraphSnapshot, Relation, Report
from core.settings import CommunitySettings

WHEN = "2026-01-01T00:00:00+00:00"


def _report(cid: str, title: str, entities: dict[str, str], relations: dict[str, str], chunks: dict[str, str],
            mode: str = "offline") -> Report:
    return Report(cid, 0, title, "summary", (Finding("f", tuple(chunks)),), 1.0, "fp", mode, "", WHEN,
                  inputs=json.dumps({"entities": entities, "relations": relations, "chunks": chunks}))


def _graph() -> GraphSnapshot:
    return GraphSnapshot((Entity("e1", "alpha", "service", "a", ("c1",)), Entity("e2", "beta", "service", "b", ("c1",))),
                         (Relation("r1", "e1", "e2", "alpha calls beta", ("c1",)),))


def test_dissolved_community_counts_only_what_is_gone() -> None:
    """Re-clustering can dissolve a community whose sources were not edited: nothing counts as deleted."""
    old = _report("old", "alpha and beta", {"e1": "x", "e2": "y"}, {"r1": "z"}, {"c1": "h1"})
    report = compute_drift([old], [Community("new", 0, None, ("e1", "e2", "e9"))], _graph(), {"c1": "h1"},
                           CommunitySettings())
    e = report.entries[0]
    assert e.existence == "dissolved" and e.status == "stale"  # two or more members in one community: not split
    assert (e.members_removed, e.relations_removed, e.sources_changed, e.sources_deleted) == (0, 0, 0, 0)
    assert e.successors == ("new",)


def test_dissolved_community_counts_deleted_and_changed_sources() -> None:
    old = _report("old", "alpha and beta", {"e1": "x", "e2": "y", "e3": "w"}, {"r1": "z", "r2": "v"},
                  {"c1": "h1", "c2": "h2"})
    report = compute_drift([old], [], _graph(), {"c1": "edited"}, CommunitySettings())
    e = report.entries[0]
    assert (e.members_removed, e.relations_removed, e.sources_changed, e.sources_deleted) == (1, 1, 1, 1)


def _mixed_report():  # type: ignore[no-untyped-def]
    """One report of each kind: unchanged, drifted, written by the fallback, and one of a dissolved community."""
    graph = _graph()
    settings = CommunitySettings()
    drifted = Community("c0_drift", 0, None, ("e1", "e2"))
    now = inputs_manifest(GraphIndex(graph, {"c1": "h1"}, settings.report_passages).context(drifted))
    reports = [
        _report("c0_gone", "A dissolved | piped title", {"e7": "x"}, {}, {"c7": "h7"}),
        # written when a third member, since removed, belonged to it: members distance 1/3, drift 0.1
        _report("c0_drift", "Alpha and beta, drifted", {**now["entities"], "e5": "x"}, now["relations"], now["chunks"]),
        _report("c0_same", "Beta as it was", {}, {}, {}, mode="fallback"),
    ]
    communities = [drifted, Community("c0_same", 0, None, ())]
    return compute_drift(reports, communities, graph, {"c1": "h1"}, settings)


def test_markdown_is_a_compact_table_with_details_below() -> None:
    report = _mixed_report()
    md = to_markdown(report)
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert table[0] == "| title | status | score | age (days) |"
    assert len(table) == 2 + len(report.entries)
    for row in table:  # an escaped pipe in a title does not add a column
        assert len(re.split(r"(?<!\\)\|", row)) == 6
    assert md.index("## What to do") < md.index("| title |") < md.index("## Details")
    assert f"`strata drift --refresh --threshold {CommunitySettings().drift_stale:g}`" in md
    for status in ("fresh", "drifting", "stale", "fallback", "dissolved", "split", "merged"):
        assert f"- **{status}**: " in md
    assert "`c0_gone`" in md.split("## Details")[1]


def test_next_steps_name_the_commands_and_say_when_nothing_is_to_do() -> None:
    report = _mixed_report()
    steps = next_steps(report)
    assert [e.status for e in report.entries] == ["stale", "drifting", "fallback"]
    assert any("strata drift --refresh --threshold" in s and "rewrites 1 report(s)" in s for s in steps)  # the fallback
    assert any("gone" in s for s in steps)
    assert any("`strata drift --refresh` (threshold" in s for s in steps)
    only_fresh = compute_drift([], [], _graph(), {}, CommunitySettings())
    assert next_steps(only_fresh) == ["Nothing to do: every report matches the community it summarizes."]
    data = json.loads(to_json(report))
    assert data["next_steps"] == steps and set(data["status_meanings"]) == set(status_meanings(report))
    assert data["thresholds"] == {"drifting": 0.1, "stale": 0.35}


def test_html_charts_have_titles_axes_dates_and_a_legend() -> None:
    report = _mixed_report()
    history = [{"generated_at": "2026-03-01T10:00:00+00:00", "generation": 4, "totals": {"fresh": 3, "stale": 0}},
               {"generated_at": "2026-03-02T11:30:00+00:00", "generation": 5,
                "totals": {"fresh": 1, "drifting": 1, "stale": 1, "fallback": 1}}]
    page = to_html(report, history)
    bars = page.split('aria-label="drift score by community"')[1].split("</svg>")[0]
    assert "Alpha and beta, drifted" in bars and "(c0_drift)</title>" in bars  # titles label the bars, ids on hover
    assert ">0.5<" in bars and "drift score" in bars and "stale ≥ 0.35" in bars
    runs = page.split('aria-label="report status across runs"')[1].split("</svg>")[0]
    assert "2026-03-01" in runs and "2026-03-02" in runs and "gen 5" in runs
    assert ">reports<" in runs and ">4<" in runs  # the y axis and the run's total
    for status in ("stale", "drifting", "fallback", "fresh"):
        assert f">{status}</text>" in runs  # legend
    assert "No index runs recorded yet" in to_html(report, [])
