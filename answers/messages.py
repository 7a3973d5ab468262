"""What an answer says in its own words, in the language the question is asked in.

An offline answer quotes the corpus; around the quotes it says a few things of its own: that it declines and
what came closest, that the question reads both ways, that the corpus does not cover it, which sections the
corpus has. Those sentences are Strata's interface, translated as an interface's strings are (English, Chinese,
Polish: the languages the reader is fitted and measured in; any other question reads them in English). They
decide nothing: every judgement behind them is the reader's and the router's, the same in every language.

The language is the question's (:func:`answer_language`): a question in English words stays English whatever
names it quotes in a CJK script ("What does 调度器 do?"). A Chinese question written in Traditional characters
(DRCD's, Taiwan's) reads the Chinese strings converted by OpenCC to Taiwan's standard characters (``s2tw``: 為,
not 爲), with the library the tagger already uses the other way.
"""

from __future__ import annotations

import numbers
import threading
from functools import lru_cache
from typing import Any, Sequence

from core.text import spans
from core.text.cjk import converter, traditional, words as cjk_words
from core.text.language import detect_language
from core.text.script import CJK_RUN

ENGLISH = "en"

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        "declined": "The indexed text does not seem to answer this question (the reader gives {p} that it "
                    "does; it answers from {t}).",
        "closest": "Closest, in {where}: \u201c{excerpt}\u201d [{chunk}]",
        "no_match": "No indexed chunk matches this question.",
        "both": "The question could be read either way (router confidence {c}), so both answers follow.",
        "local_label": "From the most relevant passages (local search):",
        "global_label": "From the community reports (the corpus as a whole):",
        "not_covered": "The corpus does not seem to cover this question: {why}.",
        "missing": "{words} occur nowhere in the indexed text",
        "most_missing": "most of its words occur nowhere in the indexed text",
        "far": "; no passage is close in meaning (best cosine {b})",
        "nowhere": "Not found anywhere in the corpus: {words}.",
        "no_reports": "No community reports are indexed yet.",
        "nothing_in_reports": "The community reports hold nothing that answers this question.",
        "sections": "The corpus's sections, by their share of its text: {sections}{more}.",
        "top_level": "the top-level pages",
        "section": "{name} ({share}: {pages})",
        "list": "; ",
        "pages": ", ",
        "quoted": "'{w}'",
    },
    "zh": {
        "declined": "已索引的文本似乎没有回答这个问题（阅读器估计其回答的概率为 {p}，达到 {t} 才作答）。",
        "closest": "最接近的内容，见 {where}：\u201c{excerpt}\u201d [{chunk}]",
        "no_match": "没有与这个问题匹配的已索引片段。",
        "both": "这个问题两种理解都说得通（路由置信度 {c}），因此下面给出两种回答。",
        "local_label": "来自最相关的段落（局部检索）：",
        "global_label": "来自社区报告（整个语料）：",
        "not_covered": "语料似乎没有涉及这个问题：{why}。",
        "missing": "已索引的文本中没有出现 {words}",
        "most_missing": "问题中的大多数词在已索引的文本中都没有出现",
        "far": "；也没有意思相近的段落（最高余弦相似度 {b}）",
        "nowhere": "语料中没有出现：{words}。",
        "no_reports": "尚未索引任何社区报告。",
        "nothing_in_reports": "社区报告中没有能回答这个问题的内容。",
        "sections": "语料的各个部分，按所占文本比例：{sections}{more}。",
        "top_level": "顶层页面",
        "section": "{name}（{share}：{pages}）",
        "list": "；",
        "pages": "、",
        "quoted": "\u201c{w}\u201d",
        "more": "，另有 {n} 个较小的部分",
    },
    "pl": {
        "declined": "Zaindeksowany tekst chyba nie odpowiada na to pytanie (czytnik ocenia, że odpowiada, na "
                    "{p}; odpowiada od {t}).",
        "closest": "Najbliżej, w {where}: \u201e{excerpt}\u201d [{chunk}]",
        "no_match": "Żaden zaindeksowany fragment nie pasuje do tego pytania.",
        "both": "Pytanie można rozumieć na dwa sposoby (pewność routera {c}), więc poniżej są obie odpowiedzi.",
        "local_label": "Z najtrafniejszych fragmentów (wyszukiwanie lokalne):",
        "global_label": "Z raportów o społecznościach grafu (korpus jako całość):",
        "not_covered": "Korpus chyba nie obejmuje tego pytania: {why}.",
        "missing": "w zaindeksowanym tekście nigdzie nie ma: {words}",
        "most_missing": "większości słów pytania nie ma nigdzie w zaindeksowanym tekście",
        "far": "; żaden fragment nie jest bliski znaczeniowo (najwyższy cosinus {b})",
        "nowhere": "Nigdzie w korpusie nie ma: {words}.",
        "no_reports": "Nie zaindeksowano jeszcze żadnych raportów o społecznościach grafu.",
        "nothing_in_reports": "Raporty o społecznościach grafu nie zawierają niczego, co odpowiada na to pytanie.",
        "sections": "Części korpusu według udziału w tekście: {sections}{more}.",
        "top_level": "strony najwyższego poziomu",
        "section": "{name} ({share}: {pages})",
        "list": "; ",
        "pages": ", ",
        "quoted": "\u201e{w}\u201d",
    },
}
TRADITIONAL = "zh-Hant"
_lock = threading.Lock()
_converted: dict[str, dict[str, str]] = {}


@lru_cache(maxsize=1024)
def answer_language(question: str) -> str:
    """The language an answer to ``question`` speaks in: ``en``, ``pl``, ``zh``, or ``zh-Hant`` for a Chinese
    question in Traditional characters (read its strings through :func:`say`: ``zh-Hant`` is converted, no key
    of :data:`MESSAGES`); English for any language it has no strings for. Most of its words decide (a Chinese run
    counted in the segmenter's words): "What does 调度器 do?" is English and "Co robi 调度器?" Polish, however many
    characters the names they quote take, while "Wisła在哪里？" and "主要主题？" are Chinese."""
    rest = CJK_RUN.sub(" ", question)
    chinese = sum(len(cjk_words(m.group(0))) for m in CJK_RUN.finditer(question))
    if chinese > len(spans.words(rest)) and detect_language(question) == "zh":  # most of its words are Chinese
        return TRADITIONAL if traditional(question) else "zh"
    alphabet = detect_language(rest)
    return alphabet if alphabet in ("en", "pl") else ENGLISH


def _strings(language: str) -> dict[str, str]:
    if language != TRADITIONAL:
        return MESSAGES.get(language, MESSAGES[ENGLISH])
    with _lock:
        if TRADITIONAL not in _converted:
            convert = converter("s2tw")
            # (and Taiwan's quotation marks: 「」 where Simplified text writes “”)
            _converted[TRADITIONAL] = {k: convert(v).replace("\u201c", "\u300c").replace("\u201d", "\u300d")
                                       for k, v in MESSAGES["zh"].items()}
        return _converted[TRADITIONAL]


def say(key: str, question: str, **values: Any) -> str:
    """The string ``key`` in the language of ``question``, filled with ``values`` (a number with two decimals, and
    a decimal comma in Polish)."""
    language = answer_language(question)
    shown = {k: (f"{v:.2f}".replace(".", ",") if language == "pl" else f"{v:.2f}")
             if isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral) else v for k, v in values.items()}
    return _strings(language)[key].format(**shown)


def listed(words: Sequence[str], question: str) -> str:
    """Words of the question, each quoted, as a list in the question's language ('a', 'b'; “a”、“b”)."""
    return say("pages", question).join(say("quoted", question, w=w) for w in words)


def smaller_ones(n: int, question: str) -> str:
    """", and N smaller ones" after the sections an answer names, in the question's language (English and Polish
    count their nouns in two and three forms)."""
    if n <= 0:
        return ""
    language = answer_language(question)
    if language == ENGLISH:
        return f", and {n} smaller {'one' if n == 1 else 'ones'}"
    if language == "pl":
        form = "mniejsza" if n == 1 else "mniejsze" if n % 10 in (2, 3, 4) and n % 100 not in (12, 13, 14) \
            else "mniejszych"
        return f" i {n} {form}"
    return _strings(language)["more"].format(n=n)
