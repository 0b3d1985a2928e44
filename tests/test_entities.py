"""Entity canonicalisation rules (graphmem._entities): what links and what never does."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem._entities import _entity_groups, entity_groups, name_words


def groups(*names: str, speakers: tuple[str, ...] = ()) -> list[list[str]]:
    return [sorted(g) for g in entity_groups(names, speakers).groups]


# ---------------------------------------------------------------------------- what links


def test_the_same_words_link_whatever_accents_punctuation_or_a_leading_article() -> None:
    assert groups("josé saramago", "jose saramago") == [["jose saramago", "josé saramago"]]
    assert groups('"the lean startup', "lean startup") == [['"the lean startup', "lean startup"]]
    assert groups("jean-luc", "jean luc") == [["jean luc", "jean-luc"]]
    assert name_words("The Zoë Café") == ("zoe", "cafe")


def test_a_spelling_variant_links() -> None:
    assert groups("katharine", "katherine") == [["katharine", "katherine"]]
    assert groups("phillip hughes", "philip hughes") == [["philip hughes", "phillip hughes"]]
    assert groups("elisabeth", "elizabeth") == [["elisabeth", "elizabeth"]]


def test_a_name_inside_one_longer_name_links() -> None:
    assert groups("aurora", "pastelaria aurora") == [["aurora", "pastelaria aurora"]]
    assert groups("katherine", "katherine hughes", "hughes") == [["hughes", "katherine", "katherine hughes"]]


def test_a_name_inside_names_that_are_one_thing_links_to_all_of_them() -> None:
    # The containers contain one another, or are spelling variants of one another.
    assert groups("aurora", "pastelaria aurora", "pastelaria aurora lisboa") == [
        ["aurora", "pastelaria aurora", "pastelaria aurora lisboa"]
    ]
    assert groups("hughes", "katharine hughes", "katherine hughes") == [
        ["hughes", "katharine hughes", "katherine hughes"]
    ]


def test_the_words_spelled_two_ways_are_known() -> None:
    found = entity_groups(["katharine hughes", "katherine hughes", "josé", "jose"])
    assert found.variant_words == {
        "katharine": frozenset({"katherine"}),
        "katherine": frozenset({"katharine"}),
        "josé": frozenset({"jose"}),
        "jose": frozenset({"josé"}),
    }
    # A name inside a longer one shares its words: nothing is spelled another way.
    assert entity_groups(["aurora", "pastelaria aurora"]).variant_words == {}


# ---------------------------------------------------------------------------- what never links


@pytest.mark.parametrize(
    "names",
    [
        ("mark", "mary"),  # one edit, but short words: usually two people
        ("maria", "marta"),
        ("jon", "joan"),
        ("daniel", "danielle"),  # another last letter
        ("christian", "christina"),
        ("caroline", "carolina"),
        ("catherine", "katherine"),  # another first letter
        ("austria", "australia"),  # two edits
        ("slovenia", "slovakia"),
        ("steven", "stephen"),
        ("iphone 12", "iphone 13"),  # a number
        ("world war i", "world war ii"),
        ("katherine hughes", "katherine smith"),  # one word shared, another differing
    ],
)
def test_these_never_link(names: tuple[str, ...]) -> None:
    assert groups(*names) == []


def test_a_name_inside_two_different_names_links_to_neither() -> None:
    assert groups("aurora", "pastelaria aurora", "aurora borealis") == []
    assert groups("katherine", "katherine hughes", "katherine smith") == []


def test_a_word_that_could_be_two_names_links_to_neither() -> None:
    # "katherine" is one edit from both; the other two are two edits apart.
    assert groups("katharine", "katherine", "katherane") == []


def test_a_speakers_name_never_links() -> None:
    # Inside a longer name (a greeting NER took for a name, or someone else), by spelling
    # (two speakers are two people), written with an accent: never.
    assert groups("caroline", "bye caroline", speakers=("caroline",)) == []
    assert groups("caroline", "caroline smith", speakers=("caroline",)) == []
    assert groups("melanie", "melaine", speakers=("melanie", "melaine")) == []
    assert groups("zoë", "zoe", speakers=("zoe",)) == []
    assert groups("zoë", "zoe", speakers=("zoë",)) == []
    assert entity_groups(["zoë", "zoe"], ["zoe"]).variant_words == {}
    # A longer name holding a speaker's word links like any other.
    assert groups("caroline hughes", "hughes", speakers=("caroline",)) == [["caroline hughes", "hughes"]]


def test_short_or_numeric_names_inside_longer_ones_do_not_link() -> None:
    assert groups("jo", "jo malone") == []
    assert groups("12", "iphone 12") == []


# ---------------------------------------------------------------------------- properties

NAME_WORDS = ["aurora", "pastelaria", "katherine", "katharine", "hughes", "smith", "new", "york", "jose", "josé"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(NAME_WORDS), min_size=1, max_size=3), min_size=1, max_size=12),
    st.integers(0, 2**32 - 1),
)
def test_groups_are_a_partition_that_does_not_depend_on_the_order_of_the_names(
    raw: list[list[str]], seed: int
) -> None:
    names = list(dict.fromkeys(" ".join(words) for words in raw))
    shuffled = names[:]
    random.Random(seed).shuffle(shuffled)
    found = entity_groups(names)
    _entity_groups.cache_clear()  # computed again, not read from the cache
    again = entity_groups(shuffled)
    assert found == again
    for name, group in found.group_of.items():
        assert name in group
        assert all(found.group_of[other] == group for other in group)
