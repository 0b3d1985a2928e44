"""Related words: the vectors' rules (``graphmem._vectors``, what the shipped table is built
from), which of the user's tokens a query word is read through, and the fallback when the
vectors are missing."""

from __future__ import annotations

import logging

import pytest

from graphmem import _vectors
from graphmem._scoring import CorpusStats, TermGroups
from graphmem._service import related_tokens
from graphmem._vectors import MIN_SIMILARITY, WordVectors

# Hand-made vectors: cos(pet, dog) = 0.8, cos(pet, cat) = 0.7, cos(pet, car) = 0.6.
TABLE = WordVectors.from_words(
    {
        "pet": [1.0, 0.0, 0.0],
        "dog": [0.8, 0.6, 0.0],
        "cat": [0.7, 0.0, 0.714142842854285],
        "car": [0.6, -0.8, 0.0],
    }
)


def test_related_words_are_those_at_least_as_similar_as_the_threshold_most_similar_first() -> None:
    assert MIN_SIMILARITY == 0.70
    assert TABLE.related("pet") == (("dog", 0.8), ("cat", 0.7))
    assert TABLE.similarity("pet", "car") == pytest.approx(0.6)
    assert TABLE.related("unknown") == () and TABLE.row("unknown") is None


def test_a_word_is_never_related_to_itself() -> None:
    assert all(word != "dog" for word, _ in TABLE.related("dog"))


def test_the_users_tokens_read_through_a_query_word() -> None:
    near = {"pet": (("dog", 0.8), ("cat", 0.7), ("rose", 0.75), ("kate", 0.9), ("bowl", 0.71))}
    corpus = CorpusStats(
        30,
        {"pet": 2, "kate": 10, "dog": 3, "cat": 0, "rose": 4, "bowl": 1},
        speaker_tokens=frozenset({"kate", "rose"}),
    )
    found = related_tokens(near, ["pet", "kate", "bowl"], corpus, None)
    # Not "cat" (no entry holds it), "rose" or "kate" (speakers' names), "bowl" (a query term).
    assert found == {"dog": ("pet", 0.8)}


def test_a_query_word_that_names_a_speaker_or_stands_for_a_group_reads_no_related_words() -> None:
    near = {"rose": (("tulip", 0.8),), "katherine": (("catherine", 0.8),)}
    corpus = CorpusStats(30, {"rose": 5, "tulip": 2, "katherine": 3, "catherine": 2}, speaker_tokens=frozenset({"rose"}))
    groups = TermGroups(tokens={"katherine": "katherine", "katharine": "katherine"})
    assert related_tokens(near, ["rose", "katherine"], corpus, groups) == {}


def test_a_token_related_to_two_query_words_is_read_through_the_more_similar_one() -> None:
    near = {"dinner": (("potluck", 0.72),), "meal": (("potluck", 0.9),)}
    corpus = CorpusStats(30, {"dinner": 2, "meal": 2, "potluck": 1})
    assert related_tokens(near, ["dinner", "meal"], corpus, None) == {"potluck": ("meal", 0.9)}


def test_missing_vectors_fall_back_with_a_warning_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_vectors, "vectors_path", lambda: None)
    with caplog.at_level(logging.WARNING, logger="graphmem"):
        assert _vectors.read_vectors() is None
    assert "graphmem[vectors]" in caplog.text
