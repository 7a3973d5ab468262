"""The base form of a Polish name the dictionary does not know, from its ending: rules learned from simplemma's
Polish dictionary.

simplemma knows "Warszawie" and "Kowalskiego", not "Macmillana", "Nasserem" or "Montiniego": the names a
Polish text borrows. Their endings inflect as the dictionary's names do, so the rules are learned from it: for
every capitalized form of a capitalized lemma (proper nouns, 700k forms), the change from form to lemma after
their common beginning ("-ego" to "-i", "-em" to "", "-ie" to "-a"), counted under each of the form's endings
of up to :data:`MAX_ENDING` letters that hold the change. A word is given the most frequent change of its
longest ending seen at least :data:`MIN_SUPPORT` times (when that change only takes letters off, below) ("Montiniego" -> "Montini", "Nasserem" -> "Nasser",
"Macmillana" -> "Macmillan"). Only endings whose rule differs from the next shorter ending's are kept (the
guesses stay the same), so the table is small (``polish_endings.json``).

A change is made only where it takes an ending off and leaves :data:`MIN_STEM` letters (:func:`apply`): the
dictionary's own names, which it knows, teach changes that put an ending on too ("Ewie" -> "Ewa"), while a
borrowed name such a change would touch is mostly in its nominative already ("Biden" would become "Bidno").

Out of sample (rules fit on nine tenths of the dictionary's capitalized lemmas, read on the forms of the other
tenth): ``python -m core.text.polish_endings`` prints the share of forms given their lemma and the share given
the base form most of their lemma's forms are given (what merges an entity's forms, right or wrong), beside the
forms kept as written; it writes the table fit on every lemma, and ``--check`` compares it with the one shipped.
No word of any language is named here: the dictionary is the labelled data.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter, defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Iterable

MAX_ENDING = 6  # letters of a word's ending the rules read (set, not tuned: longer endings hold fewer forms)
MIN_SUPPORT = 10  # forms an ending must have been seen in to give its rule
MIN_STEM = 4  # letters a guess leaves at least: a shorter stem is as likely a short word whole ("Joe", "Abu")
HELD_OUT = 0.1  # share of lemmas the printed figures are read on (by a fixed seed)
TABLE = Path(__file__).with_name("polish_endings.json")

Rule = tuple[str, str]  # (the form's ending that goes, the lemma's that comes)


def _change(form: str, lemma: str) -> Rule:
    p = 0
    while p < min(len(form), len(lemma)) and form[p] == lemma[p]:
        p += 1
    return form[p:], lemma[p:]


def _capitalized_pairs() -> list[tuple[str, str]]:
    """(form, lemma) of the dictionary's capitalized lemmas of three letters or more, each lemma a form of itself."""
    from simplemma.strategies.dictionaries import DefaultDictionaryFactory

    pairs = {(k, v) for k, v in DefaultDictionaryFactory().get_dictionary("pl").items()
             if k[:1].isupper() and v[:1].isupper() and k.isalpha() and v.isalpha() and len(v) >= 3}
    return sorted(pairs | {(v, v) for _, v in pairs})


def _counts(pairs: Iterable[tuple[str, str]]) -> dict[str, Counter[Rule]]:
    """For each ending, how often each change was seen under it (an ending always holds its change's part)."""
    counts: dict[str, Counter[Rule]] = defaultdict(Counter)
    for form, lemma in pairs:
        cut, add = _change(form, lemma)
        for k in range(len(cut), min(MAX_ENDING, len(form) - 2) + 1):
            counts[form[len(form) - k:]][(cut, add)] += 1
    return counts


def fit(pairs: Iterable[tuple[str, str]]) -> dict[str, Rule]:
    """The table: ending -> its most frequent change (ties: the first in order), for endings seen at least
    :data:`MIN_SUPPORT` times whose change differs from the next shorter such ending's."""
    top = {e: min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for e, c in _counts(pairs).items()
           if sum(c.values()) >= MIN_SUPPORT}
    table: dict[str, Rule] = {}
    for ending, rule in top.items():
        shorter = next((top[ending[len(ending) - k:]] for k in range(len(ending) - 1, 0, -1)
                        if ending[len(ending) - k:] in top), top.get(""))
        if ending == "" or rule != shorter:
            table[ending] = rule
    return table


def apply(table: dict[str, Rule], word: str) -> str:
    """``word`` with the change of its longest ending in ``table`` when that change only takes an ending off
    ("Macmillana" -> "Macmillan"); as written otherwise, or when no ending applies. A change that also puts an
    ending on is not made: the dictionary's names teach it for their own nominatives ("Ewie" -> "Ewa"), which it
    knows, while a borrowed name the rule would change is mostly in its nominative already ("Biden", not a
    case of "Bidno"; "Bedford", not of "Bedforda"), and a guess that puts letters on would split it from its
    other cases instead of merging them. Nor one that leaves fewer than :data:`MIN_STEM` letters."""
    for k in range(min(MAX_ENDING, len(word) - 2), -1, -1):
        rule = table.get(word[len(word) - k:])
        if rule is not None:
            cut, add = rule
            stem = word[:len(word) - len(cut)]
            return stem if cut and not add and word.endswith(cut) and len(stem) >= MIN_STEM else word
    return word


@lru_cache(maxsize=1)
def _table() -> dict[str, Rule]:
    return {e: (r[0], r[1]) for e, r in json.loads(TABLE.read_text(encoding="utf-8")).items()}


@lru_cache(maxsize=100_000)
def guess_lemma(word: str) -> str:
    """The base form of a capitalized Polish word the dictionary does not know, by its ending ("Macmillana" ->
    "Macmillan"); a word in lower case, or with a character other than a letter, as written."""
    if not (word[:1].isupper() and word.isalpha() and len(word) >= 3):
        return word
    return apply(_table(), word)


def held_out(pairs: list[tuple[str, str]], share: float = HELD_OUT, seed: int = 0) -> dict[str, float]:
    """The figures of a table fit on all lemmas but a random ``share``, read on that share's forms."""
    lemmas = sorted({v for _, v in pairs})
    test = set(random.Random(seed).sample(lemmas, int(len(lemmas) * share)))
    table = fit(p for p in pairs if p[1] not in test)
    forms: dict[str, list[str]] = defaultdict(list)
    for form, lemma in pairs:
        if lemma in test:
            forms[lemma].append(form)
    right = agree = n = written = 0
    for lemma, fs in forms.items():
        guesses = [apply(table, f) for f in fs]
        right += sum(g == lemma for g in guesses)
        agree += Counter(guesses).most_common(1)[0][1]
        written += sum(f == lemma for f in fs)  # the peer: every form kept as written (each its own entity)
        n += len(guesses)
    return {"lemmas": len(forms), "forms": n, "lemma_right": round(right / n, 4), "forms_agree": round(agree / n, 4),
            "as_written": round(written / n, 4)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="fit again and compare with the shipped table")
    args = ap.parse_args(argv)
    pairs = _capitalized_pairs()
    figures = held_out(pairs)
    print(f"held out ({HELD_OUT:.0%} of {len({v for _, v in pairs})} capitalized lemmas, {figures['forms']} forms): "
          f"given their lemma {figures['lemma_right']:.3f}; given their lemma's most common guess "
          f"{figures['forms_agree']:.3f} (kept as written, the peer: {figures['as_written']:.3f} for both)")
    table = fit(pairs)
    text = json.dumps({e: list(r) for e, r in sorted(table.items())}, ensure_ascii=False, separators=(",", ":"))
    if args.check:
        same = TABLE.exists() and TABLE.read_text(encoding="utf-8").strip() == text
        print(f"{len(table)} endings; the shipped table {'matches' if same else 'DIFFERS'}")
        return 0 if same else 1
    TABLE.write_text(text + "\n", encoding="utf-8")
    print(f"{len(table)} endings written to {TABLE.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
