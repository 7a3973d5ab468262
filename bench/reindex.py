"""Incremental reindex beside a full index, measured in the same run.

    python -m bench.reindex [--corpus scifact|carol] [--fraction 0.01] [--llm]

Indexes the corpus in full, changes --fraction of its documents (appends a sentence to each), reindexes, and
reports LLM calls and wall time of both. Offline (the default) the calls are counted as an LLM run would make
them (one per extracted chunk, one per report written); with --llm the pipeline runs in LLM mode against the
test suite's OpenAI-compatible server on 127.0.0.1 and the server counts real requests. SciFact comes from
../shared/data/scifact/corpus.jsonl; "carol" is A Christmas Carol split into its staves. Last line: one JSON
object with calls_ratio and wall_ratio.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import tempfile
import time
from pathlib import Path

from strata.pipeline import index_folder
from core.settings import StrataSettings

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def prepare(corpus: str, folder: Path) -> list[str]:
    """Write the corpus into ``folder``; returns the document ids."""
    folder.mkdir(parents=True)
    if corpus == "scifact":
        shutil.copy(SHARED / "scifact" / "corpus.jsonl", folder / "corpus.jsonl")
        return [json.loads(l)["_id"] for l in open(folder / "corpus.jsonl", encoding="utf-8")]
    text = (SHARED / "christmas_carol" / "a-christmas-carol.txt").read_text(encoding="utf-8")
    parts = re.split(r"\n(?=STAVE [IVX]+)", text)
    ids = []
    for i, part in enumerate(parts):
        (folder / f"part-{i:02d}.txt").write_text(part, encoding="utf-8")
        ids.append(f"part-{i:02d}.txt")
    return ids


def change(corpus: str, folder: Path, ids: list[str], fraction: float, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    chosen = sorted(rng.sample(ids, max(1, round(len(ids) * fraction))))
    note = " A later revision adds that the result was confirmed in an independent replication."
    if corpus == "scifact":
        path = folder / "corpus.jsonl"
        rows = [json.loads(l) for l in open(path, encoding="utf-8")]
        wanted = set(chosen)
        for row in rows:
            if row["_id"] in wanted:
                row["text"] += note
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        for doc_id in chosen:
            p = folder / doc_id
            p.write_text(p.read_text(encoding="utf-8") + note, encoding="utf-8")
    return chosen


def calls_of(run, server) -> int:  # type: ignore[no-untyped-def]
    if server is not None:
        return len(server.chat_requests)
    return run.chunks_extracted + run.reports_written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", choices=["scifact", "carol"], default="scifact")
    ap.add_argument("--fraction", type=float, default=0.01)
    ap.add_argument("--llm", action="store_true", help="run in LLM mode against the test server")
    args = ap.parse_args()
    server = None
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        folder = tmpdir / "corpus"
        ids = prepare(args.corpus, folder)
        kwargs: dict = {"data_dir": tmpdir / "ws", "extraction": {"mode": "offline"}}
        if args.llm:
            from tests.llm_server import FakeLLMServer

            server = FakeLLMServer().start()
            kwargs.update(extraction={"mode": "llm"}, llm={"base_url": server.base_url, "model": "test-model", "max_concurrency": 8})
        settings = StrataSettings(**kwargs)
        t0 = time.perf_counter()
        full = index_folder(folder, settings)
        full_s = time.perf_counter() - t0
        full_calls = calls_of(full, server)
        changed = change(args.corpus, folder, ids, args.fraction)
        if server is not None:
            server.reset()
        t0 = time.perf_counter()
        inc = index_folder(folder, settings)
        inc_s = time.perf_counter() - t0
        inc_calls = calls_of(inc, server)
        if server is not None:
            server.stop()
    mode = "llm (test server)" if args.llm else "offline (calls counted)"
    print(f"corpus {args.corpus}: {len(ids)} documents, {len(changed)} changed ({args.fraction:.1%}), mode {mode}")
    print(f"{'run':<22}{'LLM calls':>12}{'wall s':>10}{'chunks extracted':>18}{'reports written':>17}")
    print(f"{'full index':<22}{full_calls:>12}{full_s:>10.2f}{full.chunks_extracted:>18}{full.reports_written:>17}")
    print(f"{'incremental reindex':<22}{inc_calls:>12}{inc_s:>10.2f}{inc.chunks_extracted:>18}{inc.reports_written:>17}")
    print(json.dumps({"calls_ratio": round(inc_calls / max(1, full_calls), 4), "wall_ratio": round(inc_s / full_s, 4),
                      "full_calls": full_calls, "reindex_calls": inc_calls, "full_s": round(full_s, 2),
                      "reindex_s": round(inc_s, 2), "documents": len(ids), "changed": len(changed)}))


if __name__ == "__main__":
    main()
