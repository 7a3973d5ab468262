"""The graph in Chinese and Polish: entities, linking, the walk's lift and routing, beside English on parallel text.

    python -m bench.graph_languages [--data DIR] [--polaq-paragraphs N] [--sample 100] [--embedder e5]

Corpora (each indexed as a Strata workspace, one paragraph per chunk, offline extraction, the default embedder or
``--embedder``'s):
- XQuAD's 240 paragraphs in English and in Chinese (``qa/xquad_en.jsonl``, ``qa/xquad_zh.jsonl``): the same
  paragraphs and questions in both languages, so every figure has its English twin;
- PolAQ's paragraphs (``qa/polaq_manual_pl.jsonl``, the first ``--polaq-paragraphs`` by a stable hash), indexed
  twice: with names in their base form (the extractor's default in a Polish document) and with names as written
  (``extraction.name_base_forms`` false, the peer: every case of a name its own entity).

Figures per corpus:
- ``entities_per_paragraph`` and ``seen_once`` (share of entities mentioned by one chunk); the Chinese/English
  ratio of entities per paragraph;
- ``spans``: share of questions with a span that spells an entity's name (the lexicon's match, whatever the
  span means there); ``linked``: share naming at least one entity by the walk's judgement (a span that is
  mostly an ordinary word in the corpus, "type" for an entity "Types", names none:
  ``retrieval.graph_name_share``); ``seeded``: share whose graph walk starts from an entity, as the engine
  routes a question (``Engine.route``, the path of ``POST /v1/ask``);
- ``recall_at_5`` of the question's own paragraph, by the default ranking and by the default without the graph
  list (``graph_weight`` 0);
- ``routed_local``: share of these single-paragraph factual questions the router sends local, over the
  questions of articles the router was never trained on (``routing.train.in_router_sample``: it trains on the
  English, Chinese and Polish questions of a fixed eighth of the articles, the same in every file);
- a sample of ``--sample`` Chinese entities (by a stable hash) printed for reading: are they terms?

Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from core.records import stable_hash
from core.settings import ComputeSettings
from core.threads import configure

WORK = Path(tempfile.gettempdir()) / "strata-bench-graph-languages"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def corpus_file(name: str, rows: list[dict[str, Any]]) -> tuple[Path, dict[str, str]]:
    """A BEIR corpus of the rows' distinct paragraphs, and each paragraph's id by its text."""
    ids: dict[str, str] = {}
    docs = []
    for r in rows:
        if r["context"] not in ids:
            ids[r["context"]] = f"{name}-p{len(ids):05d}"
            docs.append({"_id": ids[r["context"]], "title": r["title"], "text": r["context"]})
    path = WORK / "corpora" / f"{name}-{stable_hash(json.dumps(docs, ensure_ascii=False), size=6)}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return path, ids


def measure(name: str, rows: list[dict[str, Any]], base_forms: bool = True, embedder: str | None = None
            ) -> tuple[dict[str, Any], Any]:
    import shutil

    from bench.multihop import bench_settings
    from extraction.fingerprint import fingerprint_of
    from strata.extractor_record import recorded_extractor
    from strata.pipeline import index_folder
    from strata.workspace import Workspace
    from routing.train import in_router_sample

    from strata.engine import Engine

    path, ids = corpus_file(name, rows)
    folder = WORK / f"{path.stem}-{'base' if base_forms else 'written'}{'-' + embedder if embedder else ''}"
    settings = bench_settings(folder, embedder)
    settings = settings.model_copy(update={"extraction": settings.extraction.model_copy(
        update={"name_base_forms": base_forms})})
    ws = Workspace(folder)
    if ws.current() is not None and recorded_extractor(ws) != fingerprint_of(settings):
        shutil.rmtree(folder)  # made by another extractor: its figures would be stale
    if Workspace(folder).current() is None:
        (folder / "corpus").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, folder / "corpus" / "corpus.jsonl")
        index_folder(folder / "corpus", settings)
    engine = Engine(settings)
    snap = engine.current
    lexicon, index = snap.lexicon, snap.index
    counts = [e.chunks for e in lexicon.entities]
    n_par = len(ids)
    spans = linked = seeded = local = unseen = rec = rec_ng = 0
    for r in rows:
        decision = engine.route(r["question"])
        spans += bool(lexicon.find_spans(r["question"]))
        linked += index.graph_walk is not None and index.graph_walk.link(r["question"]).by_name
        seeded += bool(decision.graph_seeds)
        if not in_router_sample(r["title"]):
            unseen += 1
            local += decision.route == "local"
        want = ids[r["context"]]
        top = [h.document_id for h in index.search(r["question"], 5)]
        top_ng = [h.document_id for h in index.search(r["question"], 5, graph_weight=0)]
        rec += want in top
        rec_ng += want in top_ng
    n = len(rows)
    fig = {"corpus": name, "paragraphs": n_par, "questions": n, "entities": len(counts),
           "entities_per_paragraph": round(len(counts) / max(1, n_par), 2),
           "seen_once": round(sum(c == 1 for c in counts) / max(1, len(counts)), 3),
           "spans": round(spans / n, 3), "linked": round(linked / n, 3), "seeded": round(seeded / n, 3), "routed_local": round(local / max(1, unseen), 3),
           "routed_questions": unseen,
           "recall_at_5": round(rec / n, 3), "recall_at_5_no_graph": round(rec_ng / n, 3)}
    engine.close()
    return fig, lexicon


def main() -> None:
    from answers.train import DATA

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--polaq-paragraphs", type=int, default=400)
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--embedder", default=None,
                    help="a retrieval.embedder for every corpus (e5: the one that reads Chinese and Polish, whose "
                         "entities then get vectors and link by them too); default: the settings' (auto: MiniLM when "
                         "installed)")
    args = ap.parse_args()
    configure(ComputeSettings())
    results = []
    en, zh = (_jsonl(args.data / "qa" / f"xquad_{lang}.jsonl") for lang in ("en", "zh"))
    fig_en, _ = measure("xquad-en", en, embedder=args.embedder)
    fig_zh, lex_zh = measure("xquad-zh", zh, embedder=args.embedder)
    results += [fig_en, fig_zh]
    ratio = fig_zh["entities_per_paragraph"] / max(1e-9, fig_en["entities_per_paragraph"])
    linked_ratio = fig_zh["linked"] / max(1e-9, fig_en["linked"])
    spans_ratio = fig_zh["spans"] / max(1e-9, fig_en["spans"])
    polaq = _jsonl(args.data / "qa" / "polaq_manual_pl.jsonl")
    keep = sorted({r["context"] for r in polaq}, key=lambda c: stable_hash("graph-languages", c, size=8))
    keep_set = set(keep[:args.polaq_paragraphs])
    pl_rows = [r for r in polaq if r["context"] in keep_set]
    fig_pl, _ = measure("polaq", pl_rows, embedder=args.embedder)
    fig_pl_written, _ = measure("polaq", pl_rows, base_forms=False, embedder=args.embedder)
    fig_pl_written["corpus"] = "polaq (names as written)"
    results += [fig_pl, fig_pl_written]
    print(f"{'corpus':<26}{'ent/par':>8}{'once':>7}{'spans':>7}{'linked':>8}{'seeded':>8}{'R@5':>7}{'R@5 ng':>8}"
          f"{'local':>7}")
    for f in results:
        print(f"{f['corpus']:<26}{f['entities_per_paragraph']:>8}{f['seen_once']:>7}{f['spans']:>7}{f['linked']:>8}"
              f"{f['seeded']:>8}"
              f"{f['recall_at_5']:>7}{f['recall_at_5_no_graph']:>8}{f['routed_local']:>7}")
    print(f"Chinese / English entities per paragraph: {ratio:.2f}; linked share: {linked_ratio:.2f} (spans: "
          f"{spans_ratio:.2f})")
    names = sorted(lex_zh.entities, key=lambda e: stable_hash("sample", e.name, size=8))[:args.sample]
    print("sample of Chinese entities (read them: are they terms a reader would name?):")
    print(", ".join(f"{e.name}({e.type})" for e in names))
    print(json.dumps({"results": results, "zh_en_entities_ratio": round(ratio, 3),
                      "zh_en_walk_linked_ratio": round(linked_ratio, 3), "zh_en_spans_ratio": round(spans_ratio, 3),
                      "sample_zh": [e.name for e in names]}, ensure_ascii=False))


if __name__ == "__main__":
    main()
