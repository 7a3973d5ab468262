"""Community titles and top entities of an offline index of any folder: are they words, are they unique, is it junk?

    python -m bench.titles FOLDER [--embedder none|hashing] [--show 12]

Indexes FOLDER into a temporary workspace offline (no LLM; no embedder by default, since titles and entities
do not depend on it), then measures what a reader sees, judged apart from the extractor (no code shared with
``extraction/`` or ``communities/``: the corpus's prose is read here by its own rules):

- ``titles``: community reports written;
- ``titles_not_words``: titles not made of words. A title is words when every whitespace-separated token
  (surrounding punctuation removed) occurs, case folded, as an ordinary word of the corpus's prose outside code
  (fenced blocks and code spans removed), or its possessive does ("Hamlet" of "Hamlet's father"), a number after
  a word excepted ("HTTP 504");
- ``cut_titles``: titles cut mid-phrase: the last word is one of the corpus's 100 most frequent prose words and
  one its prose almost never ends a sentence or a line with (under 2% of its uses: "the", "of", "any", "by");
- ``identifier_titles``: titles made only of code identifiers (a token with ``_``, an inner dot, a lower-to-upper
  case switch, or a leading ``-``), the corpus's 50 most frequent prose words ("with", "and") and versions aside;
- ``leaks``: chunks (their prose: code quotes code as it is), titles, entity descriptions and the answers to "What are the main topics?" and "What themes
  recur?" holding an attribute list (``{ #``, ``{:``), raw HTML (a comment, a closing tag, an opening tag with
  an attribute) or link or block syntax (``][``, ``](``, a line opening with ``///``);
- ``duplicate_titles``: reports whose title (case and spaces folded) another report already has;
- ``junk_share_top50``: the share of junk among the 50 entities of highest degree (distinct neighbours).

The ten largest top-level communities are printed with their titles, and the main-topics answer in full.

Junk, by these rules (written for this bench, apart from the extractor's own rules, and checked by eye on the
printed lists):

1. no letter at all (numbers, dates, bare versions, punctuation);
2. markup: any of ``< > [ ] { } | ` * # = ~ ^ \\`` or a double quote, or a first character that is not a
   letter, a digit, ``$`` or ``-`` (a command-line flag);
3. URL pieces: ``://``, ``www.``, the words http, https, www, com, org, net, io, or a host name (dotted, ending in
   a common top-level domain);
4. files and paths: a ``/`` or ``\\``, or a name ending in a common file extension (images, documents, data,
   archives; a capitalized product such as "Node.js" is not a file);
5. IDs and hashes: 7 or more hexadecimal characters with a digit; 12 or more characters mixing upper case,
   lower case and digits in scraps (pieces cut at case changes and digits shorter than 3 characters on average,
   so a class or method name such as "ClientHttp2Session.setLocalWindowSize" is a name); or, in a token of 12 or
   more characters, a piece of five letters or more without a
   vowel (pieces cut at case changes, so "relatedSpdxElement" is not an id);
6. function words: every word is one of the retrieval tokenizer's English stop words;
7. requirement keywords and markers: MUST, SHOULD, SHALL, MAY, REQUIRED, OPTIONAL, RECOMMENDED (capitals),
   TODO, FIXME, XXX, TBD, NOTE, WARNING;
8. date format strings (``YYYY-mm-dd``, ``HH:MM:SS``);
9. front-matter keys: a name equal (case folded) to a metadata key of a document of the folder;
10. ordinary words promoted by position: a single word in title case (not an acronym) that the folder's text
    uses in lower case as a word of its own and never writes capitalized after a lower-case word (mid-sentence,
    where capitals mean a name): "Install" opening headings, but not "the Release file";
11. licence text: a name containing "Gutenberg".

Peer: when FOLDER holds a Microsoft GraphRAG reference index (``entities.csv``, ``relationships.csv``,
``community_reports.parquet``), the same figures of the reference are printed beside Strata's. Last line: one
JSON object.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from core.settings import StrataSettings
from core.store import open_store
from core.threads import configure
from retrieval.tokenize import STOPWORDS

_MARKUP = re.compile(r"[<>\[\]{}|`*#=~^\\\"]")
_URL_WORDS = {"http", "https", "www", "com", "org", "net", "io"}
_TLDS = {"com", "org", "net", "io", "dev", "edu", "gov", "co", "uk", "de", "app", "ai", "info", "eu", "us"}
_FILE_EXT = {"png", "jpg", "jpeg", "gif", "svg", "webp", "ico", "pdf", "txt", "md", "rst", "csv", "json", "jsonl",
             "yaml", "yml", "toml", "ini", "cfg", "conf", "lock", "log", "xml", "html", "htm", "css", "zip", "gz",
             "tgz", "tar", "deb", "rpm", "js", "ts", "py", "sh", "sql", "db", "sqlite", "parquet"}
_KEYWORDS = {"MUST", "SHOULD", "SHALL", "MAY", "REQUIRED", "OPTIONAL", "RECOMMENDED", "MUST NOT", "SHOULD NOT",
             "SHALL NOT", "NOT RECOMMENDED"}
_MARKERS = {"todo", "fixme", "xxx", "tbd", "note", "warning"}
_DATE_FORMAT = re.compile(r"^(?:[YyMmDdHhSs]{1,4})(?:[-/:. ][YyMmDdHhSs]{1,4})+$")
_LOWER_WORD = re.compile(r"(?<![\w./:@_-])[a-z]+(?![\w/:@_-])")
_TOKEN_OK = re.compile(r"^[^\W_][\w'’.&+-]*$")


def _mean_piece(tok: str) -> float:
    """The mean length of ``tok``'s pieces cut at case changes, digits and punctuation: a code name reads in
    pieces of words ("ClientHttp2Session": Client, Http, 2, Session: 4.5), an ID or a hash in scraps
    ("PLoz-W_CUquUlnvoEBbqChb7A0ZEZsWSXt": 2.2)."""
    pieces = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", tok)
    return sum(map(len, pieces)) / len(pieces) if pieces else 0.0


def junk(name: str, meta_keys: set[str], lower_counts: Counter[str], surface_counts: Counter[str]) -> str | None:
    """The rule (numbered as in the module docstring) that makes ``name`` junk, or None."""
    n = name.strip()
    low = n.lower()
    if not any(ch.isalpha() for ch in n):
        return "1 no letter"
    if _MARKUP.search(n) or not (n[0].isalnum() or n[0] == "$" or n[0] == "-"):
        return "2 markup"
    if "://" in low or low.startswith("www.") or low in _URL_WORDS and n == low or (
            re.fullmatch(r"[a-z0-9-]+(?:\.[a-z0-9-]+)+", low) and low.rsplit(".", 1)[-1] in _TLDS):
        return "3 URL piece"
    m = re.search(r"\.([A-Za-z0-9]{1,8})$", n)
    if "/" in n or "\\" in n or m and m.group(1).lower() in _FILE_EXT and not n[:1].isupper():
        return "4 file or path"
    for tok in n.split():
        if (re.fullmatch(r"[0-9a-fA-F]{7,}", tok) and re.search(r"\d", tok)
                or len(tok) >= 12 and re.search(r"[A-Z]", tok) and re.search(r"[a-z]", tok) and re.search(r"\d", tok)
                and _mean_piece(tok) < 3
                or len(tok) >= 12 and any(len(p) >= 5 and not re.search(r"[aeiouyAEIOUY]", p)
                                          for p in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", tok))):
            return "5 ID or hash"
    words = re.findall(r"[^\W\d_]+", low)
    if words and all(w in STOPWORDS for w in words):
        return "6 function words"
    if n in _KEYWORDS or low in _MARKERS and (n.isupper() or n == low):
        return "7 keyword or marker"
    if _DATE_FORMAT.match(n):
        return "8 date format"
    if low in meta_keys:
        return "9 front-matter key"
    if " " not in n and len(n) >= 3 and n[:1].isupper() and n[1:].islower() and lower_counts[low] and not surface_counts[n]:
        return "10 ordinary word"
    if "gutenberg" in low:
        return "11 licence text"
    return None


def title_not_words(title: str, meta_keys: set[str], lower_counts: Counter[str], surface_counts: Counter[str]) -> bool:
    """Whether ``title`` is not made of words (see the module docstring)."""
    title = title.strip()
    if not title[:1].isalpha():
        return True
    tokens = [t.strip(",.;:!?()\"'“”‘’") for t in title.split()]
    prev_word = False
    for raw, tok in zip(title.split(), tokens):
        if not tok:
            if _MARKUP.search(raw):
                return True
            continue
        if tok.replace(".", "").replace(",", "").isdigit():
            if not prev_word:
                return True
            continue
        if not _TOKEN_OK.match(tok) or not any(ch.isalpha() for ch in tok):
            return True
        if junk(tok, set(), Counter(), Counter()) not in (None, "6 function words", "10 ordinary word"):
            return True
        prev_word = True
    return False


def measure(titles: Sequence[str], top: Sequence[str], meta_keys: set[str], texts: Iterable[str],
            prose: "Prose | None" = None) -> dict[str, object]:
    """The figures of ``titles`` and ``top`` entities; with ``prose``, a title is words by the corpus's prose (the
    module docstring), else by the token rules of :func:`title_not_words` (for a reference index's titles)."""
    lower_counts: Counter[str] = Counter()
    surface_counts: Counter[str] = Counter()
    wanted = {t for t in top if " " not in t}
    for text in texts:
        lower_counts.update(_LOWER_WORD.findall(text))
        # the written form after a lower-case word, as a name stands mid-sentence ("the Release file")
        for w in re.findall(r"(?<=[a-z,] )[A-Z][\w'’-]*", text):
            if w in wanted:
                surface_counts[w] += 1
    folded = Counter(" ".join(t.casefold().split()) for t in titles)
    bad = [t for t in titles if title_not_words(t, meta_keys, lower_counts, surface_counts)]
    if prose is not None:
        bad = [t for t in titles if not prose.title_words(t)]
    junky = [(name, junk(name, meta_keys, lower_counts, surface_counts)) for name in top]
    junky = [(n, r) for n, r in junky if r]
    cut = [t for t in titles if prose is not None and prose.cut(t)]
    idents = [t for t in titles if prose is not None and prose.identifiers_only(t)]
    return {"titles": len(titles), "titles_not_words": len(bad), "cut_titles": len(cut), "identifier_titles": len(idents),
            "_cut": cut, "_idents": idents,
            "duplicate_titles": sum(c - 1 for c in folded.values() if c > 1),
            "junk_share_top50": round(len(junky) / max(1, len(top)), 3),
            "_bad": bad, "_junk": junky, "_dupes": sorted(t for t, c in folded.items() if c > 1)}


_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.M | re.S)
_SPAN = re.compile(r"(`+)[^`\n]*?\1")
_URLISH = re.compile(r"\S+://\S+")
_PROSE_TOKEN = re.compile(r"[^\W\d_](?:[\w'’.+/-]*\w)?")
_TITLE_STRIP = ",.;:!?()\"'“”‘’"
_ATTR_LEAK = re.compile(r"\{\s*#|\{:")
_HTML_LEAK = re.compile(r"<!--|</[A-Za-z][\w-]*\s*>|<[A-Za-z][\w-]*\s+[\w:-]+\s*=")
# Link syntax a reader should not see: a reference or a target left as text ("[`list`][]", "[a][b.c]",
# "[text](url)"; not right after a Latin letter, digit or underscore: grid[row][col] indexes) or a generic block's
# marker ("/// note | Title", "///").
_LINK_LEAK = re.compile(r"(?<![A-Za-z0-9_\]])\[[^\[\]\n]*\][\[(]|^[ \t]*/{3}", re.M)


def prose_of(text: str) -> str:
    """``text`` without code (fenced blocks, code spans) and URLs."""
    text = _FENCED.sub(" ", text)
    text = _SPAN.sub(" ", text)
    return _URLISH.sub(" ", text)


class Prose:
    """The corpus's ordinary words outside code, how often each ends a sentence or a line, and the most frequent."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.uses: Counter[str] = Counter()
        self.ends: Counter[str] = Counter()
        for t in texts:
            for line in prose_of(t).split("\n"):
                toks = list(_PROSE_TOKEN.finditer(line))
                for i, m in enumerate(toks):
                    w = m.group(0).casefold()
                    self.uses[w] += 1
                    rest = line[m.end():toks[i + 1].start()] if i + 1 < len(toks) else line[m.end():]
                    if i + 1 == len(toks) or re.search(r"[.!?:;]", rest):
                        self.ends[w] += 1
        self.common = {w for w, _ in self.uses.most_common(50)}
        self.frequent = {w for w, _ in self.uses.most_common(100)}

    def title_words(self, title: str) -> bool:
        after_word = False
        for raw in title.split():
            tok = raw.strip(_TITLE_STRIP)
            if not tok:
                continue
            if not any(ch.isalpha() for ch in tok):
                if not after_word:
                    return False
                continue
            # (a name the prose writes only in its possessive is still its word: "Pharaoh" of "Pharaoh's daughters")
            word = tok.casefold()
            if not any(form in self.uses for form in (word, f"{word}'s", f"{word}’s")):
                return False
            after_word = True
        return after_word

    def cut(self, title: str) -> bool:
        toks = [t.strip(_TITLE_STRIP).casefold() for t in title.split()]
        toks = [t for t in toks if t]
        if not toks:
            return True
        last = toks[-1]
        return last in self.frequent and self.ends[last] / self.uses[last] < 0.02

    def identifiers_only(self, title: str) -> bool:
        toks = [t.strip(_TITLE_STRIP) for t in title.split()]
        toks = [t for t in toks if t and t.casefold() not in self.common and not re.fullmatch(r"v?[\d.]+", t)]
        return bool(toks) and all("_" in t or re.search(r"\w\.\w", t) or re.search(r"[a-z][A-Z]", t) or t.startswith("-")
                                  for t in toks)


def leaks(texts: Iterable[str]) -> list[str]:
    """The texts holding an attribute list, raw HTML or link or block syntax."""
    return [t for t in texts if _ATTR_LEAK.search(t) or _HTML_LEAK.search(t) or _LINK_LEAK.search(t)]


def top_by_degree(names: dict[str, str], edges: Iterable[tuple[str, str]], k: int = 50) -> list[str]:
    nbrs: dict[str, set[str]] = {}
    for a, b in edges:
        if a != b:
            nbrs.setdefault(a, set()).add(b)
            nbrs.setdefault(b, set()).add(a)
    ranked = sorted(nbrs, key=lambda i: (-len(nbrs[i]), names.get(i, i)))
    return [names[i] for i in ranked[:k] if i in names]


def _reference(folder: Path) -> tuple[list[str], list[str]] | None:
    if not (folder / "entities.csv").exists() or not (folder / "relationships.csv").exists():
        return None
    csv.field_size_limit(10**8)
    ents = list(csv.DictReader(open(folder / "entities.csv", encoding="utf-8")))
    top = [r["title"] for r in sorted(ents, key=lambda r: (-int(r["degree"] or 0), r["title"]))[:50]]
    try:
        import pyarrow.parquet as pq

        titles = [str(t) for t in pq.read_table(folder / "community_reports.parquet", columns=["title"]).to_pydict()["title"]]
    except Exception:  # noqa: BLE001 - the reference's titles are informative only
        titles = []
    return titles, top


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--embedder", default="none", choices=["none", "hashing"])
    ap.add_argument("--show", type=int, default=12, help="titles to print")
    args = ap.parse_args()
    from extraction.loader import load_folder
    from strata.pipeline import index_folder

    folder = args.folder.resolve()
    questions = ("What are the main topics?", "What themes recur?")
    with tempfile.TemporaryDirectory() as tmp:
        settings = StrataSettings(data_dir=Path(tmp) / "ws", extraction={"mode": "offline"},
                                  retrieval={"embedder": args.embedder})
        configure(settings.compute)
        index_folder(folder, settings)
        store = open_store(settings)
        snap = store.read_graph()
        reports = store.reports()
        communities = store.communities()
        chunks = store.all_chunks()
        store.close()
        from strata.engine import Engine

        engine = Engine(settings)
        try:
            answers = [engine.ask(q).text for q in questions]
        finally:
            engine.close()
    loaded = load_folder(folder)
    meta_keys = {k.casefold() for d in loaded.documents for k in d.metadata} - {"path", "dir", "ext", "line"}
    texts = [d.text for d in loaded.documents]
    prose = Prose(c.text for c in chunks)
    names = {e.id: e.name for e in snap.entities}
    top = top_by_degree(names, ((r.source_id, r.target_id) for r in snap.relations))
    ours = measure([r.title for r in reports], top, meta_keys, texts, prose)
    leaked = {"chunks": len(leaks(prose_of(c.text) for c in chunks)), "titles": len(leaks(r.title for r in reports)),
              "descriptions": len(leaks(e.description for e in snap.entities)), "answers": len(leaks(answers))}
    out: dict[str, object] = {k: v for k, v in ours.items() if not k.startswith("_")}
    out["leaks"] = leaked
    ref = _reference(folder)
    print(f"folder {folder.name}: {len(loaded.documents)} documents, {len(snap.entities)} entities, "
          f"{len(snap.relations)} relations, {len(reports)} reports")
    print("titles (highest level first):")
    for r in sorted(reports, key=lambda r: (r.level, r.community_id))[: args.show]:
        print(f"  L{r.level} {r.title}")
    print("top entities by degree:", ", ".join(top))
    print("junk among them:", "; ".join(f"{n} ({why})" for n, why in ours["_junk"]) or "none")  # type: ignore[union-attr]
    print("titles not words:", "; ".join(ours["_bad"][:10]) or "none")  # type: ignore[index]
    print("cut titles:", "; ".join(ours["_cut"][:10]) or "none")  # type: ignore[index]
    print("titles made only of identifiers:", "; ".join(ours["_idents"][:10]) or "none")  # type: ignore[index]
    print("attribute lists, raw HTML or link syntax left in:", ", ".join(f"{k} {v}" for k, v in leaked.items()))
    by_id = {r.community_id: r for r in reports}
    print("the 10 largest top-level communities:")
    for c in sorted((c for c in communities if c.level == 0), key=lambda c: (-len(c.entity_ids), c.id))[:10]:
        print(f"  {len(c.entity_ids):4d} members  {by_id[c.id].title if c.id in by_id else '(no report)'}")
    for q, a in zip(questions, answers):
        print(f"Q: {q}\n{a}")
    print("duplicated titles:", "; ".join(ours["_dupes"][:10]) or "none")  # type: ignore[index]
    if ref is not None:
        ref_titles, ref_top = ref
        theirs = measure(ref_titles, ref_top, meta_keys, texts, prose)
        out["reference"] = {k: v for k, v in theirs.items() if not k.startswith("_")}
        print(f"{'':<22}{'Strata offline':>16}{'GraphRAG reference':>20}")
        for k in ("titles", "titles_not_words", "cut_titles", "identifier_titles", "duplicate_titles", "junk_share_top50"):
            print(f"{k:<22}{ours[k]!s:>16}{theirs[k]!s:>20}")
        print("reference junk:", "; ".join(f"{n} ({why})" for n, why in theirs["_junk"]) or "none")  # type: ignore[union-attr]
    out["folder"] = folder.name
    print(json.dumps(out))


if __name__ == "__main__":
    main()
