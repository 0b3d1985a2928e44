"""Misspelt query words: a word that is no English word and that no entry holds is read as
the one word of the user's entries it is a typo of.

Questions are typed fast ("What career path has she decided to persue?"). A token that no
entry holds matches nothing, so such a question loses its rarest, most telling term. But
"correcting" words is dangerous: "likely" is one edit from "lively", "status" from "statue".
So only a word that is in no English word list is tried (spaCy's lemma lookup table, its
word forms and lemmas, ~50k words): a real word is never changed, however rare it is in
the user's entries. The rule, shared with names (:func:`graphmem._decompose.speaker_variant`
is the same idea; both pick with :func:`graphmem._decompose.unique_variant`): same first
letter, alphabetic, five letters or more, one edit away (two for words of eight letters or
more; an edit is an insertion, deletion, substitution or swap of two neighbours), and
exactly one such word among the user's tokens.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

from graphmem._decompose import _edit_distance, load_lemma_table, unique_variant

__all__ = ["MIN_TYPO_LETTERS", "english_words", "is_typo_candidate", "typo_variant"]

#: Shorter words are left alone: too many real words are one edit apart.
MIN_TYPO_LETTERS = 5


class _EnglishWords:
    """The word forms (the table's keys, stored hashed) and lemmas of spaCy's English
    lemma table."""

    def __init__(self, table: Mapping[str, str]) -> None:
        self._forms = table
        self._lemmas = frozenset(table.values())

    def __contains__(self, word: str) -> bool:
        return word in self._lemmas or word in self._forms


@functools.lru_cache(maxsize=1)
def english_words() -> _EnglishWords | None:
    """spaCy's English words (``None`` without the lemma table: then no word is read as a
    typo)."""
    table = load_lemma_table("en")
    return None if table is None else _EnglishWords(table)


def is_typo_candidate(word: str) -> bool:
    """Whether a query token may be a typo: lowercase ASCII letters only, five or more,
    and no English word."""
    if len(word) < MIN_TYPO_LETTERS or not (word.isascii() and word.isalpha() and word.islower()):
        return False
    lexicon = english_words()
    return lexicon is not None and word not in lexicon


def max_edits(word: str) -> int:
    """How many edits a typo of ``word`` may be away from the token it misspells."""
    return 1 if len(word) < 8 else 2


def typo_variant(word: str, vocabulary: Iterable[str]) -> str | None:
    """The one token of ``vocabulary`` that ``word`` misspells, or ``None`` (none, or
    more than one)."""
    limit = max_edits(word)
    return unique_variant(word, vocabulary, lambda token: _edit_distance(word, token, limit=limit) <= limit)
