"""A deterministic offline extractor: typed entities by pattern, relations by co-occurrence in a sentence.

It needs no model and gives the same output for the same text on every machine. It finds the identifiers of
technical notes (services, error codes, configuration keys, databases, versions), capitalized names in prose, and
in Chinese the proper names jieba's tagger finds (people, places, organizations, other proper nouns) and the
technical terms a document repeats (runs of nouns the segmenter splits, such as 调度+器: a term when the document
uses the whole run in more than one sentence; :mod:`core.text.cjk`). In a Polish document a name is given in its
base form ("w Warszawie", "z Warszawy" are both Warszawa; :mod:`core.text.lemma`), so its cases are one entity. It reads the prose view of the text (:mod:`extraction.markup`: Markdown, HTML, front matter, code
blocks and licence boilerplate blanked, offsets kept), and never keeps what :mod:`extraction.junk` rules out
(function words, RFC keywords, file names, URL pieces, markup, IDs and hashes, numbers), nor bare versions.
Capitals alone do not make a name: a word written in capitals that the document also uses as an ordinary lower-case word ("MUST",
"BLOCK OF CURIOUSLY HEAVY CAKE") is emphasis or a heading, and "<Name>'s <noun>" is an entity of its own only
when the document uses the phrase more than once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Sequence

from core.text import cjk
from core.text.language import detect_language
from core.text.lemma import polish_name
from core.text.sentences import cut_inside
from extraction.junk import FUNCTION_WORDS, junk_reason
from extraction.markup import clip, document_boilerplate, prose_view
from extraction.types import ChunkExtraction, EntityMention, ExtractionResult, RelationMention
from extraction.wordlike import WordModel
from core.records import Chunk
from core.settings import ExtractionSettings


DATABASES = {
    "postgres", "postgresql", "mysql", "mariadb", "redis", "kafka", "mongodb", "cassandra", "elasticsearch",
    "opensearch", "sqlite", "neo4j", "clickhouse", "dynamodb", "memcached", "rabbitmq", "etcd", "zookeeper",
    "cockroachdb", "bigquery", "snowflake", "s3", "minio",
}
SERVICE_SUFFIXES = (
    "service", "svc", "api", "worker", "gateway", "proxy", "db", "cache", "queue", "server", "cluster", "pod",
    "job", "cron", "lb", "bus", "store", "daemon", "agent", "controller", "operator", "scheduler", "router",
    "broker", "consumer", "producer", "frontend", "backend", "app", "ui",
)
_WORD_STOP = set("""
a an and are as at be been but by can could did do does for from had has have he her hers him his how i if in
into is it its let may me might my no nor not of on once only or our ours she should so some such than that the
their them then there these they this those though through to too under until up upon us was we were what when
where which while who whom why will with would yes you your yet all any each every few more most other same both
either neither after before again also always never now here once very just even still perhaps however although
because since unless whether within without about above across against along among around behind below beneath
beside between beyond during except inside near off onto outside over past per round toward towards via well oh
ah mr mrs ms dr sir madam said says say one two three four five six seven eight nine ten first second third last
next new old good great little much many chapter part section note notes see yesterday today tomorrow monday
tuesday wednesday thursday friday saturday sunday january february march april june july august september october
november december come go look see tell call use run set check nothing something everything anything someone everyone no not nobody
""".split())
COMMON_WORDS = frozenset(_WORD_STOP)  # common words that are never names on their own
_TITLES = {"Mr.", "Mrs.", "Ms.", "Dr.", "Mr", "Mrs", "Ms", "Dr", "St.", "Prof."}
_CONNECTORS = {"of", "de", "von", "van", "der", "la", "le", "du", "di"}

# "<Name>'s <noun>" ("Scrooge's nephew", "Alice's team"): kept when the document uses the phrase more than once.
POSSESSIVE_MIN_USES = 2

# A word character of an alphabetic script: a name in Latin (or any alphabetic) letters ends where Han, kana or Hangul
# begins, since those scripts write no space between words ("DECnet是" is the name DECnet and the particle 是).
_LW = r"(?:(?![\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af])\w)"

# Patterns in priority order: earlier patterns win when spans overlap.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("code", re.compile(r"`([^`\n]{2,80})`")),
    ("error_code", re.compile(r"\bHTTP[ /-]?[1-5]\d\d\b|\b[1-5]\d\d (?=(?:error|errors|response|responses|status)\b)", re.I)),
    ("error_code", re.compile(r"\b(?:[A-Z]{1,6}-\d{2,6}|E\d{3,6}|[A-Z]{2,}\d{2,6}|ERR_[A-Z0-9_]+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:ERROR|FAILED|TIMEOUT|EXCEEDED|DENIED|REFUSED|RESET))\b")),
    ("function", re.compile(r"\b[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*\(\)")),
    ("version", re.compile(r"\bv\d+(?:\.\d+){1,3}(?:-[0-9A-Za-z.]+)?\b|\b\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?\b")),
    ("config_key", re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b[a-z][a-z0-9_]+(?:\.[a-z][a-z0-9_]+){1,5}\b(?!\()")),
    ("constant", re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")),
    ("kebab", re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b")),
    ("camel", re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+\b|\b[a-z]+[A-Z][A-Za-z0-9]*\b")),
    ("possessive", re.compile(r"\b((?:(?:Mr|Mrs|Ms|Dr|St|Prof)\.\s+)?[A-Z][a-z]+(?:(?:\s+(?:of|de|von|van|der|la|le|du|di)"
                              r"(?:\s+the)?)?\s+[A-Z][a-z]+)*)['’]s\s+([a-z]{3,})\b")),
    ("name", re.compile(rf"(?:\b(?:Mr|Mrs|Ms|Dr|St|Prof)\.\s+)?(?<!{_LW})[A-Z](?:{_LW}|[’'])*(?:-(?:{_LW}|[’'])+|/[A-Z0-9]{_LW}*(?!{_LW}|/))*(?:(?:\s{{1,3}}(?:of|de|von|van|der|la|le|du|di)(?:\s{{1,3}}the)?)?\s{{1,3}}[A-Z](?:{_LW}|[’'])*(?:-(?:{_LW}|[’'])+|/[A-Z0-9]{_LW}*(?!{_LW}|/))*)*")),
    # a run of Han characters (an interpunct inside joins the parts of a transliterated name: 卡万·肖特)
    ("cjk", re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf](?:[\u4e00-\u9fff\u3400-\u4dbf]|[·‧•・](?=[\u4e00-\u9fff]))+"
                       r"|[\u30a0-\u30ff]{2,}|[\uac00-\ud7af]{2,}")),
]
# A sentence ends at . ! ? (core.text.sentences judges abbreviations), at CJK full stops, blank lines and list items.
_SENT_SPLIT = re.compile(
    r"(?<=[.!?。！？])[\"'”’)\]]*\s+|\n\s*\n|\n(?=[#*\-] )|\n(?=[ \t]*\|)|(?<=[。！？；])")
_WORDS = re.compile(r"[^\W_]+(?:[_'’.-][^\W_]+)*", re.UNICODE)
_WORDS_PUNCT = re.compile(r"[^\W_]+(?:[_'’.-][^\W_]+)*[,;:]?", re.UNICODE)
_CONTRACTION = re.compile(r"[A-Za-z]+['’](?:ve|ll|re|m|d|t)", re.I)
_FILE_EXT = re.compile(r"\.(?:txt|md|py|js|ts|json|yaml|yml|toml|log|csv|html|sh|conf|ini|cfg|xml|com|org|net|io)$")


@dataclass(frozen=True, slots=True)
class _Found:
    start: int
    end: int
    name: str
    type: str
    at_start: bool = False  # a single capitalized word opening its sentence (kept only if it recurs mid-sentence)
    possessive: bool = False  # "<Name>'s <noun>" (kept only if the document uses it more than once)
    term: bool = False  # a run of Chinese nouns (kept only if the document uses it in more than one sentence)


def _trim(text: str, view: str, s: int, e: int) -> tuple[int, int] | None:
    """A span without the whole lines the view blanks (code, front matter) at either end, nor outer spaces."""
    while s < e:
        nl = view.find("\n", s, e)
        if nl < 0 or view[s:nl].strip():
            break
        s = nl + 1
    while s < e:
        nl = view.rfind("\n", s, e)
        if nl < 0 or view[nl:e].strip():
            break
        e = nl
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return (s, e) if view[s:e].strip() else None


def split_sentences(text: str, boilerplate: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """Sentence spans of ``text`` (ends of ., !, ?, CJK full stops and semicolons, blank lines, list items,
    heading lines and table rows), found on its prose view: code blocks, front matter and licence boilerplate
    (``boilerplate``: spans found in the whole document) hold no sentence. A full stop after an abbreviation or an
    initial ends none (:func:`core.text.sentences.cut_inside`). Spans are of ``text`` itself, trimmed."""
    view = prose_view(text, keep_structure=True, extra=boilerplate)
    spans, pos = [], 0
    for m in _SENT_SPLIT.finditer(view):
        if m.start() > pos:
            spans.append((pos, m.start()))
        pos = m.end()
    if pos < len(view):
        spans.append((pos, len(view)))
    out: list[tuple[int, int]] = []
    for s, e in spans:
        lead = len(view[s:e]) - len(view[s:e].lstrip())
        nl = view.find("\n", s + lead, e)
        parts = [(s, nl), (nl + 1, e)] if view[s + lead:s + lead + 1] == "#" and nl >= 0 else [(s, e)]
        for ps, pe in parts:  # a heading line is a unit of its own
            t = _trim(text, view, ps, pe)
            if not t:
                continue
            if out and cut_inside(text[out[-1][0]:out[-1][1]], text[out[-1][1]:t[0]], text[t[0]:t[1]], COMMON_WORDS):
                out[-1] = (out[-1][0], t[1])  # an abbreviation or an initial, not a sentence end: one sentence
            else:
                out.append(t)
    return out


_ORDINARY = re.compile(r"(?<![\w.\-/@$`'’])[a-z]+(?:['’][a-z]+)?(?![\w.\-/@`(])")


def ordinary_words(views: Iterable[str]) -> frozenset[str]:
    """Words the text uses in lower case as ordinary words (not inside identifiers, paths or code)."""
    return frozenset(w for v in views for w in _ORDINARY.findall(v))


def _is_caps(run: str) -> bool:
    letters = [ch for ch in run if ch.isalpha()]
    return len(letters) >= 2 and all(ch.isupper() for ch in letters)


def _caps_names(run: str, start: int, ordinary: frozenset[str]) -> list[tuple[int, str]]:
    """The names inside a run written in capitals: its words that are neither common words nor words the text
    uses in lower case, grouped as they stand next to each other. Returns (offset, name) pairs."""
    out: list[tuple[int, str]] = []
    group: list[tuple[int, str]] = []
    for m in re.finditer(r"\S+", run):
        word = m.group(0).rstrip(",;:!?")
        bare = _bare(word).strip(".")
        if (sum(ch.isalpha() for ch in bare) >= 2 and bare not in ordinary and bare not in _WORD_STOP
                and bare not in FUNCTION_WORDS):
            group.append((start + m.start(), re.sub(r"(?:'S|’S|'s|’s)$", "", word)))
            if word != m.group(0) or re.search(r"(?:'S|’S|'s|’s)$", word):
                out.append((group[0][0], " ".join(w for _, w in group)))
                group = []
        else:
            if group:
                out.append((group[0][0], " ".join(w for _, w in group)))
            group = []
    if group:
        out.append((group[0][0], " ".join(w for _, w in group)))
    return out


def _is_sentence_start(sentence: str, offset: int) -> bool:
    prefix = sentence[:offset].strip(" \t\n\"'“‘(*#-—–_>")
    return not prefix or prefix[-1] in ".!?:;“\"‘'"


_REMARK = re.compile(r"\(\s*[a-z][a-z ,-]*\)$")  # "(optional)", "(deprecated)"


def _opens_clause(sentence: str, offset: int) -> bool:
    """Whether a word at ``offset`` opens its sentence, a quotation, a heading or a list item, or stands right
    after a code span, a type annotation or a lower-case remark in parentheses (an API reference's "* `callback`
    {Function} (optional) Invoked when ...": the item's description opens there, and "Function" is a type, not a
    name; "Lothair II (835-869) King of ..." is not such a remark)."""
    prefix = sentence[:offset].rstrip()
    return (not prefix or prefix[-1] in ".!?:;“\"‘'(*#>—–-]{}`" or _REMARK.search(prefix) is not None
            or _is_sentence_start(sentence, offset))


def _classify_kebab(token: str) -> str | None:
    parts = token.split("-")
    if any(ch.isdigit() for ch in token) and any(len(p) >= 3 for p in parts):
        return "service" if parts[-1] in SERVICE_SUFFIXES else "identifier"
    if parts[-1] in SERVICE_SUFFIXES or parts[0] in SERVICE_SUFFIXES:
        return "service"
    return None


def _bare(word: str) -> str:
    """A word lower-cased without quotes or a possessive ending ("What’s" -> "what")."""
    return re.sub(r"(?:'s|’s|'|’)$", "", word.lower()).strip("’'")


def _clean_name(raw: str, sentence: str, start: int) -> tuple[str, int] | None:
    """Trim a capitalized run to a name; returns the name and its offset shift, or None when it is no name."""
    words = raw.split()
    shift = 0
    # Drop leading determiners and common words ("The Ghost" -> "Ghost", "When Scrooge" -> "Scrooge").
    while words and words[0] not in _TITLES and _bare(words[0]) in _WORD_STOP:
        shift = raw.find(words[1], shift + len(words[0])) if len(words) > 1 else len(raw)
        words = words[1:]
    while words and (words[-1].lower() in _CONNECTORS or words[-1].lower() == "the"):
        words = words[:-1]
    if not words:
        return None
    name = " ".join(words)
    name = re.sub(r"(?:'s|’s|'|’)$", "", name).strip("-")
    if len(name) < 2 or not any(ch.isalpha() for ch in name):
        return None
    if len(words) == 1:
        word = words[0]
        if _bare(word) in _WORD_STOP or _CONTRACTION.fullmatch(word):
            return None
        if sentence[start + shift + len(word):].startswith(":"):
            # A lone capitalized word before a colon is a label ("Incident:", "Operation: Dulce", "Note:").
            return None
        if _is_sentence_start(sentence, start + shift):
            # A capitalized word opening a sentence is a name only if it does not look like a common word.
            lower = word.lower()
            if lower.endswith(("ing", "ly", "ed")) or len(word) < 3:
                return None
            if re.search(r"(?<![.!?“\"]\s)\b" + re.escape(lower) + r"\b", sentence):
                return None
    if name in _TITLES:
        return None
    return name, shift


def _type_for_name(name: str) -> str:
    lower = name.lower()
    if lower in DATABASES:
        return "database"
    if name.isupper() and len(name) <= 6 and " " not in name:
        return "concept"
    return "name"


_NAME_PATTERN = dict(_PATTERNS)["name"]
_TRAILING_PARENS = re.compile(r"\s*\([^()\n]*\)\s*$")


def _title_lines_apart(sentence: str) -> str:
    """``sentence`` with the line break after each line that is a name alone (a title line: "Kate Ramsay" above
    "Kate Ramsay is a fictional character ...", or names and commas with a closing parenthesis: "Leland, North
    Carolina", "Twins (group)") made a character no name runs across, so the title and the words after it stay
    apart; offsets are unchanged. A name wrapped over two lines of prose still reads
    as one: its first line holds more than the name."""
    if "\n" not in sentence:
        return sentence
    lines = sentence.split("\n")
    for i, line in enumerate(lines[:-1]):
        title = _TRAILING_PARENS.sub("", line).strip()  # "Twins (group)", "Leland, North Carolina"
        if title and all(_NAME_PATTERN.fullmatch(part.strip()) for part in title.split(",")):
            lines[i] = line + "\x00"
        else:
            lines[i] = line + "\n"
    return "".join(lines)


def find_entities(sentence: str, ordinary: frozenset[str] | None = None) -> list[_Found]:
    """Entities in one sentence (of a prose view), non-overlapping, in order of appearance. ``ordinary``: the
    words the document uses in lower case (by default the sentence's own), which a run in capitals does not
    make a name."""
    if ordinary is None:
        ordinary = ordinary_words([sentence])
    taken: list[tuple[int, int]] = []
    found: list[_Found] = []

    def free(s: int, e: int) -> bool:
        return all(e <= ts or s >= te for ts, te in taken)

    names_view = _title_lines_apart(sentence)
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(names_view if kind in ("name", "possessive") else sentence):
            s, e = m.span()
            text = sentence[s:e]
            etype: str | None = kind
            if kind == "code":
                s, e = m.span(1)
                text = m.group(1).strip()
                if len(text.split()) > 4 or junk_reason(text) is not None:
                    # A snippet of code, a path, a URL: not a name, and nothing inside it is one either.
                    if free(m.start(), m.end()):
                        taken.append(m.span())
                    continue
                etype = "service" if text.split("-")[-1] in SERVICE_SUFFIXES else "identifier"
            elif kind == "error_code":
                text = re.sub(r"^http[ /-]?", "HTTP ", text.strip(), flags=re.I) if text.lower().startswith("http") else text.strip()
                if re.fullmatch(r"[1-5]\d\d", text):
                    text = f"HTTP {text}"
            elif kind == "function":
                etype = "identifier"
            elif kind == "config_key":
                if _FILE_EXT.search(text) or text.count(".") and len(text.split(".")[0]) < 2:
                    continue
            elif kind == "constant":
                etype = "config_key"
            elif kind == "kebab":
                etype = _classify_kebab(text)
            elif kind == "camel":
                etype = "database" if text.lower() in DATABASES else "identifier"
            elif kind == "possessive":
                owner, noun = m.group(1), m.group(2)
                if (_bare(owner.split()[0]) in _WORD_STOP or noun in FUNCTION_WORDS or noun in _WORD_STOP
                        or noun.endswith("ly") or not free(s, e)):
                    continue
                if junk_reason(owner) is not None:
                    continue
                taken.append((s, e))
                found.append(_Found(s, e, text, "name", possessive=True))
                found.append(_Found(s, s + len(owner), owner, _type_for_name(owner)))
                continue
            elif kind == "name":
                if sentence[max(0, s - 1):s] == "[" and sentence[m.end():m.end() + 1] == "]":
                    continue  # a tag in brackets ("[CHANGE]", "[Illustration]"), not a name
                if _is_caps(text) and sentence[m.end():m.end() + 1] == ":":
                    continue  # a label in capitals ("BEHAVIOR CHANGE:", "WARNING:")
                if _is_caps(text) and not (" " not in text.strip() and len(text.strip()) <= 4):
                    # (a lone word of two to four capitals is an acronym: HTTP, LED, AWS)
                    for ps, piece in _caps_names(text, s, ordinary):
                        pe = ps + len(piece)
                        if free(ps, pe) and junk_reason(piece) is None and not _CONTRACTION.fullmatch(piece):
                            taken.append((ps, pe))
                            found.append(_Found(ps, pe, piece, _type_for_name(piece)))
                    continue
                cleaned = _clean_name(text, sentence, s)
                if cleaned is None:
                    continue
                text, shift = cleaned
                s = s + shift
                e = s + len(text)
                etype = _type_for_name(text)
                if text.lower() in DATABASES:
                    etype = "database"
                if etype == "name" and " " not in text and _opens_clause(sentence, s):
                    if not free(s, e) or junk_reason(text) is not None:
                        continue
                    taken.append((s, e))
                    found.append(_Found(s, e, text, etype, at_start=True))
                    continue
            elif kind == "cjk":
                for f in _chinese(text, s):
                    if free(f.start, f.end):
                        taken.append((f.start, f.end))
                        found.append(f)
                continue
            if etype is None or not free(s, e):
                continue
            if etype != "version" and junk_reason(text) is not None:
                continue
            if etype == "name" and text.lower() in DATABASES:
                etype = "database"
            taken.append((s, e))
            found.append(_Found(s, e, text, etype))
    found.sort(key=lambda f: f.start)
    return found


_CJK_KINDS = {"person": "person", "place": "location", "organization": "organization", "name": "name"}
TERM_MIN_CHARS = 3  # a run of nouns shorter than this is a common word (国家, 时间), not a term


def _chinese(run: str, offset: int) -> list[_Found]:
    """The proper names of a run of Chinese text (typed by the tagger), and its runs of two or more nouns of at
    least :data:`TERM_MIN_CHARS` characters as candidate terms, with offsets ``offset`` on."""
    out = [_Found(offset + n.start, offset + n.start + len(n.text), n.text, _CJK_KINDS[n.kind])
           for n in cjk.names(run)]
    named = [(f.start, f.end) for f in out]
    toks = cjk.tagged(run)
    i = 0
    while i < len(toks):
        j = i
        while j < len(toks) and toks[j].tag in cjk.NOUN_TAGS and toks[j].word.strip():
            j += 1
        if j - i >= 2:
            s, e = offset + toks[i].start, offset + toks[j - 1].start + len(toks[j - 1].word)
            if e - s >= TERM_MIN_CHARS and all(e <= ns or s >= ne for ns, ne in named):
                out.append(_Found(s, e, run[s - offset:e - offset], "concept", term=True))
        i = max(j, i + 1)
    return sorted(out, key=lambda f: f.start)


def _recurring_terms(sentences: Iterable["_Sentence"]) -> frozenset[str]:
    """The candidate terms used in more than one sentence of the document (counted once per place)."""
    places: dict[str, set[int]] = {}
    for sent in sentences:
        for f in sent.found:
            if f.term:
                places.setdefault(f.name, set()).add(sent.start)
    return frozenset(k for k, v in places.items() if len(v) >= 2)


def _between(sentence: str, a: _Found, b: _Found, max_words: int) -> str:
    rest = sentence[a.end:b.start]
    owner = re.match(r"['’]s\b", rest)  # "Alex's submission ...": the possessive stays with its name
    first = a.name + owner.group(0) if owner else a.name
    if re.match(r"\s*[,;:]", rest[owner.end():] if owner else rest):
        first += re.match(r"\s*([,;:])", rest[owner.end():] if owner else rest).group(1)  # type: ignore[union-attr]
    # Words, with the commas, semicolons and colons that follow them (a list stays readable as a list).
    words = _WORDS_PUNCT.findall(rest[owner.end():] if owner else rest)
    if len(words) > max_words:
        words = words[: max_words // 2] + ["…"] + words[-(max_words - max_words // 2):]
    middle = " ".join(words)
    return f"{first} {middle} {b.name}".replace("  ", " ").strip()


@dataclass(frozen=True, slots=True)
class _Sentence:
    text: str  # the sentence's prose view
    start: int  # its offset in the document (for counting a phrase once where chunks overlap)
    found: tuple[_Found, ...]


def _chunk_sentences(chunk: Chunk, boilerplate: Sequence[tuple[int, int]], ordinary: frozenset[str] | None,
                     view: str | None = None) -> list[_Sentence]:
    bp = clip(boilerplate, chunk.start, chunk.end)
    view = prose_view(chunk.text, extra=bp) if view is None else view
    return [_Sentence(view[s:e], chunk.start + s, tuple(find_entities(view[s:e], ordinary)))
            for s, e in split_sentences(chunk.text, bp)]


def _repeated_possessives(sentences: Iterable[_Sentence]) -> frozenset[str]:
    """The "<Name>'s <noun>" phrases used at more than one place of the document (counted once per place)."""
    places: dict[str, set[int]] = {}
    for sent in sentences:
        for f in sent.found:
            if f.possessive:
                places.setdefault(f.name.lower().replace("’", "'"), set()).add(sent.start + f.start)
    return frozenset(k for k, v in places.items() if len(v) >= POSSESSIVE_MIN_USES)


class OfflineExtractor:
    """Pattern entities and sentence co-occurrence relations; deterministic and free."""

    mode = "offline"

    def __init__(self, settings: ExtractionSettings, words: WordModel | None = None) -> None:
        """``words``: what the corpus's words look like (:mod:`extraction.wordlike`); a name none of whose
        tokens is word-like by it (a hash, a hex range, an example value) is no entity. None: every name may be."""
        self.settings = settings
        self.words = words

    def extract_chunk(self, chunk: Chunk, names_mid_sentence: frozenset[str] | None = None) -> ChunkExtraction:
        """Entities and relations of one chunk read alone. A single capitalized word that only ever opens a
        sentence ("Operation", "Connection", "Latency") is kept only when it also occurs as a name mid-sentence
        in ``names_mid_sentence`` (by default the chunk's own names); what a document tells about its words
        (boilerplate, lower-case words, repeated phrases) comes from the chunk alone."""
        view = prose_view(chunk.text)
        sentences = _chunk_sentences(chunk, (), ordinary_words([view]), view)
        recurring = names_mid_sentence if names_mid_sentence is not None else _mid_sentence_words(
            f for sent in sentences for f in sent.found)
        return self._build(chunk, sentences, recurring, _repeated_possessives(sentences) | _recurring_terms(sentences),
                           _base_form(view) if self.settings.name_base_forms else str)

    def _build(self, chunk: Chunk, sentences: Sequence[_Sentence], recurring: frozenset[str],
               phrases: frozenset[str], base: Callable[[str], str] = str) -> ChunkExtraction:
        entities: dict[str, EntityMention] = {}
        relations: list[RelationMention] = []
        limit = self.settings.max_entities_per_sentence
        for sent in sentences:
            sentence = sent.text
            # A bare version is a number: the same "1.0.0" belongs to unrelated products, so it is no graph entity
            # (find_entities still reports it, for the router's identifier evidence).
            found = [f for f in sent.found if (not f.at_start or f.name in recurring) and f.type != "version"
                     and (not f.possessive or f.name.lower().replace("’", "'") in phrases)
                     and (not f.term or f.name in phrases)]
            if self.words is not None:
                found = [f for f in found if f.type in _SHAPED_TYPES or _CJK_SCRIPT.search(f.name)
                         or self.words.wordlike(f.name) and not (_PLAIN_WORD.fullmatch(f.name) and f.type == "identifier"
                                                                 and self.words.prose_word(f.name))]
            if base is not str:
                found = [replace(f, name=base(f.name)) if f.type in _BASE_FORM_TYPES else f for f in found]
            snippet = " ".join(sentence.split())[:240]
            for f in found:
                entities.setdefault(f.name, EntityMention(f.name, f.type, snippet))
            unique: list[_Found] = []
            for f in found:
                if all(u.name != f.name for u in unique):
                    unique.append(f)
            for i, a in enumerate(unique):
                # In crowded sentences only nearby entities are linked, so lists do not become cliques.
                partners = unique[i + 1:] if len(unique) <= limit else unique[i + 1:i + 3]
                for b in partners:
                    if b.start < a.end:
                        continue  # a name inside a phrase that holds it ("Scrooge" in "Scrooge's nephew")
                    relations.append(RelationMention(a.name, b.name, _between(sentence, a, b, self.settings.relation_max_words)))
        return ChunkExtraction(chunk.id, tuple(entities.values()), tuple(relations))

    def extract(self, chunks: Sequence[Chunk]) -> ExtractionResult:
        """Extract every chunk, judging per document (from all of its chunks given): its licence boilerplate,
        the words it uses in lower case, whether a sentence-opening word recurs as a name, and which
        possessive phrases it repeats."""
        by_doc: dict[str, list[Chunk]] = {}
        for c in chunks:
            by_doc.setdefault(c.document_id, []).append(c)
        per_chunk: dict[str, tuple[list[_Sentence], frozenset[str], frozenset[str]]] = {}
        for cs in by_doc.values():
            boilerplate = document_boilerplate([(c.start, c.text) for c in cs])
            views = {c.id: prose_view(c.text, extra=clip(boilerplate, c.start, c.end)) for c in cs}
            ordinary = ordinary_words(views.values())
            sentences = {c.id: _chunk_sentences(c, boilerplate, ordinary, views[c.id]) for c in cs}
            every = [sent for ss in sentences.values() for sent in ss]
            recurring = _mid_sentence_words(f for sent in every for f in sent.found)
            phrases = _repeated_possessives(every) | _recurring_terms(every)
            base = _base_form(" ".join(views.values())) if self.settings.name_base_forms else str
            for c in cs:
                per_chunk[c.id] = (sentences[c.id], recurring, phrases, base)
        return ExtractionResult(tuple(self._build(c, *per_chunk[c.id]) for c in chunks))


_BASE_FORM_TYPES = frozenset({"name", "person", "location", "organization"})
# Entities whose shape makes them what they are (an error code holds a number), not judged by the corpus's word
# model; nor are names in Chinese, Japanese or Korean script (jieba's tagger judges Chinese names and terms).
_SHAPED_TYPES = frozenset({"error_code", "version"})
# A code span holding one plain lower-case word that the corpus's prose uses as a word ("the `main` branch") is that
# word, not a name.
_PLAIN_WORD = re.compile(r"[a-z]+")
_CJK_SCRIPT = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _base_form(view: str) -> Callable[[str], str]:
    """How a document's names are given: in their base form in a Polish document (:func:`polish_name`), as
    written in any other."""
    return polish_name if detect_language(view) == "pl" else str


def _mid_sentence_words(found: Iterable[_Found]) -> frozenset[str]:
    """The words of the names found mid-sentence ("Sam" from "... said Sam Rivera")."""
    return frozenset(w for f in found if f.type == "name" and not f.at_start for w in f.name.split())
