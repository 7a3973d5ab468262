"""Router accuracy on labeled questions, beside a plain list of generic cue words measured on the same questions.

    python -m bench.router [--questions FILE.jsonl ...] [--split dev] [--corpus NAME=FOLDER ...] [--threshold T] [--no-embedder]

Rows are ``{"question", "route"}`` with an optional ``corpus``. Rows that name a corpus are routed with that
corpus's index evidence: each corpus is indexed offline into a temporary workspace (``infra`` is
samples/infra-notes; ``dulce`` and ``christmas_carol`` come from the shared data folder). Rows that name no
corpus are routed as a question without an index (neutral index features), which is how questions written
over other corpora are measured. The default file is tests/data/router_questions.jsonl; ``--questions`` takes
several (``--questions tests/data/router/*.jsonl tests/data/router_questions.jsonl --split dev`` is the
training command's development split).

Figures: ``accuracy``, ``local_recall`` and ``global_recall`` of the route; ``both_rate``, the share of
questions whose confidence falls below ``retrieval.route_confidence_threshold`` (answered from both sides);
``right_or_both``, the share routed right or answered from both sides; ``p50_ms``, the routing time per
question with the question's embedding included (one BLAS thread). The peer (``baseline_accuracy``) routes
global exactly when one of the generic cue words of ``routing.model.GENERIC_CUES`` occurs (the router itself
reads no word list). Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from core.settings import StrataSettings
from routing.router import Router
from routing.model import GENERIC_CUES
from routing.train import cue_peer, is_dev

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
DEFAULT_CORPORA = {
    "infra": ROOT / "samples" / "infra-notes",
    "dulce": SHARED / "dulce",
    "christmas_carol": SHARED / "christmas_carol" / "a-christmas-carol.txt",
}


def index_routers(names: set[str], corpora: dict[str, Path], tmp: Path, embedder: str) -> dict[str, Router]:
    """A router over an offline index of each named corpus (BM25 and the entity lexicon; no chunk vectors,
    which routing does not read)."""
    from strata.engine import Engine
    from strata.pipeline import index_folder

    routers = {}
    for name in sorted(names):
        if name not in corpora or not corpora[name].exists():
            raise SystemExit(f"corpus {name!r} is not available; give it with --corpus {name}=FOLDER")
        settings = StrataSettings(data_dir=tmp / name, extraction={"mode": "offline"}, retrieval={"embedder": "none"})
        index_folder(corpora[name], settings)
        engine = Engine(settings)
        routers[name] = Router.for_index(engine.index, engine.lexicon, embedder)
    return routers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, nargs="+", default=[ROOT / "tests" / "data" / "router_questions.jsonl"])
    ap.add_argument("--corpus", action="append", default=[], help="NAME=FOLDER; rows may name their corpus")
    ap.add_argument("--threshold", type=float, default=None, help="both-sides threshold (default: the setting)")
    ap.add_argument("--no-embedder", action="store_true", help="route without MiniLM (the evidence-only model)")
    ap.add_argument("--split", choices=("all", "dev"), default="all",
                    help="dev: only the rows of the router's development split (never seen in training)")
    ap.add_argument("--show-misses", action="store_true")
    args = ap.parse_args()
    from threadpoolctl import threadpool_limits

    threshold = StrataSettings().retrieval.route_confidence_threshold if args.threshold is None else args.threshold
    corpora = dict(DEFAULT_CORPORA)
    for item in args.corpus:
        name, _, folder = item.partition("=")
        corpora[name] = Path(folder)
    rows = []
    for path in args.questions:
        got = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not got or any("question" not in r or r.get("route") not in ("local", "global") for r in got):
            raise SystemExit(f"{path}: every row needs 'question' and 'route' ('local' or 'global')")
        rows += got
    if args.split == "dev":
        rows = [r for r in rows if is_dev(r["question"])]
    embedder = None if args.no_embedder else "auto"
    with tempfile.TemporaryDirectory() as tmp, threadpool_limits(1):
        routers = index_routers({r["corpus"] for r in rows if r.get("corpus")}, corpora, Path(tmp), embedder)  # type: ignore[arg-type]
        bare = Router.for_index(None, None, embedder)
        for r in rows[:5]:  # warm-up: first calls allocate
            (routers.get(r.get("corpus")) or bare).route(r["question"])
        times, right, both, peer, misses = [], [], [], [], []
        for r in rows:
            router = routers.get(r.get("corpus")) or bare
            if router.embedder is not None:
                router.embedder.clear()  # time the embedding too, not a memo hit
            t0 = time.perf_counter()
            d = router.route(r["question"])
            times.append((time.perf_counter() - t0) * 1000)
            right.append(d.route == r["route"])
            both.append(d.confidence < threshold)
            peer.append(cue_peer(r["question"]) == r["route"])
            if d.route != r["route"]:
                misses.append(f"  expected {r['route']:<6} got {d.route:<6} ({d.confidence:.2f}) {r['question']}")
    n = len(rows)
    loc = [ok for ok, r in zip(right, rows) if r["route"] == "local"]
    glo = [ok for ok, r in zip(right, rows) if r["route"] == "global"]
    out = {"accuracy": round(sum(right) / n, 4), "n": n, "baseline_accuracy": round(sum(peer) / n, 4),
           "local_recall": round(sum(loc) / max(1, len(loc)), 4), "global_recall": round(sum(glo) / max(1, len(glo)), 4),
           "p50_ms": round(statistics.median(times), 2), "both_rate": round(sum(both) / n, 4),
           "right_or_both": round(sum(a or b for a, b in zip(right, both)) / n, 4), "threshold": threshold,
           "embedder": "none" if args.no_embedder or bare.embedder is None else "all-MiniLM-L6-v2"}
    print(f"{'router':<44}{'accuracy':>10}{'local':>8}{'global':>8}{'both':>7}{'r|both':>8}{'n':>6}")
    print(f"{'Strata router (' + out['embedder'] + ' + evidence)':<44}{out['accuracy']:>10.3f}{out['local_recall']:>8.3f}"
          f"{out['global_recall']:>8.3f}{out['both_rate']:>7.3f}{out['right_or_both']:>8.3f}{n:>6}")
    pl = [ok for ok, r in zip(peer, rows) if r["route"] == "local"]
    pg = [ok for ok, r in zip(peer, rows) if r["route"] == "global"]
    print(f"{f'{len(GENERIC_CUES)} generic cue words (peer)':<44}{out['baseline_accuracy']:>10.3f}"
          f"{sum(pl) / max(1, len(pl)):>8.3f}{sum(pg) / max(1, len(pg)):>8.3f}{0.0:>7.3f}{out['baseline_accuracy']:>8.3f}{n:>6}")
    print(f"routing time per question: p50 {out['p50_ms']} ms (embedding included), threshold {threshold}")
    if args.show_misses and misses:
        print("misrouted:")
        print("\n".join(misses))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
