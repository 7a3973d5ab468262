"""Whole sentences are not cut at initials ("Iain M. Banks", "J. R. R. Tolkien") or common abbreviations
("e.g.", "i.e.", "No. 5", "Dr. Watson", "U.S. Route 52", "np.", "m.in.", "ul.", "św."), while a sentence that ends in a capital letter or an abbreviation
before an ordinary sentence opening still ends there."""

from __future__ import annotations

import pytest

from communities.sentences import whole_sentences


def units(text: str) -> list[str]:
    return [text[s:e] for s, e in whole_sentences(text)]


@pytest.mark.parametrize("sentence", [
    "The novel Excession was written by Iain M. Banks in the nineties.",
    "The Hobbit was written by J. R. R. Tolkien for his children.",
    "Winnie-the-Pooh is the best known book by A. A. Milne of all.",
    "Pick a cache, e.g. Redis or Memcached, before the launch.",
    "E.g. Redis keeps every key in memory all the time.",
    "Both stores, i.e. Postgres and Redis, are backed up nightly.",
    "He lived at No. 5 Baker Street for many years.",
    "The figures are in Vol. II of the report, see Fig. 3 there.",
    "Later Dr. Watson wrote the cases down in order.",
    "The song was recorded by George R. R. Martin's\nfriends in the studio that night.",
    "Johnnycake is located on U.S. Route 52 in McDowell County.",
    "The U.K. Parliament passed the act in 1998 after a long debate.",
    # Polish abbreviations: the same model, other tables
    "Wiele miast, np. Kraków i Gdańsk, ma stare centra.",
    "W regionie leżą m.in. Gdańsk, Sopot i Gdynia nad morzem.",
    "Biuro mieści się przy ul. Marszałkowskiej od wielu lat.",
    "W 1611 r. król przeniósł dwór do nowej stolicy.",
    "Akt podpisano w sali nr. 5 zamku w obecności świadków.",
    "Kościół św. Anny stoi przy Krakowskim Przedmieściu od dawna.",
])
def test_one_sentence_is_one_unit(sentence: str) -> None:
    text = f"{sentence} The next sentence follows it here."
    assert units(text) == [sentence, "The next sentence follows it here."]


@pytest.mark.parametrize("text, expected", [
    ("The trial gave the patients vitamin C. The results were good and clear.",
     ["The trial gave the patients vitamin C.", "The results were good and clear."]),
    ("The patients were given vitamin A. A new study found that it was safe.",
     ["The patients were given vitamin A.", "A new study found that it was safe."]),
    ("He answered the question with a firm No. Nobody asked him anything again.",
     ["He answered the question with a firm No.", "Nobody asked him anything again."]),
    ("The company moved its offices to the U.S. The move took two years in all.",
     ["The company moved its offices to the U.S.", "The move took two years in all."]),
    ("The author was J. R. R. Tolkien.\n\nMany readers loved his books.",
     ["The author was J. R. R. Tolkien.", "Many readers loved his books."]),
])
def test_sentences_that_end_there_still_end(text: str, expected: list[str]) -> None:
    assert units(text) == expected


def test_a_quoted_span_is_still_the_source_text() -> None:
    text = "Read “Excession” by Iain M.\nBanks first. It is the best of them, many say."
    spans = whole_sentences(text)
    assert [text[s:e] for s, e in spans][0] == "Read “Excession” by Iain M.\nBanks first."


@pytest.mark.parametrize("text, title, expected", [
    # a document loaded with a title field opens with its title line: no part of the first sentence
    ("Lower Saxony\nLower Saxony is a state in Germany. Its capital is Hanover.", "Lower Saxony",
     ["Lower Saxony is a state in Germany.", "Its capital is Hanover."]),
    ("下萨克森州\n下薩克森，位於德國西北部，與荷蘭接壤。其首府是漢諾威，人口超過五十萬。", "下萨克森州",
     ["下薩克森，位於德國西北部，與荷蘭接壤。", "其首府是漢諾威，人口超過五十萬。"]),
    # a first line that is not the document's title is prose, whatever it looks like
    ("The revolt spread quickly from Paris to\nVienna and Berlin, where it ended.", "Revolutions of 1848",
     ["The revolt spread quickly from Paris to\nVienna and Berlin, where it ended."]),
    ("下薩克森位於德國西北部，面積四萬七千六百平方公里\n是德國第二大邦。", None,
     ["下薩克森位於德國西北部，面積四萬七千六百平方公里\n是德國第二大邦。"]),
])
def test_a_documents_title_line_is_no_part_of_its_first_sentence(text: str, title: str | None,
                                                                  expected: list[str]) -> None:
    assert [text[s:e] for s, e in whole_sentences(text, True, title)] == expected
    # not at the document's start, a chunk's first line is where a window cut: the unit it opens is dropped whole
    assert [text[s:e] for s, e in whole_sentences(text, False, title)] == expected[1:]
