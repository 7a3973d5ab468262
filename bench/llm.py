"""The LLM path against a real endpoint: the first chunks of A Christmas Carol indexed in LLM mode, beside the
offline extractor on the same chunks in the same run.

    python -m bench.llm [--base-url http://127.0.0.1:8080/v1] [--model NAME] [--chunks 12]

Start the local server first (``scripts/llm start``) or give any OpenAI-compatible endpoint. Prints calls,
server-counted tokens, the endpoint's prompt and generation speed (two probe calls), wall time, the share of
structured answers valid against their schema as they came (``schema_valid_rate``) and the ones repaired,
entities and relations per chunk, ``reference_recall`` (the share of GraphRAG's reference entities occurring in
those chunks that the run found, by normalized name or alias) beside ``offline_reference_recall``, entities
that occur only in a prompt (never in the text), the structured answers that were not valid as they came (with
their cause: :mod:`bench.llm_records`), and ``estimate_error`` ((estimated - actual) / actual, for
tokens and for calls, merges included). Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import openai

from core.settings import StrataSettings
from core.store import open_store
from core import threads
from extraction.chunking import chunk_document
from extraction.estimate import estimate_documents
from extraction.llm_context import fit_to_context
from extraction.llm_extractor import output_budget
from extraction.loader import load_folder
from core.text.keys import normalize_name
from bench.llm_records import bad_answers
from prompts import PROMPTS_DIR
from strata.pipeline import index_folder

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "christmas_carol"
STRUCTURED = ("extract", "glean", "merge", "report")


def _words(name: str) -> list[str]:
    return normalize_name(name, "name").split()


def found_by(reference: list[str], names: set[str]) -> list[str]:
    """Reference names the run found: the same normalized name, or an alias (one of them is the first or last
    word of the other: "Scrooge" and "Ebenezer Scrooge")."""
    keys = {normalize_name(n, "name") for n in names}
    ends = {w for n in keys for w in (n.split()[:1] + n.split()[-1:]) if len(n.split()) > 1}
    out = []
    for ref in reference:
        k = normalize_name(ref, "name")
        parts = k.split()
        if k in keys or k in ends or (len(parts) > 1 and (parts[0] in keys or parts[-1] in keys)):
            out.append(ref)
    return out


def speed(client: openai.OpenAI, model: str) -> tuple[float, float]:
    """(prompt tokens/s, generated tokens/s) from two calls: a long prompt answered with one token, then a short
    prompt answered with up to 96 tokens (a fresh nonce first, so no prompt cache helps)."""
    filler = " ".join(f"item {i} is {uuid.uuid4().hex[:6]};" for i in range(60))
    t0 = time.perf_counter()
    r = client.chat.completions.create(model=model, max_tokens=1, temperature=0,
                                       messages=[{"role": "user", "content": f"{uuid.uuid4().hex} {filler} Say ok."}])
    prompt_rate = r.usage.prompt_tokens / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    r = client.chat.completions.create(model=model, max_tokens=96, temperature=0, messages=[
        {"role": "user", "content": f"{uuid.uuid4().hex[:8]} Count from 1 to 60, separated by commas."}])
    seconds = time.perf_counter() - t0 - r.usage.prompt_tokens / prompt_rate
    return prompt_rate, r.usage.completion_tokens / max(seconds, 1e-3)


def graph_names(settings: StrataSettings) -> set[str]:
    store = open_store(settings)
    try:
        return {e.name for e in store.read_graph().entities}
    finally:
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    ap.add_argument("--model", default=None, help="default: the first model the endpoint lists")
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--chunks", type=int, default=12, help="first chunks of the book to index")
    ap.add_argument("--data", type=Path, default=DEFAULT)
    args = ap.parse_args()
    threads.configure(StrataSettings().compute)  # one BLAS thread, as every Strata command
    base = args.base_url.rstrip("/")
    model = args.model
    if model is None:
        with urllib.request.urlopen(f"{base}/models", timeout=30) as r:
            model = json.load(r)["data"][0]["id"]
    llm = {"base_url": base, "model": model, "max_concurrency": 1, **({"api_key": args.api_key} if args.api_key else {})}

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        book = load_folder(args.data / "a-christmas-carol.txt").documents[0]
        base_settings = StrataSettings(data_dir=root / "probe", extraction={"mode": "offline"})
        chunks = chunk_document(book, base_settings.chunking)[: args.chunks]
        head = root / "carol-head" / "carol.txt"
        head.parent.mkdir()
        head.write_text(book.text[: chunks[-1].end], encoding="utf-8")
        text = head.read_text(encoding="utf-8").casefold()

        reference = [r["title"] for r in csv.DictReader(open(args.data / "entities.csv", encoding="utf-8"))]
        present = [t for t in reference if re.search(r"\b" + re.escape(t.casefold()) + r"\b", text)]

        offline = StrataSettings(data_dir=root / "offline", extraction={"mode": "offline"})
        off_run = index_folder(head.parent, offline)
        off_found = found_by(present, graph_names(offline))

        settings = StrataSettings(data_dir=root / "llm", extraction={"mode": "llm"}, llm=llm)
        est = estimate_documents(load_folder(head.parent).documents, settings)
        t0 = time.perf_counter()
        run = index_folder(head.parent, settings)
        wall = time.perf_counter() - t0
        names = graph_names(settings)
        llm_found = found_by(present, names)
        fitted = fit_to_context(settings)
        limits = {output_budget(c.text, settings.llm.max_tokens)
                  for d in load_folder(head.parent).documents for c in chunk_document(d, fitted.chunking)}
        bad = bad_answers(root / "llm" / "llm_cache.sqlite", limits)

        client = openai.OpenAI(base_url=base, api_key=args.api_key or "not-needed", timeout=600, max_retries=0)
        prompt_rate, gen_rate = speed(client, model)

    usage = run.llm_usage
    calls = sum(u["calls"] for u in usage.values())
    tin = sum(u["input_tokens"] for u in usage.values())
    tout = sum(u["output_tokens"] for u in usage.values())
    answered = sum(usage.get(s, {}).get(k, 0) for s in STRUCTURED for k in ("schema_valid", "repaired", "unusable"))
    valid = sum(usage.get(s, {}).get("schema_valid", 0) for s in STRUCTURED)
    repaired = sum(usage.get(s, {}).get("repaired", 0) for s in STRUCTURED)
    prompt_text = " ".join(p.read_text(encoding="utf-8") for p in PROMPTS_DIR.glob("*.txt")).casefold()
    leaked = sorted(n for n in names if n.casefold() in prompt_text and n.casefold() not in text)
    n = max(1, run.chunks_total)
    out = {
        "model": model, "chunks": run.chunks_total, "calls": calls,
        "calls_by_stage": {s: u["calls"] for s, u in usage.items()},
        "prompt_tokens": tin, "completion_tokens": tout,
        "prompt_tok_per_s": round(prompt_rate, 1), "gen_tok_per_s": round(gen_rate, 1), "wall_s": round(wall, 1),
        "schema_valid_rate": round(valid / answered, 4) if answered else None, "repaired": repaired,
        "failed_chunks": run.failed_chunks, "report_fallbacks": run.report_fallbacks,
        "entities_per_chunk": round(run.entities / n, 2), "relations_per_chunk": round(run.relations / n, 2),
        "offline_entities_per_chunk": round(off_run.entities / n, 2),
        "offline_relations_per_chunk": round(off_run.relations / n, 2),
        "reference_entities_present": len(present),
        "reference_recall": round(len(llm_found) / len(present), 4) if present else None,
        "offline_reference_recall": round(len(off_found) / len(present), 4) if present else None,
        "prompt_only_entities": leaked,
        "estimated_tokens": est.input_tokens + est.output_tokens, "estimated_calls": est.calls,
        "estimate_error": round((est.input_tokens + est.output_tokens - tin - tout) / max(1, tin + tout), 4),
        "estimate_calls_error": round((est.calls - calls) / max(1, calls), 4),
        "schema_by_stage": {s: {k: usage[s].get(k, 0) for k in ("schema_valid", "repaired", "unusable")}
                            for s in STRUCTURED if s in usage},
        "not_valid_as_they_came": [b.to_dict() for b in bad],
    }
    print(f"{'':<28}{'LLM (' + model + ')':>30}{'offline':>12}")
    print(f"{'entities per chunk':<28}{out['entities_per_chunk']:>30}{out['offline_entities_per_chunk']:>12}")
    print(f"{'relations per chunk':<28}{out['relations_per_chunk']:>30}{out['offline_relations_per_chunk']:>12}")
    print(f"{'reference recall':<28}{out['reference_recall']!s:>30}{out['offline_reference_recall']!s:>12}")
    print(f"calls {calls} ({out['calls_by_stage']}), tokens {tin} in / {tout} out, wall {out['wall_s']} s, "
          f"{out['prompt_tok_per_s']} prompt / {out['gen_tok_per_s']} generated tokens/s")
    print(f"schema-valid {out['schema_valid_rate']}, repaired {repaired}, estimate error {out['estimate_error']} "
          f"(calls {out['estimate_calls_error']}), prompt-only entities {leaked}")
    for b in bad:
        print(f"not valid as it came: {b.cause} ({b.output_tokens} tokens): {b.error} ... {b.tail!r}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
