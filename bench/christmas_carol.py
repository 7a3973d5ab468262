"""Strata's offline index of A Christmas Carol beside Microsoft GraphRAG's reference index of the same book.

    python -m bench.christmas_carol [--data ../shared/data/christmas_carol]

Indexes the book into a temporary workspace on the embedded defaults, then prints counts of entities,
relations and communities per level beside the reference's, and the share of the reference's 50
highest-degree entities whose normalized name Strata also extracted. The reference was built with an LLM: it
is a point of comparison, not ground truth. The recall is in-sample: the offline extractor was developed with
this book in view, and no second book with an entity reference made by someone else is in ``../shared/data``
(Dulce has none). The reference indexed the Project Gutenberg licence too (two of its 50 highest-degree entities
are "Project Gutenberg" names), which Strata keeps out of the graph. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

from core.text.keys import normalize_name
from strata.pipeline import index_folder
from core.settings import StrataSettings
from core.store import open_store

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "christmas_carol"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=DEFAULT)
    args = ap.parse_args()
    ref_entities = list(csv.DictReader(open(args.data / "entities.csv", encoding="utf-8")))
    ref_relations = sum(1 for _ in csv.DictReader(open(args.data / "relationships.csv", encoding="utf-8")))
    ref_levels: dict[int, int] = {}
    try:
        import pyarrow.parquet as pq  # optional: present with prefect's dependencies on most installs

        table = pq.read_table(args.data / "communities.parquet", columns=["level"]).to_pydict()
        ref_levels = dict(sorted(Counter(int(x) for x in table["level"]).items()))
    except Exception:  # noqa: BLE001 - the reference's levels are informative only
        ref_levels = {}

    with tempfile.TemporaryDirectory() as tmp:
        settings = StrataSettings(data_dir=Path(tmp) / "ws", extraction={"mode": "offline"})
        t0 = time.perf_counter()
        run = index_folder(args.data / "a-christmas-carol.txt", settings)
        seconds = time.perf_counter() - t0
        store = open_store(settings)
        snap = store.read_graph()
        levels = dict(sorted(Counter(c.level for c in store.communities()).items()))
        store.close()

    ours = {normalize_name(e.name, "name") for e in snap.entities}
    top = sorted(ref_entities, key=lambda r: -int(r["degree"] or 0))[:50]
    found = [r["title"] for r in top if normalize_name(r["title"], "name") in ours]
    recall = len(found) / len(top)

    print(f"{'':<28}{'Strata offline':>16}{'GraphRAG reference':>20}")
    print(f"{'entities':<28}{len(snap.entities):>16}{len(ref_entities):>20}")
    print(f"{'relations':<28}{len(snap.relations):>16}{ref_relations:>20}")
    print(f"{'communities per level':<28}{str(list(levels.values())):>16}{str(list(ref_levels.values())):>20}")
    print(f"{'top-50 reference recall':<28}{recall:>16.0%}")
    print(f"index time {seconds:.2f} s; missed: {', '.join(r['title'] for r in top if r['title'] not in found)}")
    print(json.dumps({"entities": len(snap.entities), "relations": len(snap.relations),
                      "communities_per_level": {str(k): v for k, v in levels.items()}, "top50_recall": round(recall, 3),
                      "reference": {"entities": len(ref_entities), "relations": ref_relations,
                                    "communities_per_level": {str(k): v for k, v in ref_levels.items()}},
                      "mode": run.mode}))


if __name__ == "__main__":
    main()
