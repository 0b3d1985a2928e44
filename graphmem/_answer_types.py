"""Answer types: what kind of thing a question asks for, and which entries name one.

"Which cities has Jon visited?" shares one word with the turn that answers it ("Took a
short trip last week to Rome": it holds ``jon``, its author, and nothing else of the
question). What the two do share is a *kind*: the question asks for a place, and the turn
names one. Classic question answering calls this the answer type.

An entry that names an entity of a kind holds that kind's *type token* (``@place`` for a
``GPE``, ``LOC`` or ``FAC`` entity, ...), stored like any other token: a ``Token`` node
with that value, linked to the entry (visible to Cypher, counted, gathered and scored by
the same rules on both backends). A question that asks for a kind (a wh-word or a category
noun: "where", "which cities", "what book") holds the type token as one more query term,
weighed like any term by how rare it is among the user's entries. So an entry by the
person asked about that names a place scores above one that names none, and the hit says
why: ``@place`` is among its matched tokens.

What links, and what never does:

- A kind is derived from spaCy's NER label only (:data:`TYPE_OF_LABEL`); words alone never
  make a type token. Dates, times and numbers are no kinds here (they are everywhere in
  conversation, and :mod:`graphmem._time` handles time).
- A question asks for a kind through its wh-word or a category noun written in it
  (:data:`_ASKS`), in English; in Japanese and Chinese through "where" and "who"
  (:data:`_ASKS_CJK`). Nouns that are also common verbs ("show", "play") are left
  out. A question with no other term than such a word asks nothing.
- A word of an entry's text never becomes a type token, even if written ``@place``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from graphmem._decompose import Entity

__all__ = ["TYPE_OF_LABEL", "TYPE_TOKENS", "asked_types", "type_tokens"]

#: spaCy NER label -> the type token an entry naming such an entity holds.
TYPE_OF_LABEL: dict[str, str] = {
    "GPE": "@place",
    "LOC": "@place",
    "FAC": "@place",
    "PERSON": "@person",
    "ORG": "@organisation",
    "WORK_OF_ART": "@work",
    "PRODUCT": "@product",
    "EVENT": "@event",
    "NORP": "@group",
    "LANGUAGE": "@language",
}

#: Every type token (reserved: no word of an entry's text takes one of these values).
TYPE_TOKENS: frozenset[str] = frozenset(TYPE_OF_LABEL.values())


def _words(*words: str) -> str:
    return r"\b(?:" + "|".join(words) + r")\b"


#: What a question asks for: a pattern over its text -> the type tokens it asks for.
_ASKS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), types)
    for pattern, types in (
        (
            _words(
                "where", "city", "cities", "country", "countries", "town", "towns", "place", "places",
                "destination", "destinations", "state", "states", "region", "regions", "location", "locations",
            ),
            ("@place",),
        ),
        (
            _words(
                "who", "whom", "whose", "people", "person", "persons", "friend", "friends", "artist", "artists",
                "musician", "musicians", "author", "authors", "singer", "singers", "actor", "actors",
            ),
            ("@person",),
        ),
        (_words("band", "bands"), ("@person", "@organisation")),
        (
            _words(
                "company", "companies", "organisation", "organisations", "organization", "organizations",
                "team", "teams", "school", "schools", "university", "universities", "charity", "charities",
            ),
            ("@organisation",),
        ),
        (
            _words(
                "book", "books", "novel", "novels", "film", "films", "movie", "movies", "song", "songs",
                "album", "albums", "series", "poem", "poems",
            ),
            ("@work",),
        ),
        (_words("game", "games", "product", "products", "brand", "brands", "device", "devices"), ("@product",)),
        (_words("event", "events", "festival", "festivals"), ("@event",)),
        (_words("nationality", "nationalities", "religion", "religions"), ("@group",)),
        (_words("language", "languages"), ("@language",)),
    )
)


#: The same in Japanese and Chinese, whose words no spaces separate (so no ``\b``): "where"
#: (どこ, 哪里, ...) and "who" (誰, だれ, どなた, 谁). Only Japanese entries name entities
#: (GiNZA's recogniser); a kind no entry names asks nothing, so in Chinese this is inert
#: until a Chinese recogniser stores entities.
_ASKS_CJK: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile("どこ|何処|哪里|哪儿|哪裡|哪兒|什么地方|什麼地方"), ("@place",)),
    (re.compile("誰|だれ|どなた|谁"), ("@person",)),
)


#: Phrases whose kind word asks for nothing: "what took place", "her state of mind", "did
#: she book a table" (a verb), "the game plan".
_ASKING_NOTHING = re.compile(
    r"\b(?:take|takes|took|taken|taking) place\b|\bstate of (?:mind|affairs|the art)\b"
    r"|\b(?:booked|(?:i|you|we|they|he|she|to|will|did|does|do|can|could|should|would)\s+book)\b|\bgame plan\b",
    re.IGNORECASE,
)


def asked_types(question: str) -> tuple[str, ...]:
    """The type tokens ``question`` asks for, in a stable order (none for most texts)."""
    found: dict[str, None] = {}
    question = _ASKING_NOTHING.sub(" ", question)
    for pattern, types in _ASKS if question.isascii() else (*_ASKS, *_ASKS_CJK):
        if pattern.search(question):
            found.update(dict.fromkeys(types))
    return tuple(found)


def type_tokens(entities: Iterable[Entity]) -> list[str]:
    """The type tokens of an entry naming ``entities`` (each once, in order)."""
    return list(dict.fromkeys(TYPE_OF_LABEL[e.label] for e in entities if e.label in TYPE_OF_LABEL))
