"""What is never an entity, by the shape of the string: rules that hold on any prose, not word lists of one corpus.

:func:`junk_reason` names the rule a candidate breaks, or returns None:

- ``function words``: every word is a closed-class English word (articles, pronouns, prepositions,
  conjunctions, auxiliaries and modals, determiners and quantifiers) or a code literal (true, null, none, ...);
- ``RFC keyword``: the requirement keywords of RFC 2119 / RFC 8174 written in capitals (MUST, SHOULD NOT, ...)
  and the HTTP methods of RFC 9110 (GET, POST, ...);
- ``annotation``: the markers writers leave in text and code (TODO, FIXME, XXX, TBD) and admonition labels;
- ``URL piece``: a scheme, ``www``, a top-level domain, a host name, or anything holding ``://``;
- ``file or path``: a name with a file extension (``logo.png``, ``package.json``) or a path separator (a
  folder written with its trailing slash, ``package/``, included), except two or three capitalized pieces joined
  by slashes, which name one thing ("AC/DC", "TCP/IP", "I/O", "CI/CD");
- ``markup``: Markdown, HTML or template characters, or a first character that is punctuation;
- ``key: value``: a front-matter or configuration line rather than a name;
- ``ID or hash``: hexadecimal digests, UUIDs, and long tokens that alternate letters and digits or switch case
  like an encoded id (``PLoz-W_CUquUlnvoEBbqChb7A0ZEZsWSXt``), not like a camelCase word;
- ``date format``: ``YYYY-mm-dd``, ``HH:MM:SS`` and the like; ``date``: month and weekday names and their
  abbreviations alone (the "Sun, 24 Jul" of a changelog's signature line);
- ``number``: no letter at all (a number, a date, punctuation); versions are kept by the caller as versions.
"""

from __future__ import annotations

import re

FUNCTION_WORDS = frozenset("""
a an the this that these those some any no every each either neither all both half several many much more most
few fewer less least other another such what which whose whatever whichever
i me my mine myself you your yours yourself yourselves he him his himself she her hers herself it its itself we us
our ours ourselves they them their theirs themselves one ones oneself someone somebody something anyone anybody
anything everyone everybody everything nobody nothing none who whom whoever
and or nor but yet so for if then else than because although though while whereas unless until since whether
as when whenever where wherever why how however
of in on at by to from with without within into onto upon about above below over under across along among amongst
around after before behind beneath beside besides between beyond during except inside outside near off out
through throughout toward towards via per than up down like unlike against despite till
be am is are was were been being have has had having do does did doing done will would shall should can could may
might must ought need dare
not never also just only very too quite rather even still already again ever here there now then thus hence
therefore otherwise instead yes oh ah well own same please
""".split())
CODE_LITERALS = frozenset("true false null none nil undefined nan yes no on off".split())
RFC_KEYWORDS = frozenset({"MUST", "MUST NOT", "REQUIRED", "SHALL", "SHALL NOT", "SHOULD", "SHOULD NOT",
                          "RECOMMENDED", "NOT RECOMMENDED", "MAY", "OPTIONAL"})
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"})  # RFC 9110
ANNOTATIONS = frozenset({"todo", "fixme", "xxx", "tbd", "hack", "nb", "note", "notes", "warning", "caution", "tip",
                         "important", "danger", "info", "attention", "hint"})
URL_WORDS = frozenset({"http", "https", "ftp", "ftps", "mailto", "file", "www", "html", "htm", "url", "uri", "href"})
TOP_LEVEL_DOMAINS = frozenset("""
com org net io dev edu gov mil int co uk de fr nl eu us ca au jp cn ru ch se no fi es it pl be at dk cz br in info biz
app ai me tv xyz site online tech cloud page ly gl sh so to
""".split())
FILE_EXTENSIONS = frozenset("""
png jpg jpeg gif svg webp ico bmp tif tiff pdf doc docx xls xlsx ppt pptx odt txt md markdown rst adoc tex csv tsv
json jsonl yaml yml toml ini cfg conf env lock log xml html htm css scss less map zip gz tgz bz2 xz tar rar 7z whl
deb rpm dmg exe dll so dylib bin dat db sqlite parquet js mjs cjs ts tsx jsx py pyc rb go rs java kt c h cpp hpp cs
php pl sh bash zsh ps1 bat sql proto wasm mp3 mp4 wav avi mov woff woff2 ttf otf eot
""".split())
CALENDAR = frozenset("""
jan feb mar apr jun jul aug sep sept oct nov dec january february march april june july august september october
november december mon tue tues wed thu thur thurs fri sat sun monday tuesday wednesday thursday friday saturday sunday
""".split())
_CODE_EXTENSIONS = frozenset("js mjs cjs ts tsx jsx py rb go rs java kt c h cpp hpp cs php pl sh".split())

_MARKUP = re.compile(r"[<>\[\]{}|`*#=~^\\\"]|\]\(|&\w+;")
_KEY_VALUE = re.compile(r"^[\w .-]+:(?:\s|$)")
_HEX = re.compile(r"^(?:0x)?[0-9a-f]{7,}$", re.I)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_PIECES = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_DATE_FORMAT = re.compile(r"^%?(?:[yY]{2,4}|[mM]{1,4}|[dD]{1,4}|[hH]{1,2}|[sS]{1,2}|[a-zA-Z])"
                          r"(?:[-/:. T_]%?(?:[yY]{2,4}|[mM]{1,4}|[dD]{1,4}|[hH]{1,2}|[sS]{1,2}))+$")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def looks_like_id(token: str) -> bool:
    """A hexadecimal digest, a UUID, or a long token whose letters and digits alternate or whose case switches
    like an encoded id's (not like a camelCase word's)."""
    bare = token.strip("-_")
    if _UUID.match(bare):
        return True
    if _HEX.match(bare) and any(ch.isdigit() for ch in bare) and any(ch.isalpha() for ch in bare):
        return True
    if len(bare) < 10 or " " in bare:
        return False
    compact = re.sub(r"[-_]", "", bare)
    runs = re.findall(r"\d+|[^\W\d_]+", compact)
    if sum(1 for r in runs if r.isdigit()) >= 2 and len(runs) >= 4:
        return True
    pieces = _PIECES.findall(compact)
    return len(pieces) >= 6 and sum(len(p) for p in pieces) / len(pieces) < 3.0


_SLASH_NAME = re.compile(r"^[A-Z0-9][A-Za-z0-9]*(?:/[A-Z0-9][A-Za-z0-9]*){1,2}$")  # "AC/DC", "TCP/IP", "I/O", "CI/CD"


def _file_or_path(name: str) -> bool:
    if "\\" in name:
        return True
    if "/" in name:  # "a/b", "./x", "~/x", "/etc", "package/", "docs/index": a path; "TCP/IP" is a name
        return not all(_SLASH_NAME.match(tok) for tok in name.split() if "/" in tok)
    m = re.fullmatch(r"\.?([\w.-]*?\w)\.([A-Za-z0-9]{1,8})", name)
    if not m:
        return name.startswith(".") and len(name) > 1 and name[1:].replace("-", "").replace("_", "").isalnum()
    stem, ext = m.group(1), m.group(2)
    if ext.lower() not in FILE_EXTENSIONS or ext != ext.lower() and ext != ext.upper():
        return False
    if ext.lower() in _CODE_EXTENSIONS and stem[:1].isupper():
        return False  # a product named like a file ("Node.js", "Vue.js")
    return True


def _url_piece(name: str) -> bool:
    low = name.lower()
    if "://" in low or low.startswith("www.") or (low in URL_WORDS or low in TOP_LEVEL_DOMAINS) and name == low:
        return True
    parts = low.split(".")
    return len(parts) >= 2 and parts[-1] in TOP_LEVEL_DOMAINS and all(re.fullmatch(r"[a-z0-9-]+", p) for p in parts)


def junk_reason(name: str) -> str | None:
    """The rule ``name`` breaks as an entity (see the module docstring), or None when it may be one."""
    name = name.strip()
    if not any(ch.isalpha() for ch in name):
        return "number"
    if " ".join(name.split()) in RFC_KEYWORDS or name in HTTP_METHODS:
        return "RFC keyword"
    words = [w.lower().replace("’", "'") for w in _WORD.findall(name)]
    call = name[:-2] if name.endswith("()") else name
    if words and all(w in FUNCTION_WORDS or w in CODE_LITERALS for w in words) and not re.search(r"[\d_.()]", call):
        return "function words"
    if len(words) == 1 and words[0] in ANNOTATIONS and (name.isupper() or name.lower() in ("todo", "fixme", "tbd", "xxx")):
        return "annotation"
    if words and all(w.rstrip(".") in CALENDAR for w in words) and not re.search(r"[\d_]", name):
        return "date"
    if _url_piece(name):
        return "URL piece"
    if _KEY_VALUE.match(name) and " " in name.strip():
        return "key: value"
    if name.startswith(".") and _file_or_path(name):
        return "file or path"
    if _MARKUP.search(name) or not (name[0].isalnum() or name[0] in "$@" or name.startswith("-") and name[1:2].isalnum()
                                    or name.startswith("--")):
        return "markup"
    if name.endswith(":"):
        return "key: value"
    if _file_or_path(name):
        return "file or path"
    if _DATE_FORMAT.match(name) and re.search(r"[-/:.]", name):
        return "date format"
    if any(looks_like_id(tok) for tok in name.split()):
        return "ID or hash"
    if len(name) < 2:
        return "too short"
    return None
