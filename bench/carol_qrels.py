"""Write a BEIR-format retrieval set built from Microsoft GraphRAG's reference index of A Christmas Carol.

    python -m bench.carol_qrels OUT_DIR [--style title|lower|question] && python -m bench.beir \\
        --corpus OUT_DIR/corpus.jsonl --queries OUT_DIR/queries.jsonl --qrels OUT_DIR/qrels.tsv

Documents are the reference's 42 text units; each query is the name of one of its 100 highest-degree entities,
and the relevant documents are the text units the reference extracted that entity from. ``--style`` says how
the name is put: ``title`` (the default, e.g. "Mrs. Cratchit"), ``lower`` (as typed in a hurry, "mrs. cratchit")
or ``question`` (a sentence around the lower-cased name, "what do we learn about mrs. cratchit?"), so that a
ranking rule keyed to capital letters cannot score by construction. It is an entity-heavy set (names, places, events), the kind of corpus where exact
lexical matching matters most, unlike SciFact's scientific claims. The files are written outside the repository.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "christmas_carol"


def phrase(name: str, style: str) -> str:
    """The query for an entity name in the given style."""
    if style == "lower":
        return name.lower()
    if style == "question":
        return f"what do we learn about {name.lower()}?"
    return name.title()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", type=Path, default=Path("/tmp/carol-beir"))
    ap.add_argument("--style", choices=["title", "lower", "question"], default="title")
    args = ap.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    csv.field_size_limit(10**8)
    units = list(csv.DictReader(open(DATA / "text_units.csv", encoding="utf-8")))
    ids = {u["id"]: f"tu{int(u['human_readable_id']):02d}" for u in units}
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for u in units:
            fh.write(json.dumps({"_id": ids[u["id"]], "title": "", "text": u["text"]}) + "\n")
    entities = sorted(csv.DictReader(open(DATA / "entities.csv", encoding="utf-8")), key=lambda e: -int(e["degree"] or 0))
    with open(out / "queries.jsonl", "w", encoding="utf-8") as q, open(out / "qrels.tsv", "w", encoding="utf-8") as r:
        r.write("query-id\tcorpus-id\tscore\n")
        n = 0
        for e in entities:
            raw = e["text_unit_ids"].strip()
            units_of = ast.literal_eval(raw.replace("\n", ",").replace("' '", "', '")) if raw.startswith("[") else raw.split(",")
            rel = sorted({ids[u.strip()] for u in units_of if u.strip() in ids})
            if not rel:
                continue
            qid = f"q{n:03d}"
            q.write(json.dumps({"_id": qid, "text": phrase(e["title"], args.style)}) + "\n")
            for d in rel:
                r.write(f"{qid}\t{d}\t1\n")
            n += 1
            if n == 100:
                break
    print(f"wrote {out}: {len(units)} documents, {n} queries")


if __name__ == "__main__":
    main()
