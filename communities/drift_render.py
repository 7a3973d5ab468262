"""The drift report as Markdown, JSON and a self-contained HTML page (inline SVG, no scripts, no network).

Every form says what to do next (the refresh command and what it costs) and what each status means. The
Markdown is compact enough for a Prefect artifact: one four-column table (title, status, score, age), the
per-community details below it. The HTML page adds two charts: drift by community, labelled by title (each label
shortened to fit left of its bar), with the thresholds drawn; and the report statuses across index runs, with axes,
counts, dates and a legend; its table of reports is sorted by drift and paged (50 rows a page, each a ``<details>``). The history
is taken as given: one point per index run, oldest first, each ``{"generated_at", "totals", "generation"?}``.
"""

from __future__ import annotations

import html
import json
from datetime import datetime
from typing import Any, Sequence

from communities.drift import DriftEntry, DriftReport
from core.text.shorten import shorten

STATUSES = ("stale", "drifting", "fallback", "fresh")  # most urgent first
COLORS = {"stale": "#c0392b", "drifting": "#e67e22", "fallback": "#8e44ad", "fresh": "#27ae60"}
DEFAULT_THRESHOLDS = {"drifting": 0.1, "stale": 0.35}


def _thresholds(report: DriftReport) -> dict[str, float]:
    return {**DEFAULT_THRESHOLDS, **(report.thresholds or {})}


def status_meanings(report: DriftReport) -> dict[str, str]:
    """One line per status and per existence: what it means and what to do about it."""
    t = _thresholds(report)
    return {
        "fresh": f"drift below {t['drifting']:g}: the report still matches its community; nothing to do.",
        "drifting": f"drift from {t['drifting']:g} to {t['stale']:g}: some members, descriptions, relations or "
                    "sources changed; the report is mostly right but misses the changes.",
        "stale": f"drift of {t['stale']:g} or more, or the community is gone: the report no longer describes "
                 "its community; refresh it.",
        "fallback": "inputs unchanged, but the report was written by the extractive fallback after an LLM call "
                    "failed; a refresh with the LLM configured rewrites it.",
        "exists": "the community is still there under the same id.",
        "merged": "the community now also holds members that were summarized in other reports.",
        "split": "the community is gone: its old members now sit in several communities of its level; a refresh "
                 "removes this report (the new communities have their own).",
        "dissolved": "the community is gone and no community of its level holds two or more of its old members; "
                     "a refresh removes this report.",
    }


def _money(value: float) -> str:
    return f"${value:.4f}" if value else "$0 (offline: the extractive writer makes no LLM call)"


def _cost(est: dict[str, float]) -> str:
    return (f"about {int(est['input_tokens']):,} input and {int(est['output_tokens']):,} output tokens, "
            f"{_money(est['cost_usd'])}")


def next_steps(report: DriftReport) -> list[str]:
    """What to do, as sentences with the commands to run (plain text, commands in backticks)."""
    t, totals = _thresholds(report), report.totals
    drifting = totals.get("drifting", 0)
    gone = sum(1 for e in report.entries if e.existence in ("dissolved", "split"))
    est = report.refresh_estimate
    rewrite = int(est["reports"])  # stale and fallback reports of communities that still exist
    if not (rewrite or drifting or gone):
        return ["Nothing to do: every report matches the community it summarizes."]
    stale_cmd = f"`strata drift --refresh --threshold {t['stale']:g}`"
    steps = []
    if rewrite:
        steps.append(f"Refresh the stale reports: {stale_cmd} rewrites {rewrite} report(s) ({_cost(est)}).")
    if gone:
        steps.append(f"{gone} report(s) belong to communities that are gone (dissolved or split): "
                     + ("the same command removes them." if rewrite else f"{stale_cmd} removes them (no LLM call).")
                     + " Communities that now hold their members have reports of their own.")
    if drifting:
        wide = report.refresh_drifting_estimate or est
        steps.append(f"Refresh the drifting ones too: `strata drift --refresh` (threshold {t['drifting']:g}) rewrites "
                     f"{int(wide['reports'])} report(s) ({_cost(wide)}).")
    return steps


def _details(e: DriftEntry) -> str:
    parts = [f"{e.existence}", f"members +{e.members_added}/-{e.members_removed}",
             f"descriptions changed {e.descriptions_changed}", f"relations +{e.relations_added}/-{e.relations_removed}",
             f"sources changed {e.sources_changed}, deleted {e.sources_deleted}", f"written {e.created_at} ({e.mode}"
             + (f", {e.model}" if e.model else "") + ")"]
    if e.successors:
        parts.append("members now in " + ", ".join(e.successors))
    return "; ".join(parts)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(report: DriftReport) -> str:
    t = report.totals
    counts = ", ".join(f"{t.get(s, 0)} {s}" for s in STATUSES if t.get(s, 0) or s != "fallback")
    meanings = status_meanings(report)
    lines = ["# Strata drift report", "", f"Generated {report.generated_at}: {t['reports']} reports ({counts}).", "",
             "## What to do", ""]
    lines += [f"- {s}" for s in next_steps(report)]
    lines += ["", "| title | status | score | age (days) |", "|---|---|---|---|"]
    lines += [f"| {_md(e.title)} | {e.status} | {e.score:.2f} | {e.age_days:g} |" for e in report.entries]
    lines += ["", "## What the statuses mean", ""]
    lines += [f"- **{k}**: {v}" for k, v in meanings.items()]
    lines += ["", "## Details", ""]
    lines += [f"- **{_md(e.title)}** (`{e.community_id}`, level {e.level}, {e.status} {e.score:.3f}): {_details(e)}"
              for e in report.entries]
    lines += ["", "Drift = " + " + ".join(f"{v:g} × {k}" for k, v in report.weights.items()) + " (each from 0 to 1)."]
    return "\n".join(lines) + "\n"


def to_json(report: DriftReport) -> str:
    data = report.to_dict()
    data["next_steps"] = next_steps(report)
    data["status_meanings"] = status_meanings(report)
    return json.dumps(data, indent=2, ensure_ascii=False)


# -- charts ---------------------------------------------------------------------------------------------------
def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


LABEL_CHARS = 44  # characters of a bar's label: at 12px, about 7px each, within the 330px left of the bars
TABLE_PAGE = 50  # rows of the reports table per page


def by_drift(report: DriftReport) -> list[DriftEntry]:
    """The entries most drifted first (then by level and title)."""
    return sorted(report.entries, key=lambda e: (-e.score, e.level, e.title, e.community_id))


def _paged_table(entries: Sequence[DriftEntry]) -> str:
    """The reports table, most drifted first, in pages of :data:`TABLE_PAGE` rows: each page a ``<details>``
    (the first open), so a long table needs no script to be read a page at a time."""
    head = "<tr><th>title</th><th>status</th><th>score</th><th>age (days)</th></tr>"
    pages = []
    for i in range(0, len(entries), TABLE_PAGE):
        rows = "".join(
            f"<tr><td title='{_esc(e.community_id)}'>{_esc(e.title)}</td><td style='color:{COLORS.get(e.status, '#333')}'>"
            f"{e.status}</td><td class=n>{e.score:.2f}</td><td class=n>{e.age_days:g}</td></tr>"
            for e in entries[i:i + TABLE_PAGE])
        last = min(len(entries), i + TABLE_PAGE)
        pages.append(f"<details class='page'{' open' if i == 0 else ''}><summary>reports {i + 1}–{last} of "
                     f"{len(entries)}</summary><table>{head}{rows}</table></details>")
    return "".join(pages) or "<p>No reports yet.</p>"


def _bars(report: DriftReport, limit: int = 40) -> str:
    entries = by_drift(report)[:limit]
    if not entries:
        return "<p>No reports yet.</p>"
    row, width, label_w, right = 22, 900, 330, 100
    plot_w = width - label_w - right
    top, height = 26, 26 + row * len(entries) + 34
    x = lambda v: label_w + plot_w * v  # noqa: E731
    th = _thresholds(report)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             f'role="img" aria-label="drift score by community" font-family="system-ui,sans-serif">']
    for name in ("drifting", "stale"):  # threshold lines, labelled above the plot
        parts.append(f'<line x1="{x(th[name]):.1f}" y1="{top - 4}" x2="{x(th[name]):.1f}" y2="{height - 30}" '
                     f'stroke="{COLORS[name]}" stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{x(th[name]):.1f}" y="{top - 8}" font-size="11" text-anchor="middle" '
                     f'fill="{COLORS[name]}">{name} ≥ {th[name]:g}</text>')
    for i, e in enumerate(entries):
        y = top + i * row
        w = max(1.5, plot_w * e.score)
        label = shorten(f"L{e.level} · {e.title}", LABEL_CHARS)  # (the whole label fits left of the bars)
        parts.append(f'<text x="{label_w - 8}" y="{y + 14}" font-size="12" text-anchor="end">{_esc(label)}'
                     f'<title>{_esc(e.title)} ({e.community_id})</title></text>')
        parts.append(f'<rect x="{label_w}" y="{y + 2}" width="{w:.1f}" height="{row - 6}" fill="{COLORS.get(e.status, "#888")}">'
                     f'<title>{_esc(e.title)} ({e.community_id}): {e.score:.3f}, {e.status}, {e.existence}</title></rect>')
        note = f"{e.score:.2f}" + ("" if e.existence == "exists" else f" {e.existence}")
        parts.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 14}" font-size="11">{_esc(note)}</text>')
    axis_y = top + row * len(entries) + 2
    parts.append(f'<line x1="{label_w}" y1="{axis_y}" x2="{label_w + plot_w}" y2="{axis_y}" stroke="#444"/>')
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line x1="{x(tick):.1f}" y1="{axis_y}" x2="{x(tick):.1f}" y2="{axis_y + 4}" stroke="#444"/>')
        parts.append(f'<text x="{x(tick):.1f}" y="{axis_y + 16}" font-size="11" text-anchor="middle">{tick:g}</text>')
    parts.append(f'<text x="{label_w + plot_w / 2:.1f}" y="{axis_y + 30}" font-size="11" text-anchor="middle">'
                 f'drift score (0 = unchanged, 1 = nothing left of what the report was written from)</text>')
    parts.append("</svg>")
    extra = f"<p>{len(report.entries) - limit} more in the table below.</p>" if len(report.entries) > limit else ""
    return "".join(parts) + extra


def _run_label(point: dict[str, Any]) -> tuple[str, str]:
    raw = str(point.get("generated_at", ""))
    try:
        when = datetime.fromisoformat(raw)
        date, clock = when.strftime("%Y-%m-%d"), when.strftime("%H:%M")
    except ValueError:
        date, clock = raw[:10], raw[11:16]
    gen = point.get("generation")
    return date, (f"{clock} · gen {gen}" if gen is not None else clock)


def _history(history: Sequence[dict[str, Any]], limit: int = 30) -> str:
    runs = [h for h in history if isinstance(h.get("totals"), dict)][-limit:]
    if not runs:
        return "<p>No index runs recorded yet: each index run adds one point.</p>"
    shown = [s for s in STATUSES if any(r["totals"].get(s, 0) for r in runs)] or ["fresh"]
    width, left, right, top, plot_h, bottom = 900, 56, 20, 30, 220, 70
    height = top + plot_h + bottom
    peak = max(1, max(sum(r["totals"].get(s, 0) for s in shown) for r in runs))
    step = max(1, -(-peak // 5))  # about five gridlines, at whole counts
    y_max = step * -(-peak // step)
    slot = (width - left - right) / len(runs)
    bar = min(60.0, slot * 0.7)
    y = lambda v: top + plot_h * (1 - v / y_max)  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             f'role="img" aria-label="report status across runs" font-family="system-ui,sans-serif">']
    for v in range(0, y_max + 1, step):
        parts.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{width - right}" y2="{y(v):.1f}" stroke="#e3e3e3"/>')
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end">{v}</text>')
    parts.append(f'<text x="14" y="{top + plot_h / 2:.1f}" font-size="11" text-anchor="middle" '
                 f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">reports</text>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#444"/>')
    parts.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{width - right}" y2="{top + plot_h}" stroke="#444"/>')
    every = max(1, int(len(runs) / 12 + 0.999))  # at most about a dozen date labels
    for i, r in enumerate(runs):
        cx = left + slot * (i + 0.5)
        base = 0
        for s in reversed(shown):  # fresh at the bottom, stale on top
            n = r["totals"].get(s, 0)
            if not n:
                continue
            parts.append(f'<rect x="{cx - bar / 2:.1f}" y="{y(base + n):.1f}" width="{bar:.1f}" '
                         f'height="{y(base) - y(base + n):.1f}" fill="{COLORS[s]}"><title>{_esc(r.get("generated_at"))}: '
                         f'{n} {s}</title></rect>')
            if y(base) - y(base + n) >= 13:
                parts.append(f'<text x="{cx:.1f}" y="{(y(base) + y(base + n)) / 2 + 4:.1f}" font-size="10" '
                             f'text-anchor="middle" fill="#fff">{n}</text>')
            base += n
        parts.append(f'<text x="{cx:.1f}" y="{y(base) - 4:.1f}" font-size="11" text-anchor="middle">{base}</text>')
        if i % every == 0 or i == len(runs) - 1:
            date, clock = _run_label(r)
            parts.append(f'<text x="{cx:.1f}" y="{top + plot_h + 15}" font-size="10" text-anchor="middle">{_esc(date)}</text>')
            parts.append(f'<text x="{cx:.1f}" y="{top + plot_h + 28}" font-size="10" text-anchor="middle" '
                         f'fill="#666">{_esc(clock)}</text>')
    parts.append(f'<text x="{left + (width - left - right) / 2:.1f}" y="{top + plot_h + 46}" font-size="11" '
                 f'text-anchor="middle">index runs, oldest to latest</text>')
    lx = left
    for s in shown:
        parts.append(f'<rect x="{lx}" y="{height - 14}" width="11" height="11" fill="{COLORS[s]}"/>')
        parts.append(f'<text x="{lx + 15}" y="{height - 4}" font-size="11">{s}</text>')
        lx += 24 + 7 * len(s) + 20
    parts.append("</svg>")
    return "".join(parts)


def _legend(report: DriftReport) -> str:
    items = "".join(f'<li><b style="color:{COLORS.get(k, "#333")}">{k}</b>: {_esc(v)}</li>'
                    for k, v in status_meanings(report).items())
    return f"<ul class='meanings'>{items}</ul>"


def _code(text: str) -> str:
    """Backticked commands in a sentence as <code>, the rest escaped."""
    pieces = text.split("`")
    return "".join(f"<code>{_esc(p)}</code>" if i % 2 else _esc(p) for i, p in enumerate(pieces))


def to_html(report: DriftReport, history: Sequence[dict[str, Any]]) -> str:
    t = report.totals
    counts = ", ".join(f'<b style="color:{COLORS[s]}">{t.get(s, 0)} {s}</b>' for s in STATUSES
                       if t.get(s, 0) or s != "fallback")
    steps = "".join(f"<li>{_code(s)}</li>" for s in next_steps(report))
    compact = _paged_table(by_drift(report))
    details = "".join(
        f"<tr><td>{_esc(e.title)}</td><td><code>{_esc(e.community_id)}</code></td><td class=n>{e.level}</td>"
        f"<td>{e.existence}</td><td class=n>+{e.members_added}/-{e.members_removed}</td><td class=n>{e.descriptions_changed}</td>"
        f"<td class=n>+{e.relations_added}/-{e.relations_removed}</td><td class=n>{e.sources_changed}/{e.sources_deleted}</td>"
        f"<td>{_esc(e.mode)}{(' ' + _esc(e.model)) if e.model else ''}</td><td>{_esc(', '.join(e.successors))}</td></tr>"
        for e in report.entries)
    weights = " + ".join(f"{v:g} × {k}" for k, v in report.weights.items())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Strata drift report</title>
<style>body{{font-family:system-ui,sans-serif;margin:1.5em 2em;max-width:1100px;color:#1d2430}}
table{{border-collapse:collapse;font-size:13px;margin:.5em 0}}td,th{{border:1px solid #ddd;padding:3px 8px;text-align:left}}
th{{background:#f4f4f4}}td.n{{text-align:right;font-variant-numeric:tabular-nums}}
.todo{{background:#f3f7fc;border:1px solid #cfe0f6;border-radius:8px;padding:.6em 1.2em}}.todo li{{margin:.3em 0}}
code{{background:#eef1f5;padding:1px 4px;border-radius:3px}}.meanings{{font-size:13px}}.meanings li{{margin:.15em 0}}
h2{{margin-top:1.4em}}details.page summary{{cursor:pointer;color:#2f6fb3;margin:.3em 0}}</style></head><body>
<h1>Strata drift report</h1>
<p>Generated {_esc(report.generated_at)}: <b>{t['reports']}</b> reports: {counts}.</p>
<div class="todo"><h2 style="margin-top:.3em">What to do</h2><ul>{steps}</ul></div>
<h2>Drift by community (most drifted first)</h2>
{_bars(report)}
<h2>Report status across index runs</h2>
{_history(history)}
<h2>Reports (most drifted first)</h2>
{compact}
<h2>What the statuses mean</h2>
{_legend(report)}
<h2>Details</h2>
<p>Drift = {_esc(weights)}, each part from 0 to 1. Counts are of what really changed or is gone.</p>
<table><tr><th>title</th><th>community</th><th>level</th><th>existence</th><th>members +/-</th><th>descriptions changed</th>
<th>relations +/-</th><th>sources changed/deleted</th><th>written by</th><th>members now in</th></tr>{details}</table>
</body></html>
"""
