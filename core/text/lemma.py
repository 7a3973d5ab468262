"""Polish lemmas, from simplemma's Polish dictionary (MIT, no dependencies): the one lemmatizer BM25 terms, entity
names and question spans share, so that "Warszawie", "Warszawy" and "Warszawa" meet as one word.

A word the dictionary does not know (an English term in Polish text, an identifier) has no lemma here; callers
keep it as written (or give it the English stem, as the tokenizer does)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=200_000)
def polish_lemma(word: str) -> str | None:
    """The lemma of a Polish word, in the word's own case ("Warszawie" -> "Warszawa"), or None when unknown."""
    import simplemma

    # low_memory: the dictionary stays one decompressed front-coded stream with a block index, decoded per lookup,
    # instead of a dict of every form (the same lemmas; about 55 MB instead of 365 MB in a serving process, which
    # loads it at its first Polish question; a lookup is about 5x slower, and the caches here absorb repeats).
    if not word or not simplemma.is_known(word, lang="pl", low_memory=True):
        return None
    lemma = simplemma.lemmatize(word, lang="pl", low_memory=True)
    if word[:1].isupper() and lemma[:1].islower():
        lemma = lemma[:1].upper() + lemma[1:]
    return lemma


# The kinds of entity a Polish document names in base form (identifiers and concepts are kept as spelled).
BASE_FORM_TYPES = frozenset({"name", "person", "location", "organization"})


def name_lemma(word: str) -> str:
    """The base form of a word of a Polish name: the dictionary's lemma, or for a capitalized word it does not
    know the one its ending gives (:func:`core.text.polish_endings.guess_lemma`: "Macmillana" -> "Macmillan",
    rules learned from the dictionary's own names); else as written."""
    from core.text.polish_endings import guess_lemma

    return polish_lemma(word) or guess_lemma(word)


def polish_name(name: str) -> str:
    """A Polish name in its base form, word by word (:func:`name_lemma`: "Jana Kowalskiego" -> "Jan Kowalskie",
    "Harolda Macmillana" -> "Harold Macmillan")."""
    return " ".join(name_lemma(w) for w in name.split(" "))


def words_in_base_form(name: str) -> int:
    """How many of a Polish name's words the text wrote in their base form ("Polska Akademia Nauk": two, the
    genitive "Nauk" aside; "Polskiej Akademii Nauk": none). A word the dictionary does not know counts as in its
    base form: a guess from its ending (:func:`name_lemma`) merges a name's cases, but is no word to show."""
    return sum(polish_lemma(w) in (None, w) for w in name.split(" "))


def forms(span: str, language: str) -> tuple[str, ...]:
    """The forms a question's span may name an entity by: as written, and in a Polish question also its base
    form (a Polish document's names are merged by their base form, which the lexicon keeps beside the name as
    written: "w Warszawie" names Warszawa, "Polskiej Akademii Nauk" names Polska Akademia Nauk)."""
    if language != "pl":
        return (span,)
    base = polish_name(span)
    return (span,) if base == span else (span, base)
