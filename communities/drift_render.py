"""The drift report as Markdown, JSON and a self-contained HTML page with two charts (inline SVG, no scripts,
no network): drift by community, and stale/drifting/fresh counts across runs."""

from __future__ import annotations

import html
import json
from typing import Sequence

from communities.drift import DriftReport

_COLORS = {"stale": "#c0392b", "drifting": "#e67e22", "fresh": "#27ae60", "fallback": "#8e44ad"}


def to_markdown(report: DriftReport) -> str:
    t = report.totals
    est = report.refresh_estimate
    lines = [
        "# Strata drift report", "",
        f"Generated {report.generated_at}: {t['reports']} reports — {t['stale']} stale, {t['drifting']} drifting, "
        f"{t['fresh']} fresh.", "",
        f"Re-summarizing the stale reports: {int(est['reports'])} calls, about {int(est['input_tokens']):,} input and "
        f"{int(est['output_tokens']):,} output tokens, ${est['cost_usd']:.4f}.", "",
        "Weights: " + ", ".join(f"{k} {v}" for k, v in report.weights.items()), "",
        "| community | level | status | drift | existence | age (days) | members +/- | descriptions changed | relations +/- | sources changed/deleted | title |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in report.entries:
        title = e.title.replace("|", "\\|")
        lines.append(f"| {e.community_id} | {e.level} | {e.status} | {e.score:.3f} | {e.existence} | {e.age_days} | "
                     f"+{e.members_added}/-{e.members_removed} | {e.descriptions_changed} | +{e.relations_added}/-{e.relations_removed} | "
                     f"{e.sources_changed}/{e.sources_deleted} | {title} |")
    return "\n".join(lines) + "\n"


def to_json(report: DriftReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False)


def _bars(report: DriftReport, limit: int = 40) -> str:
    entries = report.entries[:limit]
    row, width, label_w = 18, 640, 170
    height = row * len(entries) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="drift score by community">']
    for i, e in enumerate(entries):
        y = 10 + i * row
        w = max(1.0, (width - label_w - 60) * e.score)
        parts.append(f'<text x="{label_w - 6}" y="{y + 12}" font-size="11" text-anchor="end">{html.escape(e.community_id)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{row - 4}" fill="{_COLORS[e.status]}">'
                     f'<title>{html.escape(e.title)}: {e.score:.3f} ({e.status})</title></rect>')
        parts.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 12}" font-size="11">{e.score:.2f}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _history(history: Sequence[dict]) -> str:
    runs = list(history)[-30:]
    if not runs:
        return "<p>No earlier runs.</p>"
    width, height, pad = 640, 200, 30
    top = max(1, max(sum(r["totals"].get(k, 0) for k in ("stale", "drifting", "fresh")) for r in runs))
    bar = (width - 2 * pad) / len(runs)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 20}" role="img" '
             f'aria-label="report status across runs">']
    for i, r in enumerate(runs):
        y = height
        for status in ("stale", "drifting", "fresh"):
            n = r["totals"].get(status, 0)
            h = (height - pad) * n / top
            y -= h
            parts.append(f'<rect x="{pad + i * bar:.1f}" y="{y:.1f}" width="{max(1.0, bar - 3):.1f}" height="{h:.1f}" '
                         f'fill="{_COLORS[status]}"><title>{html.escape(r["generated_at"])}: {n} {status}</title></rect>')
    parts.append(f'<text x="{pad}" y="{height + 15}" font-size="11">oldest</text>')
    parts.append(f'<text x="{width - pad}" y="{height + 15}" font-size="11" text-anchor="end">latest</text></svg>')
    return "".join(parts)


def to_html(report: DriftReport, history: Sequence[dict]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(e.community_id)}</td><td>{e.level}</td><td style='color:{_COLORS[e.status]}'>{e.status}</td>"
        f"<td>{e.score:.3f}</td><td>{e.existence}</td><td>{e.age_days}</td><td>+{e.members_added}/-{e.members_removed}</td>"
        f"<td>{e.descriptions_changed}</td><td>+{e.relations_added}/-{e.relations_removed}</td>"
        f"<td>{e.sources_changed}/{e.sources_deleted}</td><td>{html.escape(e.title)}</td></tr>" for e in report.entries)
    t, est = report.totals, report.refresh_estimate
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Strata drift report</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}}table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ddd;padding:3px 6px;text-align:left}}th{{background:#f4f4f4}}</style></head><body>
<h1>Strata drift report</h1>
<p>Generated {html.escape(report.generated_at)}: <b>{t['reports']}</b> reports — <b style="color:{_COLORS['stale']}">{t['stale']} stale</b>,
<b style="color:{_COLORS['drifting']}">{t['drifting']} drifting</b>, <b style="color:{_COLORS['fresh']}">{t['fresh']} fresh</b>.
Re-summarizing the stale ones: {int(est['reports'])} calls, about {int(est['input_tokens']):,} input and {int(est['output_tokens']):,} output tokens, ${est['cost_usd']:.4f}.</p>
<h2>Drift by community (most stale first)</h2>
{_bars(report)}
<h2>Report status across runs</h2>
{_history(history)}
<h2>All reports</h2>
<table><tr><th>community</th><th>level</th><th>status</th><th>drift</th><th>existence</th><th>age (days)</th><th>members +/-</th>
<th>descriptions changed</th><th>relations +/-</th><th>sources changed/deleted</th><th>title</th></tr>{rows}</table>
</body></html>
"""
