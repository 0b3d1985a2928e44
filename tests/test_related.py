"""The related-words table a search reads (``graphmem._related``): its rules, the table
shipped with the package, that it answers what the vectors it was built from answer, and the
fallback when it cannot be read."""

from __future__ import annotations

import logging
import random

import pytest

from graphmem import _related
from graphmem._related import RelatedWords, load_related_words
from graphmem._vectors import MIN_SIMILARITY, read_vectors, vectors_path

SMALL = RelatedWords.from_pairs(
    {"pet": {"dog": 0.8, "cat": 0.7}, "dog": {"pet": 0.8, "puppy": 0.9}},
    expandable=frozenset({"pet", "dog", "cat"}),
)


def test_a_small_table_relates_words_most_similar_first_and_never_a_word_to_itself() -> None:
    assert SMALL.related("pet") == (("dog", 0.8), ("cat", 0.7))
    assert SMALL.related("dog") == (("puppy", 0.9), ("pet", 0.8))
    assert SMALL.related("unknown") == () and not SMALL.reads_related("unknown")
    assert SMALL.reads_related("pet") and not SMALL.reads_related("puppy")


def test_words_sharing_a_vector_are_related_to_each_other_at_their_similarity() -> None:
    # One group of two words (the table's pruning gave them one vector), related to a third.
    table = RelatedWords(["dog", "hound", "pet"], [0, 0, 1], [True, True, True], [0, 2, 4], [0, 1, 1, 0], [10_000, 8_000, 10_000, 8_000])
    assert table.related("dog") == (("hound", 1.0), ("pet", 0.8))
    assert table.related("pet") == (("dog", 0.8), ("hound", 0.8))


@pytest.fixture(scope="module")
def shipped() -> RelatedWords:
    table = load_related_words()
    assert table is not None, "graphmem/_data/related_words.npz is missing from the package"
    return table


def test_the_shipped_table_relates_a_category_to_its_instances(shipped: RelatedWords) -> None:
    related = dict(shipped.related("pet"))
    assert {"dog", "puppy"} <= related.keys() and all(s >= MIN_SIMILARITY for s in related.values())
    assert "shop" in dict(shipped.related("store"))
    # Only English words that are their own lemma are in it (no "dogs", no "dessa").
    assert "dogs" not in related and "dessa" not in dict(shipped.related("dessert"))
    assert shipped.related("dogs") == ()


def test_the_shipped_table_leaves_out_forms_that_hold_another_words_vector(shipped: RelatedWords) -> None:
    # The vectors' pruning gave "fiance" the vector of "mother", "unlucky" that of "lucky",
    # "gemfibrozil" a neighbour of "hike"'s: none of them is in the table.
    assert "fiance" not in dict(shipped.related("mother")) and shipped.related("fiance") == ()
    assert "unimportant" not in dict(shipped.related("important"))
    assert "gemfibrozil" not in dict(shipped.related("hike"))
    # A form of the row's own word stays ("symbolize" holds "symbolic"'s vector).
    assert "symbolize" in dict(shipped.related("symbol"))
    assert "photo" in dict(shipped.related("picture"))


def test_the_shipped_table_reads_nouns_and_adjectives_not_verbs(shipped: RelatedWords) -> None:
    assert all(shipped.reads_related(w) for w in ("pet", "dessert", "activity", "sunny", "dog"))
    assert not any(shipped.reads_related(w) for w in ("go", "walk", "paint", "quickly", "the", "kate"))


@pytest.mark.skipif(vectors_path() is None, reason="graphmem[vectors] (in graphmem[dev]) is not installed")
def test_the_shipped_table_answers_what_the_vectors_answer(shipped: RelatedWords) -> None:
    vectors = read_vectors()
    assert vectors is not None
    words = sorted(vectors._word_row)
    assert len(shipped) == len(words)
    sample = ["pet", "dessert", "store", "son", "activity", *random.Random(7).sample(words, 60)]
    for word in sample:
        assert shipped.related(word) == vectors.related(word), word


def test_an_unreadable_table_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_related, "TABLE_FILE", "no_such_table.npz")
    monkeypatch.setattr(_related, "_loaded", {})
    with caplog.at_level(logging.WARNING, logger="graphmem"):
        assert _related.load_related_words() is None
    assert "related-words table" in caplog.text and "no_such_table.npz" in caplog.text
    assert _related.related_words_loaded()  # once per process: no warning on every search
