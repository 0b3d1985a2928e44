"""Answer types: which kinds a question asks for, and which type tokens an entry holds."""

from __future__ import annotations

import pytest

from graphmem._answer_types import TYPE_OF_LABEL, TYPE_TOKENS, asked_types, type_tokens
from graphmem._decompose import NAMING_ENTITY_LABELS, Entity


@pytest.mark.parametrize(
    ("question", "types"),
    [
        ("Where did Caroline move from?", ("@place",)),
        ("Which cities has Jon visited?", ("@place",)),
        ("Where did the wedding take place?", ("@place",)),  # by "where"
        ("What was the book a friend lent her?", ("@person", "@work")),
        ("Which COUNTRY did she like best?", ("@place",)),
        ("Who supports Caroline?", ("@person",)),
        ("What book did Melanie read?", ("@work",)),
        ("What movies has Ana watched?", ("@work",)),
        ("What games does Sam play?", ("@product",)),
        ("Which bands has Mel seen?", ("@person", "@organisation")),
        ("Who did she meet in which city?", ("@place", "@person")),
        ("What languages does Lee speak?", ("@language",)),
    ],
)
def test_a_question_asks_for_the_kinds_it_names(question: str, types: tuple[str, ...]) -> None:
    assert set(asked_types(question)) == set(types)


@pytest.mark.parametrize(
    "question",
    [
        "What did Melanie paint recently?",
        "When did Caroline go to the LGBTQ support group?",  # "group" is no kind
        "Did she show him the way?",  # "show" is a verb as often as a noun
        "Does Jon play the violin?",
        "How is the bookshop doing?",  # a word holding a category noun is not that noun
        "What took place at the party?",  # a kind word in a phrase that asks for no kind
        "How was her state of mind?",
        "Did she book a table?",  # "book" a verb
        "What is the game plan?",
        "",
    ],
)
def test_a_question_that_asks_for_no_kind(question: str) -> None:
    assert asked_types(question) == ()


def test_type_tokens_come_from_ner_labels_only_once_each() -> None:
    entities = [Entity("rome", "GPE"), Entity("alps", "LOC"), Entity("amy", "PERSON"), Entity("today", "DATE")]
    assert type_tokens(entities) == ["@place", "@person"]
    assert type_tokens([]) == []


def test_every_kind_comes_from_a_label_that_entries_keep() -> None:
    # A label the decomposer drops could never give an entry its type token.
    assert set(TYPE_OF_LABEL) <= NAMING_ENTITY_LABELS
    assert all(t.startswith("@") for t in TYPE_TOKENS)
    assert {t for types in (asked_types(q) for q in ("where", "who", "book", "game", "team", "event",
                                                     "nationality", "language")) for t in types} == TYPE_TOKENS


def test_a_kind_no_entry_names_asks_nothing_but_a_named_kind_weighs_like_a_word() -> None:
    from graphmem._scoring import CandidateStats, CorpusStats, score_candidates

    film = CandidateStats("a", frozenset({"film"}), frozenset())
    titled = CandidateStats("b", frozenset({"film", "@work"}), frozenset())
    # Nobody's entry names a work: the question's kind is left out, the film turn is a full match.
    alone = score_candidates(["film", "@work"], [], CorpusStats(10, {"film": 1}), [film])
    assert alone["a"].score == 1.0
    # An unknown *word* still counts in the query's weight (it lowers every score alike).
    assert score_candidates(["film", "zebra"], [], CorpusStats(10, {"film": 1}), [film])["a"].score < 1.0
    # Once an entry names one, the kind is a term like any other.
    both = score_candidates(["film", "@work"], [], CorpusStats(10, {"film": 2, "@work": 1}), [film, titled])
    assert both["b"].score == 1.0 and both["b"].matched_tokens == ("@work", "film")
    assert 0.0 < both["a"].score < 1.0
