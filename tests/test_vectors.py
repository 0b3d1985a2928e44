"""Related words: the vectors' rules (``graphmem._vectors``, what the shipped table is built
from), which of the user's tokens a query word is read through, and the fallback when the
vectors are missing."""

from __future__ import annotations

import json
import logging
from typing import Any

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


def _key_rows(*rows: tuple[str, int]) -> tuple[Any, Any, str]:
    """A key -> row map as spaCy's vectors list it, and their string store."""
    import numpy as np
    from spacy.strings import get_string_id

    keys = np.array([get_string_id(word) for word, _ in rows], dtype=np.uint64)
    return keys, np.array([row for _, row in rows], dtype=np.int32), json.dumps([word for word, _ in rows])


def test_a_form_given_another_words_vector_by_the_pruning_is_an_alias_unless_a_form_of_that_word() -> None:
    # Rows 0 and 1 were made for "mother" and "Symbolic"; the pruning gave the rest their rows.
    keys, rows, strings = _key_rows(
        ("mother", 0), ("Symbolic", 1), ("fiance", 0), ("smother", 0), ("symbolic", 1), ("symbolize", 1)
    )
    word_row = {"mother": 0, "fiance": 0, "smother": 0, "symbolic": 1, "symbolize": 1}
    assert _vectors._aliases(word_row, keys, rows, 2, strings) == {"fiance", "smother"}


def test_a_key_map_that_does_not_list_each_rows_word_first_makes_no_alias(caplog: pytest.LogCaptureFixture) -> None:
    keys, rows, strings = _key_rows(("fiance", 0), ("mother", 0), ("symbolic", 1))
    with caplog.at_level(logging.WARNING, logger="graphmem"):
        assert _vectors._aliases({"fiance": 0, "mother": 0}, keys, rows, 2, strings) == frozenset()
    assert "no form is an alias" in caplog.text


def test_an_alias_reads_no_related_words_and_is_none() -> None:
    unit = [[1.0, 0.0], [0.8, 0.6]]
    vectors = WordVectors(unit, {"mother": 0, "fiance": 0, "father": 1}, aliases=frozenset({"fiance"}))
    assert vectors.related("mother") == (("father", 0.8),)
    assert vectors.related("father") == (("mother", 0.8),)
    assert vectors.related("fiance") == ()


@pytest.mark.skipif(_vectors.vectors_path() is None, reason="graphmem[vectors] (in graphmem[dev]) is not installed")
def test_the_installed_vectors_leave_out_the_pruned_forms_and_keep_forms_of_a_rows_word() -> None:
    vectors = _vectors.read_vectors()
    assert vectors is not None
    assert {"fiance", "unlucky", "smother", "peeve"} <= vectors.aliases
    assert not {"mother", "lucky", "pet", "symbolize"} & vectors.aliases
    assert "fiance" not in dict(vectors.related("mother")) and "unimportant" not in dict(vectors.related("important"))
    assert "symbolize" in dict(vectors.related("symbol"))


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
