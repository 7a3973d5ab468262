"""The shared text primitives (core.text): folding, the shapes of values and Chinese names, in English, Polish and
Chinese (Simplified and Traditional)."""

from __future__ import annotations

import pytest

from core.text import cjk, shapes
from core.text.fold import fold
from core.text.script import cjk_share, has_cjk


def test_folding_removes_case_accents_and_compatibility_forms_only() -> None:
    assert fold("Aschenbrödel") == "aschenbrodel"
    assert fold("ＡＢＣ") == "abc"
    assert fold("Łódź") == "łodz"  # ł has no decomposition: it stays
    assert fold("梵語") == "梵語"


def test_numerals_in_any_script() -> None:
    assert shapes.numerals("The Panthers gave up 308 points in 2015.") == {"308", "2015"}
    assert "1,5" in shapes.numerals("Wzrost o 1,5 procent w 2016 r.")
    found = shapes.numerals("黑豹队的防守只丢了 308分，三次迫使掉球")
    assert "308" in found and "三次" in found
    assert not shapes.numerals("No value here at all.")


def test_names_are_capitalized_runs_that_do_not_merely_open_a_sentence() -> None:
    assert shapes.names("Jan Kowalski kieruje zespołem w Warszawie.") == ("Jan Kowalski", "Warszawie")
    assert shapes.names("Rollo swore fealty to King Charles III of West Francia.") == (
        "King Charles III", "West Francia")
    assert shapes.names("Nothing here is a name.") == ()


def test_chinese_names_come_from_the_tagger_and_keep_their_script() -> None:
    simplified = [n.text for n in cjk.names("职业碗防守截锋卡万·肖特以 11 分领先于全队")]
    assert "卡万·肖特" in simplified  # an interpunct joins a transliterated name
    traditional = cjk.names("在歐洲，梵語的學術研究，由德國學者陸特和漢斯雷頓開創。")
    texts = [n.text for n in traditional]
    assert "歐洲" in texts and "德國" in texts  # tagged through their Simplified form, returned as written
    assert all(len(t) >= 2 for t in texts)
    assert {n.kind for n in traditional} >= {"place"}
    assert all("於" != t for t in texts)


@pytest.mark.parametrize("text, name", [
    ("1982年，米格尔·德·拉·马德里当选墨西哥总统。", "米格尔·德·拉·马德里"),  # 拉, a part the tagger reads as a verb
    ("法军统帅路易斯•约瑟夫•德•蒙科姆在战斗中阵亡。", "路易斯•约瑟夫•德•蒙科姆"),  # 蒙+科姆: through the name token
    ("托尔斯坦·凡勃伦是美国经济学家。", "托尔斯坦·凡勃伦"),  # 托尔斯+坦: cut before the interpunct
])
def test_a_name_joined_by_interpuncts_is_one_name_whatever_its_parts_are_tagged(text: str, name: str) -> None:
    found = [n.text for n in cjk.names(text)]
    assert name in found and not any(f != name and f in name for f in found), found


@pytest.mark.parametrize("text, expected", [
    ("导演·张艺谋·主演·巩俐", ["张艺谋", "巩俐"]),  # an interpunct that separates fields joins no names
    ("李白·静夜思·杜甫", ["李白", "杜甫"]),
    ("约翰·在北京工作。", ["约翰", "北京"]),  # a preposition is no piece of a name
    ("张伟·男·1980年出生", ["张伟"]),  # a name ends on a part tagged as a name
    ("张三说·李四", ["张三", "李四"]),
    ("他与约翰·史密斯见面后离开了。", ["约翰·史密斯"]),
])
def test_an_interpunct_joins_no_more_than_the_parts_of_a_name(text: str, expected: list[str]) -> None:
    assert [n.text for n in cjk.names(text)] == expected


@pytest.mark.parametrize("text, names", [
    ("1961年，约翰·F·肯尼迪就任总统。", ["约翰·F·肯尼迪"]),
    ("乔治·H·W·布什出生于1924年。", ["乔治·H·W·布什"]),  # two initials
    ("约翰·Ｆ·肯尼迪就任总统。", ["约翰·Ｆ·肯尼迪"]),  # a fullwidth initial
    ("约翰·F肯尼迪就任总统。", ["约翰", "肯尼迪"]),  # no interpunct after the initial: no part of a name
    ("约翰·FBI·肯尼迪到访。", ["约翰", "肯尼迪"]),  # an initial is one letter
    ("见张伟·A。", ["张伟"]),
    ("张伟·a·李娜见面。", ["张伟", "李娜"]),  # a lower-case letter is no initial
])
def test_a_latin_initial_between_interpuncts_is_a_part_of_the_name_around_it(text: str, names: list[str]) -> None:
    from core.text.names import find_entities

    # the extractor's names (find_entities) and a question's (cjk.names, as the reader reads it) agree
    assert [f.name for f in find_entities(text) if f.type == "person"] == names
    assert [n.text for n in cjk.names(text)] == names


def test_new_values_are_those_the_question_does_not_hold() -> None:
    question = "How many points did the Panthers give up in 2015?"
    assert shapes.new_values(shapes.numerals("They gave up 308 points in 2015."), question) == ["308"]
    assert shapes.new_values(("Panthers", "Carolina"), question) == ["Carolina"]


def test_paths_and_code_spans_but_not_link_targets() -> None:
    assert "{prefix}/lib/node_modules" in shapes.paths("Global installs go to `{prefix}/lib/node_modules`.")
    assert not shapes.paths("See [the config](/using-npm/config#global) and https://x.org/a/b")
    assert shapes.code_spans("Run `npm ci` in CI.") == {"npm ci"}


def test_scripts() -> None:
    assert has_cjk("调度器 runs") and not has_cjk("scheduler")
    assert cjk_share("调度器") == 1.0 and cjk_share("abc") == 0.0


def test_a_lone_capital_is_no_name() -> None:
    assert shapes.names("How do I turn off the telemetry?") == ()
    assert shapes.names("We ask Plan B of Warsaw.") == ("Plan B", "Warsaw")


def test_a_text_shortened_for_display_ends_at_a_word_or_a_character_within_its_limit() -> None:
    from core.text.shorten import shorten

    assert shorten("L2 · Grafana  dashboards\n and alerts", 80) == "L2 · Grafana dashboards and alerts"  # one line
    assert shorten("Roll out with deployctl apply --canary 10 before the window", 30) == "Roll out with deployctl…"
    assert shorten("a " + "x" * 50, 20) == "a " + "x" * 17 + "…"  # no word's end in the cut's second half
    long_zh = "香港大学位于香港岛西部，是香港历史最悠久的大学。" * 3
    assert shorten(long_zh, 20) == long_zh[:19] + "…"
    for text in ("Roll out with deployctl apply --canary 10 before the window", "a " + "x" * 50, long_zh):
        assert len(shorten(text, 20)) <= 20
