"""What an answer says in its own words is said in the question's language: English, Chinese (Simplified or
Traditional, as the question writes) or Polish; any other language reads English."""

from __future__ import annotations

import re

from answers.messages import MESSAGES, answer_language, say, smaller_ones


def test_every_language_has_every_string_with_the_same_fields() -> None:
    fields = {k: set(re.findall(r"\{(\w+)", v)) for k, v in MESSAGES["en"].items()}
    for language, strings in MESSAGES.items():
        assert set(strings) - {"more"} == set(fields), language
        for key, text in strings.items():
            assert set(re.findall(r"\{(\w+)", text)) == fields.get(key, {"n"}), (language, key)


def test_the_question_decides_the_language() -> None:
    assert answer_language("Why did the billing-service return HTTP 504?") == "en"
    assert answer_language("What does 调度器 do?") == "en"  # English words around a Chinese name
    assert answer_language("调度器和工作节点之间是什么关系？") == "zh"
    assert answer_language("調度器和工作節點之間是什麼關係？") == "zh-Hant"
    assert answer_language("Dlaczego usługa rozliczeń zwróciła błąd?") == "pl"
    assert answer_language("Warum ist der Dienst ausgefallen?") == "en"  # no strings of its own: English
    assert answer_language("Co robi 调度器 w tych notatkach?") == "pl"  # Polish words around a Chinese name
    assert answer_language("瀋阳在哪里？") == "zh"  # Simplified text with one Traditional character
    assert answer_language("台北在哪裡？") == "zh-Hant"  # one character each way
    assert answer_language("Wisła在哪里？") == answer_language("Stiglitz在2009年提出了什么？") == "zh"  # most words


def test_a_decline_reads_in_the_questions_language() -> None:
    zh = say("declined", "调度器和工作节点之间是什么关系？", p=0.12, t=0.25)
    assert "0.12" in zh and "0.25" in zh and not re.search(r"[A-Za-z]", zh)
    hant = say("declined", "調度器和工作節點之間是什麼關係？", p=0.12, t=0.25)
    assert hant != zh and "這個問題" in hant and "為" in hant and "爲" not in hant  # Taiwan's standard characters
    assert "「摘錄」" in say("closest", "調度器是什麼？", where="a.md", excerpt="摘錄", chunk="a#0")
    pl = say("declined", "Dlaczego usługa rozliczeń zwróciła błąd?", p=0.12, t=0.25)
    assert pl.startswith("Zaindeksowany tekst") and "0,12" in pl and "0.12" not in pl  # a decimal comma
    assert smaller_ones(1, "Jakie są tematy?") == " i 1 mniejsza"
    assert smaller_ones(3, "Jakie są tematy?") == " i 3 mniejsze"
    assert smaller_ones(12, "Jakie są tematy?") == " i 12 mniejszych"
    assert smaller_ones(2, "What are the topics?") == ", and 2 smaller ones"
    assert smaller_ones(0, "Jakie są tematy?") == ""
