"""Misspelt query words (graphmem._spelling): which words are tried, and what they link to."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphmem._decompose import _edit_distance
from graphmem._spelling import (
    COMMON_WORDS_FILE,
    _edits_within,
    accent_variant,
    common_words,
    fold_accents,
    inflected_forms,
    is_accent_candidate,
    is_typo_candidate,
    one_edit,
    typo_correction,
    typo_variant,
    unstretched,
)


@pytest.mark.parametrize("word", ["persue", "educaton", "recieve", "definately", "kayakng", "campd"])
def test_a_word_in_no_english_word_list_may_be_a_typo(word: str) -> None:
    assert is_typo_candidate(word)


@pytest.mark.parametrize(
    "word",
    [
        "likely",  # one edit from "lively", but a word: never changed
        "status",  # one edit from "statue"
        "paintings",  # a word form
        "powerful",  # a base form in no lookup entry (the lemmatizer's index has it)
        "awesome",
        "recv",  # under five letters
        "Persue",  # capitalised: a name, left to the name rules
        "persue2",  # not letters only
        "pérsue",  # not ASCII: other languages' words are not checked against English
        "texted",  # a word the lists lack with a regular ending ("text" + "ed"): a word
        "podcasts",
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


def test_an_inflected_typo_links_to_the_lemma_its_form_misspells() -> None:
    assert typo_variant("consdiered", ["consider", "conduct"]) == "consider"  # "considered"
    assert typo_variant("volunetering", ["volunteer", "volume"]) == "volunteer"  # "volunteering"
    assert typo_variant("stoppde", ["stop"]) == "stop"  # doubled consonant: "stopped"
    assert typo_variant("studeis", ["study"]) == "study"  # y to i: "studies"


def test_the_closest_token_wins_and_a_tie_links_to_neither() -> None:
    # One swap from "painting" itself, one from "painting" as a form of "paint": the token
    # before a form of one; "pant" ("panting") is two edits away.
    assert typo_variant("paitning", ["painting", "paint", "pant"]) == "painting"
    assert typo_variant("paitning", ["paint", "pant"]) == "paint"
    assert typo_variant("capming", ["camp", "cap"]) is None  # "camping" and "capping": one edit each


def test_inflected_forms_are_only_forms_the_lemma_table_reads_back() -> None:
    assert {"camped", "camping", "camps"} <= set(inflected_forms("camp"))
    assert "hoping" in inflected_forms("hope") and "stopped" in inflected_forms("stop")
    assert "studies" in inflected_forms("study")
    assert "caping" not in inflected_forms("cap")  # no English word
    assert "evening" not in inflected_forms("eve")  # a word, but not a form of "eve"
    assert inflected_forms("camp") == tuple(sorted(inflected_forms("camp")))


@given(st.text(alphabet="abcde", max_size=9), st.text(alphabet="abcde", max_size=9), st.integers(1, 2))
def test_the_cheap_bounds_never_change_the_edit_distance(word: str, other: str, limit: int) -> None:
    # Both say "more than limit" with any larger number: compare up to limit + 1.
    exact = min(_edit_distance(word, other, limit=limit), limit + 1)
    assert min(_edits_within(word, frozenset(word), other, limit), limit + 1) == exact


def test_a_word_is_read_as_the_one_token_it_is_with_other_accents() -> None:
    assert fold_accents("Résumé") == "Resume" and fold_accents("año") == "ano"
    assert accent_variant("cafe", ["cafeteria", "café", "cake"]) == "café"
    assert accent_variant("café", ["cafe", "cafes"]) == "cafe"  # either way
    assert accent_variant("jose", ["josé", "joseph"]) == "josé"
    assert accent_variant("resume", ["résumé", "resumé"]) is None  # two fit: neither
    assert accent_variant("cafe", ["cafe"]) is None  # itself is no other spelling
    assert accent_variant("cafe", ["cave", "caff"]) is None  # an accent, not another letter
    # A phone's apostrophe and a keyboard's are one.
    assert accent_variant("o\u2019brien", ["o'brien", "obrien"]) == "o'brien"
    assert accent_variant("d'angelo", ["d\u2019angelo"]) == "d\u2019angelo"


@pytest.mark.parametrize(
    "word",
    [
        "él",  # two letters: Spanish "él" / "el", "sí" / "si" are two words
        "ά",
        "λόγος",  # Greek: a dropped mark may make another word
        "क़िला",  # Devanagari: a nukta dropped is another letter
        "co2",  # not letters only
    ],
)
def test_short_words_and_other_scripts_are_not_read_through_their_accents(word: str) -> None:
    assert not is_accent_candidate(word)
    assert accent_variant(word, [fold_accents(word), word.upper()]) is None


@given(st.text(alphabet="aceinouyzAEÀÁÂÄÇÈÉÊËÍÑÓÖÚÜàáâäçèéêëíïñóöúüÿž", min_size=3, max_size=8))
def test_folding_is_idempotent_and_keeps_ascii_words(word: str) -> None:
    folded = fold_accents(word)
    assert fold_accents(folded) == folded and folded.isascii() and len(folded) == len(word)
    if word.isascii():
        assert folded == word


# ---------------------------------------------------------------------------- misspelt words in entries


@pytest.mark.parametrize(
    ("word", "meant"),
    [
        ("recieve", "receive"),  # two letters swapped
        ("vacaton", "vacation"),  # one dropped
        ("untill", "until"),  # one doubled
        ("definately", "definitely"),  # one replaced
        ("persue", "pursue"),  # "peruse" is one edit too, but rarer by more than ten times
        ("embarassed", "embarrass"),  # read as the lemma of the word it misspells
        ("becuase", "because"),  # a stop word (the decomposer keeps no token of it)
    ],
)
def test_an_entry_word_reads_as_the_one_frequent_word_it_misspells(word: str, meant: str) -> None:
    assert typo_correction(word) == meant


@pytest.mark.parametrize(
    "word",
    [
        "movin",  # "moving" or "movie": about as frequent, so neither
        "capming",  # "camping" or "calming", less than ten times apart
        "kinda",  # frequent itself: written so on purpose
        "hoodie",
        "wanna",
        "likely",  # English words are never read as others
        "status",
        "tehy",  # under five letters
        "Recieve",  # capitalised: left to the name rules
        "recieve2",
        "tommorow",  # two edits from "tomorrow": only one is read
        pytest.param("a" * 1_000_000, id="a-million-letters"),  # no word of the table is one edit from it
    ],
)
def test_an_entry_word_reads_as_no_word_when_that_is_not_clear(word: str) -> None:
    assert typo_correction(word) is None


@given(st.text(alphabet="abcdefghij", min_size=2, max_size=8))
def test_one_edit_is_every_string_one_edit_away_with_the_same_first_letter(word: str) -> None:
    found = one_edit(word)
    assert word not in found
    assert all(s[:1] == word[:1] and _edit_distance(word, s, limit=1) == 1 for s in found)
    # Every deletion, swap and doubling after the first letter is among them.
    for i in range(1, len(word)):
        assert word[:i] + word[i + 1 :] in found or word[:i] + word[i + 1 :] == word
        assert word[:i] + word[i] + word[i:] in found
        if i + 1 < len(word) and word[i] != word[i + 1]:
            assert word[:i] + word[i + 1] + word[i] + word[i + 2 :] in found


def test_the_common_words_table_is_what_the_build_script_makes_of_spacy_lookups_data() -> None:
    path = Path(__file__).resolve().parent.parent / "scripts" / "build_common_words.py"
    spec = importlib.util.spec_from_file_location("build_common_words", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rows = script.common_words()
    assert len(rows) == len(common_words()) > 50_000
    assert dict(rows) == common_words()
    assert common_words()["receive"] > common_words()["recieve"]
    assert COMMON_WORDS_FILE.endswith(".gz")


@pytest.mark.parametrize(
    ("word", "meant"),
    [
        ("amaaazing", "amazing"),  # one run, read as one letter
        ("yummmmy", "yummy"),  # read as two
        ("gooood", "good"),  # both readings are words ("god"): the more frequent wins
        ("loooove", "love"),
        ("tiiired", "tired"),
        ("sooo", "so"),
        ("aaaand", "and"),
    ],
)
def test_a_word_stretched_as_chat_stretches_it_reads_as_the_word(word: str, meant: str) -> None:
    assert unstretched(word) == meant


@pytest.mark.parametrize(
    "word",
    [
        "www",  # a word of its own
        "amazing",  # no run of three
        "brrr",  # no reading with a vowel is a word: a sound, not "br"
        "hmmm",
        "xoxooo",  # no reading is a word
        "Sooo",  # not lowercase (callers pass the lowercase form)
        "sooooo1",
    ],
)
def test_what_is_not_read_as_a_stretched_word(word: str) -> None:
    assert unstretched(word) is None


@given(st.text(alphabet="abo", min_size=3, max_size=9))
def test_a_stretched_reading_is_an_english_word_with_no_longer_runs(word: str) -> None:
    from graphmem._spelling import english_words

    meant = unstretched(word)
    lexicon = english_words()
    if meant is not None:
        assert lexicon is not None and meant in lexicon and word not in lexicon
        assert not any(meant[i] == meant[i + 1] == meant[i + 2] for i in range(len(meant) - 2))
        assert len(meant) < len(word)
