"""Names in a sentence: the one name finder, shared by the offline extractor and the question's reading.

It finds the identifiers of technical notes (services, error codes, configuration keys, databases, versions),
capitalized names in prose, and in Chinese the proper names jieba's tagger finds (people, places, organizations,
other proper nouns) and candidate technical terms (runs of nouns the segmenter splits, such as 调度+器;
:mod:`core.text.cjk`). It never keeps what :mod:`core.text.junk` rules out (function words, RFC keywords, file
names, URL pieces, markup, IDs and hashes, numbers). Capitals alone do not make a name: a word written in capitals
that the text also uses as an ordinary lower-case word ("MUST") is emphasis or a heading.

The extractor (:mod:`extraction.offline`) decides which of the names found become entities (a sentence-opening
word that recurs mid-sentence, a possessive phrase a document repeats, a term it uses twice); the router
(:mod:`routing.model`) counts the names and identifiers a question holds. A name's key, how names are compared
everywhere (the entity merge, the lexicon, the graph walk), is :func:`core.text.keys.normalize_name`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Container, Iterable

from core.text import cjk
from core.text.junk import FUNCTION_WORDS, junk_reason
from core.text.script import CJK_CHAR, CJK_RANGES, HAN_RANGES, HAN_WORD, NAME_INITIALS, NAME_JOINERS, QUOTATION_MARKS

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

# A word character of an alphabetic script: a name in Latin (or any alphabetic) letters ends where Han, kana or Hangul
# begins, since those scripts write no space between words ("DECnet是" is the name DECnet and the particle 是).
_LW = rf"(?:(?![{CJK_RANGES}])\w)"

CODE_NAME_CHARS = (2, 80)  # a code span names something when its text is this long (`b` is a variable, not a name)

# Patterns in priority order: earlier patterns win when spans overlap.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    # a code span as CommonMark pairs one: a run of backticks closed by a run of the same length, here within a
    # name's length (so a stray backtick, or quotes typed as ``...'', pair with nothing); its length is judged
    # after pairing (a pattern that asks for two characters pairs the closing backtick of `b` with the next span's
    # opening one, and takes the prose between for code)
    ("code", re.compile(r"(?<!`)(`+)(?!`)([^\n]{1,%d}?)(?<!`)\1(?!`)" % CODE_NAME_CHARS[1])),
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
    # a run of Han characters (an interpunct inside joins the parts of a transliterated name: 卡万·肖特, and an
    # initial in Latin capitals between two: 约翰·F·肯尼迪)
    ("cjk", re.compile(rf"[{HAN_RANGES}](?:[{HAN_RANGES}]|[{NAME_JOINERS}](?=[{HAN_RANGES}])"
                       rf"|(?:[{NAME_JOINERS}][{NAME_INITIALS}])+(?=[{NAME_JOINERS}][{HAN_RANGES}]))+"
                       r"|[\u30a0-\u30ff]{2,}|[\uac00-\ud7af]{2,}")),
]
_CONTRACTION = re.compile(r"[A-Za-z]+['’](?:ve|ll|re|m|d|t)", re.I)
_FILE_EXT = re.compile(r"\.(?:txt|md|py|js|ts|json|yaml|yml|toml|log|csv|html|sh|conf|ini|cfg|xml|com|org|net|io)$")


@dataclass(frozen=True, slots=True)
class Found:
    start: int
    end: int
    name: str
    type: str
    at_start: bool = False  # a single capitalized word opening its sentence (kept only if it recurs mid-sentence)
    opens: bool = False  # a run of capitalized words opening its clause: its first word is capitalized by position
    possessive: bool = False  # "<Name>'s <noun>" (kept only if the document uses it more than once)
    quoted: bool = False  # a single word quoted alone ("Titanic", "Save"): a name unless written in lower case
    term: bool = False  # a run of Chinese nouns (kept only if the document uses it in more than one sentence)
    joins: tuple[tuple[str, str], ...] = ()  # a span of Chinese words: its pairs of neighbours (kept when cohesive)


# A word standing alone (not a piece of an identifier, path or code); it is an ordinary word when it is all in
# lower case, in any alphabet with case ("what's", "według", "größe"; a script without case has none).
_ORDINARY = re.compile(r"(?<![\w.\-/@$`'’])[^\W\d_]+(?:['’][^\W\d_]+)?(?![\w.\-/@`(])")
# A word and the next one, with at most a comma between them, and the word after that when only spaces come
# between (both read ahead, not consumed).
_WORD_THEN_WORD = re.compile(r"(?<![\w.\-/@$`'’])([^\W\d_]+)(,?[ \t]+)(?=([^\W\d_][^\W_]*)(?:[ \t]+([^\W\d_][^\W_]*))?)")


def ordinary_words(views: Iterable[str]) -> frozenset[str]:
    """Words the text uses in lower case as ordinary words (not inside identifiers, paths or code)."""
    return frozenset(w for v in views for w in lower_case_words(v))


def lower_case_words(view: str) -> list[str]:
    """The words a prose view writes in lower case as ordinary words, each use (not the pieces of an identifier
    or path: "consul" of "providers.consul.endpoint" is none)."""
    return [w for w in _ORDINARY.findall(view) if w.islower()]


LETTER_WORD = re.compile(r"[^\W\d_]+")  # a run of letters: a word of prose, in any script
_SENTENCE_END = re.compile(r"[.!?…。！？]\W*$")
TITLE_CASE_SHARE = 0.8  # of a line's words capitalized, from which the line is written in title case


def title_case_line(view: str, text: str | None = None) -> bool:
    """Whether a sentence or a line (its prose view; ``text``: what the view was made from) is written in title
    case, as a heading is ("Spread the Love & Tell Us About It" as a subtitle, "Install Traefik Alongside NGINX" as
    a list item): three words or more, at least :data:`TITLE_CASE_SHARE` of them capitalized, no mark ending a
    sentence, and no table row (each cell is a clause of its own, read as one: "| Anna Nowak | Warsaw |"). Its
    capitals are its style's, and say nothing of any one word. The share was set, not tuned: prose capitalizes
    far fewer of its words, though a short item may capitalize three of its four ("Deploys to Google Cloud")."""
    stripped = view.strip()
    words = LETTER_WORD.findall(stripped)
    if len(words) < 3 or _SENTENCE_END.search(stripped) or "|" in (view if text is None else text):
        return False
    return sum(w[:1].isupper() for w in words) >= TITLE_CASE_SHARE * len(words)


def upper_case_line(view: str, text: str | None = None, lower: Container[str] = frozenset()) -> bool:
    """Whether a sentence or a line (its prose view; ``text``: what the view was made from) is written in capitals,
    as a licence's disclaimer or a warning shouts ("THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS"): three
    words of two letters or more, at least :data:`TITLE_CASE_SHARE` of them all in capitals, and at least
    :data:`SHOUTED_LOWER_WORDS` of those words the text writes in lower case elsewhere (``lower``: a shouted clause
    shouts its ordinary words too, where a list of acronyms, "Protocols: HTTP, HTTPS, TCP, UDP.", has none); no
    table row, and no letter of a script without case (a Chinese sentence naming "HTTP" and "TCP" shouts
    nothing). Its capitals are its style's, as a title-case line's are, and say nothing of any one word; a
    sentence may end it, as it ends a shouted clause."""
    if "|" in (view if text is None else text):
        return False
    words = [w for w in LETTER_WORD.findall(view) if len(w) >= 2]
    capitals = [w for w in words if w.isupper()]
    # (the scan for a letter without case last: every sentence of prose is asked, and nearly all fail before it)
    return (len(words) >= 3 and len(capitals) >= TITLE_CASE_SHARE * len(words)
            and sum(w.lower() in lower for w in capitals) >= SHOUTED_LOWER_WORDS
            and not any(ch.isalpha() and ch.lower() == ch.upper() for ch in view))


SHOUTED_LOWER_WORDS = 2  # words of a line in capitals that the text writes in lower case, for the line to shout


# of the words after a heading's first that a document writes in lower case elsewhere, the share capitalized in its
# headings from which it writes them in title case (set, not tuned: title case capitalizes every word but short
# function words, sentence case none but names)
HEADING_TITLE_CASE_SHARE = 0.5
# a document's most used words in lower case, which both styles leave in lower case ("the", "of", "w", "i"): they
# tell neither
HEADING_STYLE_FREQUENT = 20


def headings_in_title_case(headings: Iterable[str], lower: Counter[str]) -> bool:
    """Whether a document writes its headings in title case ("Install Traefik Alongside NGINX"), not in sentence
    case ("Standard library types", "Historia Uniwersytetu Jagiellońskiego"): of the words after a heading's first
    that the document writes in lower case (``lower``: its uses of each), but for its
    :data:`HEADING_STYLE_FREQUENT` most used, at least :data:`HEADING_TITLE_CASE_SHARE` are capitalized there.
    With none to judge by, title case (a capital then says nothing either way)."""
    frequent = {w for w, _ in lower.most_common(HEADING_STYLE_FREQUENT)}
    capital = uncapitalized = 0
    for heading in headings:
        for w in LETTER_WORD.findall(heading)[1:]:
            key = w.lower()
            if key in lower and key not in frequent:
                if w.islower():
                    uncapitalized += 1
                elif w[:1].isupper():
                    capital += 1
    judged = capital + uncapitalized
    return judged == 0 or capital >= HEADING_TITLE_CASE_SHARE * judged


def capitalized_mid_sentence(view: str, text: str | None = None) -> list[tuple[str, str]]:
    """The words a prose view writes with a capital right after a word in lower case (a comma between them
    allowed), lower cased, each use, with the next word when it is capitalized too ("" when not): there the
    capital is the word's own, not its position's ("in New York" gives ("new", "york"); never "In" of "In
    1990"). ``text``: what the view was made from, offsets kept; where it has more than spaces and a comma between
    the two words (a table's pipe, a tag, an emphasis mark the view blanked), they are not counted."""
    out = []
    for m in _WORD_THEN_WORD.finditer(view):
        prev, gap, word, after = m.group(1), m.group(2), m.group(3), m.group(4) or ""
        if not (prev.islower() and word[0].isupper()):
            continue
        if text is not None and text[m.start(2):m.end(2)] != gap:
            continue
        out.append((word.lower(), after.lower() if after[:1].isupper() else ""))
    return out


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
    """Whether a word at ``offset`` opens its sentence: after a full stop or a colon (and any quotation marks
    between), or a table cell's border (a cell's text opens like a sentence: "| Main domain name |")."""
    prefix = sentence[:offset].strip(" \t\n(*#-—–_>" + QUOTATION_MARKS)
    return not prefix or prefix[-1] in ".!?:;|"


def opening_quote(sentence: str, offset: int) -> bool:
    """Whether the word at ``offset`` stands right after a quotation mark that opens a quotation, in any language:
    the mark is before the word (spaces aside: “ Flung) and follows no letter or digit of an alphabetic script
    („Kiedy, “When, »Lalkę, 'Change; after a Chinese character too: 以“Flung). A mark after such a word closes
    (»Lalkę« Prusa, the players' union) or is no quote (l'Italia)."""
    i = len(sentence[:offset].rstrip())
    if i == 0 or sentence[i - 1] not in QUOTATION_MARKS:
        return False
    before = sentence[i - 2] if i >= 2 else " "
    return not before.isalnum() or CJK_CHAR.match(before) is not None


def _quoted_alone(sentence: str, start: int, end: int) -> bool:
    """Whether the name at [start, end) is a quotation of its own, a mark opening right before it and one closing
    right after it („Batory”, “Titanic”, "The New York Times"): a title, or a name quoted as such, whose capital
    is its own, not its clause's."""
    after = sentence[end + 1:end + 2] or " "
    return (opening_quote(sentence, start) and end < len(sentence) and sentence[end] in QUOTATION_MARKS
            and (not after.isalnum() or CJK_CHAR.match(after) is not None))


_REMARK = re.compile(r"\(\s*[a-z][a-z ,-]*\)$")  # "(optional)", "(deprecated)"
_PARENTHETICAL = re.compile(r"\([^()]*\)$")


def _opens_clause(sentence: str, offset: int) -> bool:
    """Whether a word at ``offset`` opens its sentence, a quotation (:func:`opening_quote`), a heading, a list item
    or a table cell, follows a quotation that closed with its clause ("... goodness----'" then "Here Scrooge"), or
    stands right after a code span, a type annotation or a lower-case remark in parentheses (an API reference's
    "* `callback` {Function} (optional) Invoked when ...": the item's description opens there, and "Function" is
    a type, not a name; "Lothair II (835-869) King of ..." is not such a remark), or after any parenthetical that
    itself opens the clause, as a remark before it does ("| (Deprecated) Defines the ... |", "(Reuters) Ministers
    met ...")."""
    while True:
        prefix = sentence[:offset].rstrip()
        closed = prefix.rstrip(QUOTATION_MARKS)  # (a quotation closing with its clause: "...goodness----'\nHere")
        if (not prefix or prefix[-1] in ".!?:;(*#>—–-]{}`|" or opening_quote(sentence, offset)
                or (closed != prefix and (not closed or closed[-1] in ".!?:;—–-"))
                or _REMARK.search(prefix) is not None or _is_sentence_start(sentence, offset)):
            return True
        aside = _PARENTHETICAL.search(prefix)
        if aside is None:
            return False
        offset = aside.start()  # (the parenthetical before it: does it open the clause?)


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
    # Drop leading determiners and common words where the clause opens, which capitalizes them ("The Ghost" ->
    # "Ghost", "When Scrooge" -> "Scrooge"); mid-sentence a capital is the word's own, and the word is part of
    # the name ("in New York", "from Let's Encrypt", "by Will Smith"), as it is in a title quoted alone ("„Say My
    # Name”", "“The New York Times”").
    opening = _opens_clause(sentence, start) and not _quoted_alone(sentence, start, start + len(raw.rstrip("'’")))
    while opening and words and words[0] not in _TITLES and _bare(words[0]) in _WORD_STOP:
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
        if sentence[start + shift + len(word):].lstrip(QUOTATION_MARKS).startswith(":"):
            # A lone capitalized word before a colon is a label ("Incident:", "Operation: Dulce", "Note:"), or a
            # key when quoted ("Authorization": ...).
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
_CJK_RUN = dict(_PATTERNS)["cjk"]
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


def find_entities(sentence: str, ordinary: frozenset[str] | None = None) -> list[Found]:
    """Entities in one sentence (of a prose view), in order of appearance, non-overlapping but for a Chinese
    run's candidate terms (a run of nouns and the nouns in it: the extractor keeps the longest it judges a term).
    ``ordinary``: the words the document uses in lower case (by default the sentence's own), which a run in
    capitals does not make a name. Patterns are tried in priority order: a span an earlier one took is not free to a later one."""
    if ordinary is None:
        ordinary = ordinary_words([sentence])
    finds = _Finds()
    names_view = _title_lines_apart(sentence)
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(names_view if kind in ("name", "possessive") else sentence):
            if kind == "possessive":
                _possessive(m, sentence, finds)
            elif kind == "name":
                _name(m, sentence, ordinary, finds)
            elif kind == "cjk":
                # (a run's own candidates may overlap: a run of nouns and the nouns in it, each judged alone)
                # (checked against what was taken inside the run alone: a long run has many candidates)
                inside = [(ts, te) for ts, te in finds.taken if ts < m.end() and te > m.start()]
                for f in [f for f in _chinese(sentence[m.start():m.end()], m.start())
                          if _clear(f.start, f.end, inside)]:
                    finds.add(f)
            else:
                _identifier(kind, m, sentence, finds)
    return sorted(finds.found, key=lambda f: f.start)


def _clear(s: int, e: int, taken: Iterable[tuple[int, int]]) -> bool:
    """Whether the span [s, e) overlaps none of ``taken``."""
    return all(e <= ts or s >= te for ts, te in taken)


class _Finds:
    """The names found in one sentence so far, and the spans taken (by them, or by code that holds no name)."""

    def __init__(self) -> None:
        self.taken: list[tuple[int, int]] = []
        self.found: list[Found] = []

    def free(self, s: int, e: int) -> bool:
        return _clear(s, e, self.taken)

    def add(self, f: Found) -> None:
        self.taken.append((f.start, f.end))
        self.found.append(f)

    def keep(self, s: int, e: int, text: str, etype: str | None, opens: bool = False, quoted: bool = False) -> None:
        """A name of type ``etype`` at a free span, unless it is junk (a bare version never is); ``opens``: it
        opens its clause; ``quoted``: a single word quoted alone."""
        if etype is None or not self.free(s, e):
            return
        if etype != "version" and junk_reason(text) is not None:
            return
        if etype == "name" and text.lower() in DATABASES:
            etype = "database"
        self.add(Found(s, e, text, etype, opens=opens, quoted=quoted))


def _identifier(kind: str, m: re.Match[str], sentence: str, finds: _Finds) -> None:
    """A code span, an error code, a function, a configuration key, a constant, a kebab- or camel-case name."""
    s, e = m.span()
    text = sentence[s:e]
    etype: str | None = kind
    if kind == "code":
        s, e = m.span(2)
        text = m.group(2).strip()
        if len(text) < CODE_NAME_CHARS[0]:
            return  # `b` names nothing
        if len(text.split()) > 4 or junk_reason(text) is not None:
            # A snippet of code, a path, a URL: not a name, and nothing inside it is one either.
            if finds.free(m.start(), m.end()):
                finds.taken.append(m.span())
            return
        etype = "service" if text.split("-")[-1] in SERVICE_SUFFIXES else "identifier"
    elif kind == "error_code":
        text = re.sub(r"^http[ /-]?", "HTTP ", text.strip(), flags=re.I) if text.lower().startswith("http") else text.strip()
        if re.fullmatch(r"[1-5]\d\d", text):
            text = f"HTTP {text}"
    elif kind == "function":
        etype = "identifier"
    elif kind == "config_key":
        if _FILE_EXT.search(text) or text.count(".") and len(text.split(".")[0]) < 2:
            return
    elif kind == "constant":
        etype = "config_key"
    elif kind == "kebab":
        etype = _classify_kebab(text)
    elif kind == "camel":
        etype = "database" if text.lower() in DATABASES else "identifier"
    finds.keep(s, e, text, etype)


def _possessive(m: re.Match[str], sentence: str, finds: _Finds) -> None:
    """"<Name>'s <noun>": the phrase (kept by the extractor when a document repeats it) and its owner."""
    s, e = m.span()
    owner, noun = m.group(1), m.group(2)
    if (_bare(owner.split()[0]) in _WORD_STOP or noun in FUNCTION_WORDS or noun in _WORD_STOP
            or noun.endswith("ly") or not finds.free(s, e)):
        return
    if junk_reason(owner) is not None:
        return
    finds.taken.append((s, e))
    finds.found.append(Found(s, e, sentence[s:e], "name", possessive=True))
    finds.found.append(Found(s, s + len(owner), owner, _type_for_name(owner)))


def _name(m: re.Match[str], sentence: str, ordinary: frozenset[str], finds: _Finds) -> None:
    """A capitalized run: the names inside a run in capitals, or the run trimmed to a name; a single word that
    opens its clause is marked ``at_start``."""
    s, e = m.span()
    text = sentence[s:e]
    if sentence[max(0, s - 1):s] == "[" and sentence[m.end():m.end() + 1] == "]":
        return  # a tag in brackets ("[CHANGE]", "[Illustration]"), not a name
    if _is_caps(text) and sentence[m.end():m.end() + 1] == ":":
        return  # a label in capitals ("BEHAVIOR CHANGE:", "WARNING:")
    if _is_caps(text) and not (" " not in text.strip() and len(text.strip()) <= 4):
        # (a lone word of two to four capitals is an acronym: HTTP, LED, AWS)
        for ps, piece in _caps_names(text, s, ordinary):
            pe = ps + len(piece)
            if finds.free(ps, pe) and junk_reason(piece) is None and not _CONTRACTION.fullmatch(piece):
                finds.add(Found(ps, pe, piece, _type_for_name(piece)))
        return
    cleaned = _clean_name(text, sentence, s)
    if cleaned is None:
        return
    text, shift = cleaned
    s = s + shift
    e = s + len(text)
    etype = _type_for_name(text)
    if text.lower() in DATABASES:
        etype = "database"
    # (only a name's opening is read: a single word's, a run's; a name quoted alone opens no clause of its own)
    alone = etype == "name" and _quoted_alone(sentence, s, e)
    opens = etype == "name" and not alone and _opens_clause(sentence, s)
    if opens and " " not in text:
        if finds.free(s, e) and junk_reason(text) is None:
            finds.add(Found(s, e, text, etype, at_start=True))
        return
    finds.keep(s, e, text, etype, opens, quoted=alone and " " not in text)


_CJK_KINDS = {"person": "person", "place": "location", "organization": "organization", "name": "name"}
TERM_MIN_CHARS = 3  # a run of nouns shorter than this is two common words side by side, not a term
SPAN_MAX_WORDS = 4  # words of a span of Chinese words that may be a term (超级+碗, 公民+不+服从), at most
SPAN_MAX_CHARS = 8  # and characters


def _chinese(run: str, offset: int, with_spans: bool = True) -> list[Found]:
    """The proper names of a run of Chinese text (typed by the tagger), and its candidate terms, with offsets
    ``offset`` on: runs of two or more nouns of at least :data:`TERM_MIN_CHARS` characters (调度+器), and the
    nouns the segmenter keeps whole (:data:`core.text.cjk.TERM_TAGS`: 黑死病, 蒸汽机, 齿轮), inside such a run
    too: a run and its nouns may overlap, and the extractor judges each by its uses; and spans of two to
    :data:`SPAN_MAX_WORDS` words of a run that may hold a term (:func:`core.text.cjk.segments`), with their joins,
    which the extractor keeps only where the corpus writes those words together (not ``with_spans``: none)."""
    out = [Found(offset + n.start, offset + n.start + len(n.text), n.text, _CJK_KINDS[n.kind])
           for n in cjk.names(run)]
    named = [(f.start, f.end) for f in out]

    def term(s: int, e: int, joins: tuple[tuple[str, str], ...] = ()) -> None:  # a candidate term at [s, e),
        if _clear(s, e, named):  # unless it overlaps a name
            out.append(Found(s, e, run[s - offset:e - offset], "concept", term=True, joins=joins))

    toks = cjk.tagged(run)
    runs: set[tuple[int, int]] = set()
    i = 0
    while i < len(toks):
        j = i
        while j < len(toks) and toks[j].tag in cjk.NOUN_TAGS and toks[j].word.strip():
            j += 1
        if j - i >= 2:
            s, e = offset + toks[i].start, offset + toks[j - 1].start + len(toks[j - 1].word)
            if e - s >= TERM_MIN_CHARS:
                term(s, e)
                runs.add((s, e))
        for t in toks[i:max(j, i + 1)]:  # its nouns, each alone (齿轮 of 齿轮+磨损)
            if t.tag in cjk.TERM_TAGS and HAN_WORD.fullmatch(t.word):
                term(offset + t.start, offset + t.start + len(t.word))
        i = max(j, i + 1)
    # Spans of words that the dictionary does not hold as one and tags otherwise (超级+碗, 免疫+缺陷, 公民+不+服从):
    # candidates the extractor keeps only where the corpus writes their words together (their joins).
    for seg in cjk.segments(run) if with_spans else ():
        for a in range(len(seg)):
            for b in range(a + 2, min(len(seg), a + SPAN_MAX_WORDS) + 1):
                s, e = offset + seg[a].start, offset + seg[b - 1].start + len(seg[b - 1].word)
                if TERM_MIN_CHARS <= e - s <= SPAN_MAX_CHARS and (s, e) not in runs:
                    term(s, e, tuple((seg[k].word, seg[k + 1].word) for k in range(a, b - 1)))
    return sorted(out, key=lambda f: f.start)


def chinese_segments(view: str) -> Iterable[tuple[str, ...]]:
    """The runs of Chinese words in a text's prose view that may hold a term (:func:`core.text.cjk.segments`), as
    their words: what the corpus's counts of words standing together (:class:`extraction.wordlike.WordModel`)
    read."""
    for m in _CJK_RUN.finditer(view):
        if HAN_WORD.search(m.group(0)):
            for seg in cjk.segments(m.group(0)):
                yield tuple(t.word for t in seg)


def chinese_terms(view: str) -> set[str]:
    """The candidate terms of a text's prose view (:func:`_chinese`), each once: what the corpus's count of the
    documents using a term (:class:`extraction.wordlike.WordModel`) reads. Not the spans of words, which are
    judged by their joins instead, and at three characters or more are never a common word (``common_term``)."""
    return {f.name for m in _CJK_RUN.finditer(view) if HAN_WORD.search(m.group(0))
            for f in _chinese(m.group(0), 0, with_spans=False) if f.term}

