"""Router accuracy on labeled questions, beside a cue-word baseline measured on the same questions.

    python -m bench.router [--questions FILE.jsonl] [--corpus NAME=FOLDER ...]

The default set (tests/data/router_questions.jsonl) holds questions about the sample corpora, half local and
half global, each with its corpus: ``infra`` (samples/infra-notes), ``dulce`` and ``christmas_carol`` (from
../shared/data). Each corpus is indexed offline into a temporary workspace, so the router can read its index.
The baseline routes global exactly when a fixed list of cue words matches. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path

from retrieval.router import _STRONG_GLOBAL, _WEAK_GLOBAL, EntityLexicon, route_question
from strata.pipeline import Workspace, index_folder
from core.settings import StrataSettings

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
DEFAULT_CORPORA = {
    "infra": ROOT / "samples" / "infra-notes",
    "dulce": SHARED / "dulce",
    "christmas_carol": SHARED / "christmas_carol" / "a-christmas-carol.txt",
}


def cue_baseline(question: str) -> str:
    low = question.lower()
    return "global" if any(re.search(p, low) for p in _STRONG_GLOBAL + _WEAK_GLOBAL) else "local"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", type=Path, default=ROOT / "tests" / "data" / "router_questions.jsonl")
    ap.add_argument("--corpus", action="append", default=[], help="NAME=FOLDER; questions name their corpus")
    args = ap.parse_args()
    corpora = dict(DEFAULT_CORPORA)
    for item in args.corpus:
        name, _, folder = item.partition("=")
        corpora[name] = Path(folder)
    rows = [json.loads(l) for l in args.questions.read_text().splitlines() if l.strip()]
    lexicons: dict[str, EntityLexicon] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted({r.get("corpus", "infra") for r in rows}):
            settings = StrataSettings(data_dir=Path(tmp) / name, extraction={"mode": "offline"})
            index_folder(corpora[name], settings)
            lexicons[name] = EntityLexicon.load(Workspace(settings.data_dir).lexicon_path)
    ours = base = 0
    misses = []
    for r in rows:
        decision = route_question(r["question"], lexicons[r.get("corpus", "infra")])
        ours += decision.route == r["route"]
        base += cue_baseline(r["question"]) == r["route"]
        if decision.route != r["route"]:
            misses.append(f"  expected {r['route']:<6} got {decision.route:<6} {r['question']}  ({'; '.join(decision.reasons[:-1])})")
    n = len(rows)
    print(f"{'router':<34}{'accuracy':>10}{'n':>6}")
    print(f"{'Strata router (cues + index)':<34}{ours / n:>10.3f}{n:>6}")
    print(f"{'cue words only (baseline)':<34}{base / n:>10.3f}{n:>6}")
    if misses:
        print("misrouted:")
        print("\n".join(misses))
    print(json.dumps({"accuracy": round(ours / n, 4), "n": n, "baseline_accuracy": round(base / n, 4)}))


if __name__ == "__main__":
    main()
