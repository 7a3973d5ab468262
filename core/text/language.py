"""A cheap language detector for chunks and queries, and what an embedder's coverage means for them.

Fusing a dense ranking only helps when the embedder reads the text's language: all-MiniLM-L6-v2 on Chinese or
Polish ranks little better than chance, and fusing it in costs BM25's quality. The index therefore records the
language of every chunk and compares it, and the query's, with the embedder's ``languages``.

Detection is by script first: Han, kana and Hangul characters give ``zh``, ``ja`` and ``ko``. Latin text is
told apart by function words and diacritics: Polish (``pl``) by its letters ą ć ę ł ń ś ź ż and its
function words, English (``en``) by its stop words. Anything else, and text too short to carry a signal (a
two-word query), is ``und`` (undetermined): callers fall back to the corpus's main language. No model, no
dependency: a few regular expressions, linear in the text.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

from core.text.script import CJK_RANGES, HAN_RANGES

UNDETERMINED = "und"
NAMES = {"zh": "Chinese", "ja": "Japanese", "ko": "Korean", "pl": "Polish", "en": "English",
         UNDETERMINED: "undetermined"}

_HAN = re.compile(f"[{HAN_RANGES}]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")
_CJK_ANY = re.compile(f"[{CJK_RANGES}\u1100-\u11ff]")  # (and Hangul's conjoining letters)
_LETTER = re.compile(r"[^\W\d_]")
_LATIN_WORD = re.compile(r"[a-ząćęłńóśźżäöüéèàç]+")
_POLISH_LETTERS = re.compile(r"[ąćęłńśźż]")
# Function words that are frequent in one language and (nearly) absent from the other; words shared by both
# ("a", "i", "to", "do", "on", "no") are left out.
POLISH_FUNCTION_WORDS = frozenset("""
w z na się nie że jest jak co ale po od za przez dla czy tak jego jej są być był była było były tylko już lub
oraz ze także może można który która które którego których któ ten ta te tym tego tej jako gdy jeśli aby
bardzo przy pod nad między oraz jednak też tu tam gdzie kiedy dlaczego ich im nich nim niej sobie jeszcze więc
bez dzięki podczas według wraz wszystkie wszystkich każdy każda zostać został została zostały będzie mogą
""".split())
ENGLISH_FUNCTION_WORDS = frozenset("""
the of and is are was were be been being that this these those with from for by at which what who whom when
where why how it its they them their there has have had not but or if than then into onto over under about
would could should will can may might must does did doing an as such only also very more most other some any
""".split())


def detect_language(text: str) -> str:
    """``zh``, ``ja``, ``ko``, ``pl``, ``en`` or ``und`` for ``text``."""
    sample = text[:1000]  # enough to tell (about 150 words); keeps detection cheap beside tokenizing
    if _CJK_ANY.search(sample):
        letters = len(_LETTER.findall(sample))
        han, kana, hangul = len(_HAN.findall(sample)), len(_KANA.findall(sample)), len(_HANGUL.findall(sample))
        cjk = han + kana + hangul
        if cjk >= 0.2 * letters:
            if hangul >= 0.3 * cjk:
                return "ko"
            if kana >= 0.1 * cjk:
                return "ja"
            return "zh"
    words = _LATIN_WORD.findall(sample.casefold())
    if not words:
        return UNDETERMINED
    pl = sum(1 for w in words if w in POLISH_FUNCTION_WORDS)
    en = sum(1 for w in words if w in ENGLISH_FUNCTION_WORDS)
    # Each Polish diacritic counts as one Polish word (capped): no English word has one.
    pl_evidence = pl + min(len(_POLISH_LETTERS.findall(sample.casefold())), len(words))
    if pl_evidence > en and pl_evidence >= max(1.0, 0.1 * len(words)):
        return "pl"
    if en > pl_evidence and en >= max(1.0, 0.08 * len(words)):
        return "en"
    return UNDETERMINED


def dominant(languages: Counter[str] | Iterable[str]) -> str:
    """The most common determined language (ties: the first counted), or ``und`` when there is none."""
    counts = languages if isinstance(languages, Counter) else Counter(languages)
    best = max(((n, -i, lang) for i, (lang, n) in enumerate(counts.items()) if lang != UNDETERMINED and n > 0),
               default=None)
    return best[2] if best else UNDETERMINED


def uncovered(languages: Iterable[str], covered: frozenset[str] | None) -> list[str]:
    """The determined languages in ``languages`` that an embedder covering ``covered`` does not read
    (``None``: an embedder that claims no limit, such as character n-gram hashing)."""
    if covered is None:
        return []
    return sorted({lang for lang in languages if lang != UNDETERMINED and lang not in covered})


def describe_language(code: str) -> str:
    """``Chinese (zh)`` for ``zh``; the code itself for one without a name here."""
    name = NAMES.get(code)
    return f"{name} ({code})" if name else code
