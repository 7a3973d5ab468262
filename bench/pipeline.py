"""The whole offline pipeline at N documents, beside a plain vector index of the same chunks, in the same run.

    python -m bench.pipeline [--docs 10000 [30000 ...]] [--source mixed|real|synthetic] [--change 0.01]
                             [--changes 1] [--embedder minilm|hashing|...] [--keep FOLDER]

For each N:

1. **The corpus** (below) is written as one ``.txt`` file per document, 1,000 to a folder.
2. **The peer**, in its own process: the same loader and chunker, the same embedder (every chunk embedded, as
   the pipeline embeds them) and BM25 over the same terms, saved to disk. Nothing else.
3. **The pipeline**, in its own process: ``strata index FOLDER --json`` on a fresh workspace (offline
   extraction, merge, communities, reports, chunk index, publish). Wall time, peak RSS (``wait4``) and the run's
   seconds per stage; the workspace's disk.
4. **Serving**, in its own process: load the published generation (``Engine``) and answer 200 memory queries
   (questions of the same third-party sets) through the memory-query contract; the load time, the resident
   memory after them, and the query p50; then one global question, the first to read the community reports,
   and the resident memory after it.
5. **A change of --change of the documents** (0.4 of them edited: a sentence replaced and one added; 0.3
   deleted; 0.3 new documents added), then ``strata index`` again: the incremental run's wall time and stages.
   ``--changes K`` makes K such changes one after another, each indexed (``later_changes``: the second on).
6. **The graph's shape**, read from the published generation: entities per chunk, entity degrees (relations),
   the first level's community sizes.

**The corpus.** Real documents first: every unique text of ../shared/data (SciFact's 5,183 abstracts, the two
multi-hop sets' 2,884 passages, and the contexts of the QA sets: SQuAD 2.0 and XQuAD in English, DRCD and
XQuAD in Chinese, PolAQ in Polish), about 11,000 in all, in a seeded random order. Past those, synthetic
documents: each takes 3 to 9 real sentences of one language (chosen in the real documents' proportions) from
random documents; in English and Polish sentences, one capitalized run of words (not the sentence's first word)
is replaced with a name drawn from a pool of real names (the multi-hop passages' titles and the QA sets'
article titles) with Zipf-distributed probability (exponent 1.0 over a seeded ranking), so a few names recur
across thousands of documents and most across a handful, as in an encyclopedia. The title line is such a name.
``--source real`` or ``synthetic`` builds N documents of one kind only, to compare the graph's shape.

Last line per N: one JSON object with ``docs``, ``index_s``, ``peer_index_s``, ``ratio``, ``peak_rss_mb``,
``peer_peak_rss_mb``, ``disk_mb``, ``peer_disk_mb``, ``serve_load_s``, ``serve_rss_mb`` (after the memory
queries), ``serve_rss_global_mb`` and ``first_global_s`` (after one global question, the first to read the
reports), ``query_p50_ms``,
``incremental_s``, ``incremental_share`` and ``stage_s`` / ``incremental_stage_s`` (seconds per stage),
``later_changes``, and
``shape``. Targets (issue #40): ratio <= 1.5 at each N; 100,000 documents in <= 2 h with peak RSS <= 6 GB;
serving them loads in <= 10 s, holds <= 2 GB and answers with a p50 <= 1.5x the 6k corpus's; incremental_share
<= 0.05.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
PER_FOLDER = 1000
QUERIES = 200
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")
_CAPITALIZED_RUN = re.compile(r"(?<=[a-ząćęłńóśźż,;:] )[A-ZĄĆĘŁŃÓŚŹŻ][\w'’-]+(?: [A-ZĄĆĘŁŃÓŚŹŻ][\w'’-]+)*")


# ---------------------------------------------------------------- the corpus

def _rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def real_documents() -> list[tuple[str, str, str]]:
    """(language, title, text) of every unique third-party text in ../shared/data."""
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()

    def add(lang: str, title: str, text: str) -> None:
        key = text.strip()
        if key and key not in seen:
            seen.add(key)
            out.append((lang, title.strip().replace("_", " "), key))

    for row in _rows(SHARED / "scifact" / "corpus.jsonl"):
        add("en", row.get("title", ""), row["text"])
    for name in ("musique_dev", "hotpotqa_dev"):
        for row in _rows(SHARED / "multihop" / name / "corpus.jsonl"):
            add("en", row.get("title", ""), row["text"])
    for name in ("squad2_dev_en", "xquad_en", "drcd_zh", "xquad_zh", "polaq_manual_pl"):
        for row in _rows(SHARED / "qa" / f"{name}.jsonl"):
            add(row["lang"], row.get("title", ""), row["context"])
    return out


def name_pool() -> list[str]:
    """Real names: the multi-hop passages' titles and the QA sets' article titles (Latin script)."""
    names: list[str] = []
    for name in ("musique_dev", "hotpotqa_dev"):
        names += [row.get("title", "") for row in _rows(SHARED / "multihop" / name / "corpus.jsonl")]
    for name in ("squad2_dev_en", "polaq_manual_pl"):
        names += [row.get("title", "").replace("_", " ") for row in _rows(SHARED / "qa" / f"{name}.jsonl")]
    return sorted({n.strip() for n in names if n.strip() and n.strip()[0].isupper()})


class Synthesizer:
    """Synthetic documents from real sentences, with names recurring by a Zipf law (see the module docstring)."""

    def __init__(self, real: list[tuple[str, str, str]], seed: int) -> None:
        self.rng = random.Random(seed)
        self.sentences: dict[str, list[str]] = {}
        for lang, _, text in real:
            self.sentences.setdefault(lang, []).extend(s for s in _SENTENCE.split(text) if len(s.split()) >= 4
                                                       or (lang == "zh" and len(s) >= 8))
        self.langs = [lang for lang, _, _ in real]
        names = name_pool()
        self.rng.shuffle(names)
        self.names = names
        weights = [1.0 / (rank + 1) for rank in range(len(names))]
        total = sum(weights)
        self.cumulative = [0.0] * len(names)
        acc = 0.0
        for i, w in enumerate(weights):
            acc += w / total
            self.cumulative[i] = acc

    def name(self) -> str:
        import bisect

        return self.names[min(bisect.bisect(self.cumulative, self.rng.random()), len(self.names) - 1)]

    def sentence(self, lang: str) -> str:
        s = self.rng.choice(self.sentences[lang])
        if lang == "zh":
            return s
        runs = list(_CAPITALIZED_RUN.finditer(s))
        if not runs:
            return s
        m = self.rng.choice(runs)
        return s[:m.start()] + self.name() + s[m.end():]

    def document(self) -> tuple[str, str, str]:
        lang = self.rng.choice(self.langs)
        glue = "" if lang == "zh" else " "
        return lang, self.name(), glue.join(self.sentence(lang) for _ in range(self.rng.randint(3, 9)))


def build_corpus(n: int, folder: Path, source: str, seed: int = 11) -> tuple[dict[Path, str], Synthesizer]:
    """Write ``n`` documents into ``folder``; returns their paths with their languages, and the synthesizer (for
    the change step)."""
    real = real_documents()
    random.Random(seed).shuffle(real)
    synth = Synthesizer(real, seed)
    docs = [] if source == "synthetic" else real[:n]
    if source == "real" and n > len(real):
        raise SystemExit(f"--source real: only {len(real)} real documents, asked for {n}")
    docs += [synth.document() for _ in range(n - len(docs))]
    paths: dict[Path, str] = {}
    for i, (lang, title, text) in enumerate(docs):
        path = folder / f"{i // PER_FOLDER:03d}" / f"d{i:06d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{title}\n\n{text}\n", encoding="utf-8")
        paths[path] = lang
    return paths, synth


def change_corpus(folder: Path, paths: dict[Path, str], synth: Synthesizer, fraction: float,
                  seed: int = 5, new: str = "new") -> dict[str, int]:
    """Edit, delete and add documents: ``fraction`` of the corpus in all (0.4 / 0.3 / 0.3). An edit replaces one
    sentence with another of the document's language and adds one; new documents go to the subfolder ``new``.
    ``paths`` is brought up to date (deleted paths out, new ones in), ready for another change."""
    rng = random.Random(seed)
    total = max(3, round(len(paths) * fraction))
    edits, deletes = round(total * 0.4), round(total * 0.3)
    adds = total - edits - deletes
    chosen = rng.sample(sorted(paths), edits + deletes)
    for path in chosen[:edits]:
        title, _, body = path.read_text(encoding="utf-8").partition("\n\n")
        lang = paths[path]
        parts = [s for s in _SENTENCE.split(body.strip()) if s]
        parts[rng.randrange(len(parts))] = synth.sentence(lang)
        glue = "" if lang == "zh" else " "
        path.write_text(f"{title}\n\n{glue.join(parts + [synth.sentence(lang)])}\n", encoding="utf-8")
    for path in chosen[edits:]:
        path.unlink()
        del paths[path]
    (folder / new).mkdir(exist_ok=True)
    for i in range(adds):
        lang, title, text = synth.document()
        path = folder / new / f"n{i:06d}.txt"
        path.write_text(f"{title}\n\n{text}\n", encoding="utf-8")
        paths[path] = lang
    return {"edited": edits, "deleted": deletes, "added": adds}


# ---------------------------------------------------------------- measured processes

def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run_measured(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Run ``cmd``; (wall seconds, its peak RSS in MB, its stdout). Stderr passes through (progress)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, cwd=ROOT, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.stderr.write(out[-4000:])
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed with exit code {proc.returncode}")
    return seconds, usage.ru_maxrss / 1024, out


def disk_mb(folder: Path) -> float:
    """Bytes under ``folder``, each file once however many hard links name it."""
    seen: set[int] = set()
    total = 0
    for path in folder.rglob("*"):
        st = path.lstat()
        if path.is_file() and st.st_ino not in seen:
            seen.add(st.st_ino)
            total += st.st_blocks * 512
    return total / 2**20


def peer(folder: Path, out: Path, embedder_name: str) -> None:
    """The plain vector index: load, chunk, embed every chunk, BM25 over the same terms, save."""
    import numpy as np

    from core.settings import StrataSettings
    from core.text.language import detect_language
    from core.threads import configure
    from extraction.chunking import chunk_documents
    from extraction.loader import load_folder
    from retrieval.bm25 import BM25Index
    from retrieval.embed import embed_with_progress, make_embedder
    from retrieval.tokenize import Tokenizer, TokenizerConfig

    settings = StrataSettings()
    configure(settings.compute)
    r = settings.retrieval
    chunks = chunk_documents(load_folder(folder).documents, settings.chunking)
    tokenizer = Tokenizer(TokenizerConfig(r.stopwords, r.stemming, r.polish_lemmas))
    bm25 = BM25Index(r.bm25_k1, r.bm25_b, r.bm25_epsilon)
    bm25.add(tokenizer(c.text, detect_language(c.text)) for c in chunks)
    bm25.commit()
    embedder = make_embedder(embedder_name, r.hashing_dim)
    assert embedder is not None, f"embedder {embedder_name!r} gives no vectors"
    vectors = embed_with_progress(embedder, [c.text for c in chunks], None)
    out.mkdir(parents=True)
    np.save(out / "vectors.npy", np.asarray(vectors, np.float32))
    bm25.save(out / "bm25")
    (out / "chunks.jsonl").write_text("".join(json.dumps({"id": c.id, "text": c.text}) + "\n" for c in chunks),
                                      encoding="utf-8")
    print(json.dumps({"chunks": len(chunks)}))


def questions(seed: int = 7) -> list[str]:
    """Questions of the same third-party sets (claims, multi-hop and QA questions, every language)."""
    qs = [row["text"] for row in _rows(SHARED / "scifact" / "queries_test.jsonl")]
    for name in ("musique_dev", "hotpotqa_dev"):
        qs += [row["text"] for row in _rows(SHARED / "multihop" / name / "queries.jsonl")]
    for name in ("squad2_dev_en", "drcd_zh", "polaq_manual_pl"):
        qs += [row["question"] for row in _rows(SHARED / "qa" / f"{name}.jsonl")][:300]
    random.Random(seed).shuffle(qs)
    return qs[:QUERIES]


def serve(data_dir: Path) -> None:
    """Load the published generation as a server does, answer the questions; print load time, RSS, latencies."""
    from core.settings import StrataSettings
    from retrieval.contract import MemoryQueryRequest
    from strata.engine import Engine

    qs = questions()
    rss_before = _rss_mb()
    t0 = time.perf_counter()
    engine = Engine(StrataSettings(data_dir=data_dir))
    assert engine.current is not None
    load_s = time.perf_counter() - t0
    rss_loaded = _rss_mb()
    times = []
    for i, q in enumerate(qs):
        t = time.perf_counter()
        engine.query(MemoryQueryRequest(query_id=f"q{i}", search_text=q, top_k=10))
        times.append((time.perf_counter() - t) * 1000)
    rss_queries = _rss_mb()
    # Then one global question: it reads the community reports (a process answering memory queries never does).
    t = time.perf_counter()
    engine.ask("What are the main topics of this corpus?", mode="global")
    global_s = time.perf_counter() - t
    engine.close()
    print(json.dumps({"serve_load_s": round(load_s, 2), "serve_rss_mb": round(rss_queries, 1),
                      "serve_rss_loaded_mb": round(rss_loaded, 1), "serve_rss_imports_mb": round(rss_before, 1),
                      "serve_rss_global_mb": round(_rss_mb(), 1), "first_global_s": round(global_s, 2),
                      "query_p50_ms": round(statistics.median(times), 2),
                      "query_p95_ms": round(sorted(times)[int(0.95 * (len(times) - 1))], 2)}))


def _quantiles(values: list[int]) -> dict[str, float]:
    if not values:
        return {}
    s = sorted(values)
    at = lambda q: s[min(len(s) - 1, int(q * (len(s) - 1)))]  # noqa: E731
    return {"mean": round(sum(s) / len(s), 2), "p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": s[-1]}


def shape(data_dir: Path) -> None:
    """The published graph's shape: entities per chunk, entity degree, the first level's community sizes."""
    from strata.generations import communities_from_json, read_graph
    from strata.workspace import Workspace

    current = Workspace(data_dir).current()
    assert current is not None, f"no published generation in {data_dir}"
    graph = read_graph(current.root)
    communities = communities_from_json(current.communities_path.read_text(encoding="utf-8"))
    per_chunk: dict[str, int] = {}
    for e in graph.entities:
        for c in e.chunk_ids:
            per_chunk[c] = per_chunk.get(c, 0) + 1
    chunks = current.manifest().get("chunks", len(per_chunk))
    degree: dict[str, int] = {e.id: 0 for e in graph.entities}
    for r in graph.relations:
        for end in (r.source_id, r.target_id):
            degree[end] = degree.get(end, 0) + 1
    level0 = [len(c.entity_ids) for c in communities if c.level == 0]
    ranked = sorted(degree.values(), reverse=True)
    # The degree distribution's tail exponent: the slope of log(rank) against log(degree) over the top 1,000.
    top = [(math.log(r + 1), math.log(d)) for r, d in enumerate(ranked[:1000]) if d > 0]
    slope = None
    if len(top) > 10:
        mx, my = sum(x for x, _ in top) / len(top), sum(y for _, y in top) / len(top)
        slope = round(sum((x - mx) * (y - my) for x, y in top) / sum((x - mx) ** 2 for x, _ in top), 3)
    print(json.dumps({"chunks": chunks, "entities": len(graph.entities), "relations": len(graph.relations),
                      "entities_per_chunk": _quantiles([per_chunk.get(c, 0) for c in per_chunk] +
                                                       [0] * max(0, chunks - len(per_chunk))),
                      "degree": _quantiles(list(degree.values())), "degree_rank_slope": slope,
                      "degree_one_share": round(sum(1 for d in degree.values() if d <= 1) / max(1, len(degree)), 3),
                      "level0_communities": len(level0), "level0_sizes": _quantiles(level0),
                      "levels": len({c.level for c in communities})}))


# ---------------------------------------------------------------- one N

def _json_tail(out: str) -> dict[str, Any]:
    lines = out.strip().splitlines()
    for i in range(len(lines) - 1, -1, -1):  # the last JSON object, on one line or pretty-printed
        if lines[i].startswith("{"):
            try:
                return json.loads("\n".join(lines[i:]))
            except ValueError:
                continue
    raise SystemExit(f"no JSON line in the output:\n{out[-2000:]}")


def _index_cmd(folder: Path, data_dir: Path) -> list[str]:
    return [sys.executable, "-m", "strata.cli", "index", str(folder), "--data-dir", str(data_dir), "--json"]


def one_size(n: int, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    folder, ws, peer_out = work / "corpus", work / "ws", work / "peer"
    for p in (folder, ws, peer_out):
        shutil.rmtree(p, ignore_errors=True)
    t0 = time.perf_counter()
    paths, synth = build_corpus(n, folder, args.source)
    print(f"[{n:,} documents] corpus written in {time.perf_counter() - t0:.1f} s ({disk_mb(folder):.0f} MB)",
          file=sys.stderr, flush=True)
    env = {**os.environ, "STRATA_RETRIEVAL__EMBEDDER": args.embedder, "STRATA_EXTRACTION__MODE": "offline",
           "STRATA_LLM__BASE_URL": "", "PREFECT_LOGGING_LEVEL": "WARNING"}
    me = [sys.executable, "-m", "bench.pipeline"]
    peer_s, peer_rss, _ = run_measured(me + ["_peer", str(folder), str(peer_out), args.embedder], env)
    print(f"[{n:,}] peer: {peer_s:.1f} s, peak {peer_rss:.0f} MB", file=sys.stderr, flush=True)
    index_s, index_rss, out = run_measured(_index_cmd(folder, ws), env)
    run = _json_tail(out)
    print(f"[{n:,}] pipeline: {index_s:.1f} s, peak {index_rss:.0f} MB", file=sys.stderr, flush=True)
    disk = disk_mb(ws)
    served = _json_tail(run_measured(me + ["_serve", str(ws)], env)[2])
    graph = _json_tail(run_measured(me + ["_shape", str(ws)], env)[2])
    changed = change_corpus(folder, paths, synth, args.change)
    inc_s, inc_rss, out = run_measured(_index_cmd(folder, ws), env)
    inc = _json_tail(out)
    later = []  # --changes above 1: each a further change of the changed corpus, indexed again
    for k in range(2, args.changes + 1):
        more = change_corpus(folder, paths, synth, args.change, seed=5 + k, new=f"new{k}")
        more_s, more_rss, more_out = run_measured(_index_cmd(folder, ws), env)
        later.append({"change": more, "incremental_s": round(more_s, 1), "incremental_share": round(more_s / index_s, 4),
                      "incremental_peak_rss_mb": round(more_rss),
                      "incremental_stage_s": _json_tail(more_out).get("stage_seconds", {})})
        print(f"[{n:,}] change {k}: {more_s:.1f} s", file=sys.stderr, flush=True)
    result = {"docs": n, "source": args.source, "embedder": args.embedder, "chunks": graph["chunks"],
              "index_s": round(index_s, 1), "peer_index_s": round(peer_s, 1), "ratio": round(index_s / peer_s, 3),
              "peak_rss_mb": round(index_rss), "peer_peak_rss_mb": round(peer_rss),
              "disk_mb": round(disk, 1), "peer_disk_mb": round(disk_mb(peer_out), 1), **served,
              "incremental_s": round(inc_s, 1), "incremental_share": round(inc_s / index_s, 4),
              "incremental_peak_rss_mb": round(inc_rss), "change": changed,
              "stage_s": run.get("stage_seconds", {}), "incremental_stage_s": inc.get("stage_seconds", {}),
              "later_changes": later,
              "shape": graph}
    return result


def _table(r: dict[str, Any]) -> str:
    rows = [("wall s", f"{r['index_s']:.1f}", f"{r['peer_index_s']:.1f}"),
            ("peak RSS MB", str(r["peak_rss_mb"]), str(r["peer_peak_rss_mb"])),
            ("disk MB", f"{r['disk_mb']:.0f}", f"{r['peer_disk_mb']:.0f}")]
    lines = [f"{r['docs']:,} documents ({r['source']}), {r['chunks']:,} chunks, embedder {r['embedder']}",
             f"  {'':<14}{'pipeline':>12}{'peer':>12}"]
    lines += [f"  {a:<14}{b:>12}{c:>12}" for a, b, c in rows]
    lines.append(f"  ratio {r['ratio']:.2f}; stages: " + ", ".join(f"{k} {v:.0f}" for k, v in r["stage_s"].items()))
    lines.append(f"  serving: load {r['serve_load_s']} s, {r['serve_rss_mb']:.0f} MB resident "
                 f"({r['serve_rss_global_mb']:.0f} MB after a global question, "
                 f"{r['first_global_s']} s), "
                 f"query p50 {r['query_p50_ms']} ms (p95 {r['query_p95_ms']} ms)")
    lines.append(f"  change {r['change']}: {r['incremental_s']:.1f} s = {r['incremental_share']:.1%} of the full run; "
                 "stages: " + ", ".join(f"{k} {v:.1f}" for k, v in r["incremental_stage_s"].items()))
    g = r["shape"]
    lines.append(f"  graph: {g['entities']:,} entities, {g['relations']:,} relations; entities per chunk "
                 f"{g['entities_per_chunk']}; degree {g['degree']} (rank slope {g['degree_rank_slope']}, "
                 f"share <= 1: {g['degree_one_share']}); level-0 communities {g['level0_communities']:,} "
                 f"sizes {g['level0_sizes']}; {g['levels']} levels")
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        step, rest = sys.argv[1], sys.argv[2:]
        if step == "_peer":
            peer(Path(rest[0]), Path(rest[1]), rest[2])
        elif step == "_serve":
            serve(Path(rest[0]))
        elif step == "_shape":
            shape(Path(rest[0]))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, nargs="+", default=[10_000])
    ap.add_argument("--source", choices=["mixed", "real", "synthetic"], default="mixed")
    ap.add_argument("--change", type=float, default=0.01, help="share of documents changed for the incremental run")
    ap.add_argument("--changes", type=int, default=1, help="how many such changes, one after another (each indexed)")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary folder)")
    args = ap.parse_args()
    for n in args.docs:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            result = one_size(n, args, args.keep)
        else:
            with tempfile.TemporaryDirectory(prefix="strata-bench-") as tmp:
                result = one_size(n, args, Path(tmp))
        print(_table(result))
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
