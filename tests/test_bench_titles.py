"""bench.titles' junk rules: an ID or a hash is junk, a class or method name from an API reference is not; markup a
reader should not see is a leak."""

from __future__ import annotations

from collections import Counter

from bench.titles import junk, leaks, prose_of, title_not_words


def test_ids_and_hashes_are_junk_and_code_names_are_not() -> None:
    none: Counter[str] = Counter()
    for token in ("PLoz-W_CUquUlnvoEBbqChb7A0ZEZsWSXt", "eyJhbGciOiJIUzI1NiJ9", "x8Fz2LqP0mWn", "3f9a2b1c0d"):
        assert junk(token, set(), none, none) == "5 ID or hash", token
    for token in ("ClientHttp2Session.setLocalWindowSize", "h2cClient.destroy", "Http2SessionManager"):
        assert junk(token, set(), none, none) is None, token
    assert not title_not_words("Window size set via ClientHttp2Session.setLocalWindowSize()", set(), none, none)
    assert title_not_words("PLoz-W_CUquUlnvoEBbqChb7A0ZEZsWSXt: lang, playlist and twitter", set(), none, none)


def test_link_and_block_syntax_left_as_text_is_a_leak() -> None:
    leaked = ["Only [`list`][] instances are valid.", "Raises [`ValidationError`][pydantic_core.ValidationError].",
              "See [the guide](https://example.org).", "/// version-changed | v2\nA field has no default.",
              "<!-- a comment -->", "## Title { #title }"]
    clean = ["Only `list` instances are valid.", "Index m[0], grid[row][col] and the list [1, 2] stay.",
             "A path such as a/b///c."]
    assert leaks(leaked) == leaked and leaks(clean) == []
    assert leaks([prose_of("Code keeps `x[a][b]` as it is.")]) == []
