"""Misspelt query words (graphmem._spelling): which words are tried, and what they link to."""

from __future__ import annotations

import pytest

from graphmem._spelling import is_typo_candidate, typo_variant


@pytest.mark.parametrize("word", ["persue", "educaton", "recieve", "definately", "kayakng"])
def test_a_word_in_no_english_word_list_may_be_a_typo(word: str) -> None:
    assert is_typo_candidate(word)


@pytest.mark.parametrize(
    "word",
    [
        "likely",  # one edit from "lively", but a word: never changed
        "status",  # one edit from "statue"
        "paintings",  # a word form
        "recv",  # under five letters
        "Persue",  # capitalised: a name, left to the name rules
        "persue2",  # not letters only
        "pérsue",  # not ASCII: other languages' words are not checked against English
    ],
)
def test_real_words_short_words_and_names_are_never_typos(word: str) -> None:
    assert not is_typo_candidate(word)


def test_a_typo_links_to_the_one_token_it_misspells() -> None:
    assert typo_variant("persue", ["pursue", "purse", "person"]) == "pursue"
    assert typo_variant("educaton", ["education", "educator", "vacation"]) is None  # two fit
    assert typo_variant("educaton", ["education", "vacation"]) == "education"
    assert typo_variant("definately", ["definitely"]) == "definitely"  # two edits: ten letters


def test_what_a_typo_never_links_to() -> None:
    assert typo_variant("persue", ["bursue"]) is None  # another first letter
    assert typo_variant("persue", ["pursuit"]) is None  # more edits than a short word allows
    assert typo_variant("persue", []) is None
    assert typo_variant("persue", ["persue"]) is None  # itself is no variant
