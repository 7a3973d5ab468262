"""Small BEIR-format retrieval sets in Chinese and Polish, and a fixed SciFact subsample, for ``bench.beir``.

    apt-get install libreoffice-help-zh-cn libreoffice-help-pl    # or unpack the .deb files anywhere
    python -m bench.lang_sets --out .strata-bench/sets [--help-root /usr/share/libreoffice/help]
    python -m bench.beir --corpus .strata-bench/sets/help-pl/corpus.jsonl \
        --queries .strata-bench/sets/help-pl/queries.jsonl --qrels .strata-bench/sets/help-pl/qrels.tsv

Source: LibreOffice's help pages as translated by its Chinese (zh-CN) and Polish translators (Debian packages
``libreoffice-help-zh-cn`` and ``libreoffice-help-pl``, MPL-2.0). Each page gives one passage (the text of its
paragraphs, from the first, up to about 150-250 tokens) and one query (the page's translated title, which the
passage never contains as a heading): a title-to-passage set, one relevant passage per query. Pages whose
passage is not in the set's language (untranslated pages), whose title occurs on more than one page, or whose
text is too short to be a passage are left out. The pages are ordered by a stable hash of their path; the
first ``--docs`` form the corpus and the first ``--queries`` of those give the queries (the rest are
distractors). Nothing here is trained or tuned on; the sets only measure.

The SciFact subsample keeps every test query and the documents they cite, plus distractors chosen by a stable
hash of the document id, up to ``--scifact-docs`` documents: embedding all 5,183 documents with the 4-bit
multilingual model takes a quarter of an hour on two busy cores.
"""

from __future__ import annotations

import argparse
import html
import json
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from core.records import stable_hash
from core.text.language import detect_language

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
SETS = {"help-zh": ("zh-CN", "zh", 300), "help-pl": ("pl", "pl", 600)}  # folder, language, passage characters
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class HelpPage:
    path: str
    title: str
    passage: str


class _PageParser(HTMLParser):
    """The <title> and the text of each <p> inside the help's display area (headings and scripts skipped)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.paragraphs: list[str] = []
        self._in_title = self._in_area = False
        self._depth = 0  # nesting of <p> elements being collected
        self._buf: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag == "div" and dict(attrs).get("id") == "DisplayArea":
            self._in_area = True
        elif tag == "p" and self._in_area:
            self._depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag == "p" and self._depth:
            self._depth -= 1
            if not self._depth:
                text = _SPACE.sub(" ", "".join(self._buf)).strip()
                if text:
                    self.paragraphs.append(text)
                self._buf = []

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif self._depth:
            self._buf.append(data)


def read_page(path: Path, max_chars: int) -> HelpPage | None:
    parser = _PageParser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    title = _SPACE.sub(" ", html.unescape(parser.title)).strip()
    parts: list[str] = []
    for p in parser.paragraphs:
        if p == title or len(p) < 8:
            continue  # an icon caption repeating the title, or a label
        parts.append(p)
        if sum(len(x) for x in parts) >= max_chars:
            break
    passage = " ".join(parts)
    if not title or len(passage) < max_chars // 3:
        return None
    return HelpPage(path.as_posix(), title, passage[: max_chars * 2])


def help_set(root: Path, folder: str, language: str, max_chars: int, n_docs: int, n_queries: int, out: Path) -> tuple[int, int]:
    base = root / folder / "text"
    if not base.is_dir():
        raise FileNotFoundError(f"{base}: no LibreOffice help here; install libreoffice-help-{folder.lower()} "
                                "or pass --help-root")
    pages = []
    for path in sorted(base.rglob("*.html")):
        page = read_page(path, max_chars)
        if page is None or detect_language(page.passage) != language:
            continue
        if detect_language(page.title) == "en" or (language == "zh" and detect_language(page.title) != "zh"):
            continue  # an untranslated title
        pages.append(page)
    titles: dict[str, int] = {}
    for p in pages:
        titles[p.title.casefold()] = titles.get(p.title.casefold(), 0) + 1
    pages = [p for p in pages if titles[p.title.casefold()] == 1]
    pages.sort(key=lambda p: stable_hash(str(Path(p.path).relative_to(base))))
    docs = pages[:n_docs]
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for i, p in enumerate(docs):
            fh.write(json.dumps({"_id": f"d{i}", "title": "", "text": p.passage}, ensure_ascii=False) + "\n")
    with open(out / "queries.jsonl", "w", encoding="utf-8") as qf, open(out / "qrels.tsv", "w") as rf:
        rf.write("query-id\tcorpus-id\tscore\n")
        for i, p in enumerate(docs[:n_queries]):
            qf.write(json.dumps({"_id": f"q{i}", "text": p.title}, ensure_ascii=False) + "\n")
            rf.write(f"q{i}\td{i}\t1\n")
    return len(docs), min(n_queries, len(docs))


def scifact_sample(source: Path, n_docs: int, out: Path) -> tuple[int, int]:
    cited: set[str] = set()
    queries: set[str] = set()
    for i, line in enumerate(open(source / "qrels" / "test.tsv", encoding="utf-8")):
        parts = line.strip().split("\t")
        if i == 0 and not parts[-1].isdigit():
            continue
        queries.add(parts[0])
        cited.add(parts[1])
    rows = [json.loads(line) for line in open(source / "corpus.jsonl", encoding="utf-8")]
    rest = sorted((r for r in rows if r["_id"] not in cited), key=lambda r: stable_hash(r["_id"]))
    keep = cited | {r["_id"] for r in rest[: max(0, n_docs - len(cited))]}
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for r in rows:
            if r["_id"] in keep:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    (out / "qrels.tsv").write_text((source / "qrels" / "test.tsv").read_text(encoding="utf-8"), encoding="utf-8")
    (out / "queries.jsonl").write_text((source / "queries_test.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    return len(keep), len(queries)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(".strata-bench") / "sets")
    ap.add_argument("--help-root", type=Path, default=Path("/usr/share/libreoffice/help"))
    ap.add_argument("--docs", type=int, default=800)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--scifact", type=Path, default=SCIFACT)
    ap.add_argument("--scifact-docs", type=int, default=1000)
    args = ap.parse_args()
    summary = {}
    for name, (folder, language, chars) in SETS.items():
        summary[name] = help_set(args.help_root, folder, language, chars, args.docs, args.queries, args.out / name)
    summary["scifact-sample"] = scifact_sample(args.scifact, args.scifact_docs, args.out / "scifact-sample")
    for name, (docs, queries) in summary.items():
        print(f"{name:<16}{docs:>6} passages {queries:>5} queries  -> {args.out / name}")
    print(json.dumps({name: {"passages": d, "queries": q} for name, (d, q) in summary.items()}))


if __name__ == "__main__":
    main()
