"""Misspelt query words: a word that is no English word and that no entry holds is read as
the one word of the user's entries it is a typo of.

Questions are typed fast ("What career path has she decided to persue?"). A token that no
entry holds matches nothing, so such a question loses its rarest, most telling term. But
"correcting" words is dangerous: "likely" is one edit from "lively", "status" from "statue".
So only a word that is in no English word list is tried (spaCy's lemma lookup table, its
word forms and lemmas, and its lemmatizer's index of base forms: ~110k words): a real word
is never changed, however rare it is in the user's entries. The rule
(:func:`graphmem._decompose.speaker_variant` is the same idea for names): same first
letter, alphabetic, five letters or more, one edit away (two for words of eight letters or
more; an edit is an insertion, deletion, substitution or swap of
two neighbours) from one of the user's tokens.

Tokens are lemmas, but questions are typed in inflected forms: "consdiered" is one swap from
"considered" and three edits from the token "consider". So a token also counts as misspelt
when the word is that close to one of its regular English forms (the token plus "s", "ed",
"ing", ..., with the usual e-drop, y to i and doubled final consonant), and only forms that
spaCy's lemma table knows and reads back as that token: "capming" is one swap from
"camping", a form of "camp". The closest token wins (fewer edits, then a token before a
form of one); two equally close link to neither.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

from graphmem._decompose import _edit_distance, load_lemma_table

__all__ = [
    "MAX_ENDING_LETTERS",
    "MIN_TYPO_LETTERS",
    "english_words",
    "inflected_forms",
    "is_typo_candidate",
    "typo_variant",
]

#: Shorter words are left alone: too many real words are one edit apart.
MIN_TYPO_LETTERS = 5

#: Regular English endings (added to the lemma, its e-dropped or y-to-i stem, or its
#: doubled final consonant): the forms a token's word is typed in.
_ENDINGS = ("s", "es", "ed", "d", "ing", "er", "ers", "est", "ies", "ied")

#: How many letters longer than its token a form may be ("stop" -> "stopping").
MAX_ENDING_LETTERS = 4

_VOWELS = frozenset("aeiou")


class _EnglishWords:
    """The word forms (the lookup table's keys, stored hashed) and lemmas of spaCy's
    English lemma lookup table, and the base forms of its lemmatizer's word index (nouns,
    verbs, adjectives, adverbs: "powerful", "awesome" are in no lookup table entry)."""

    def __init__(self, table: Mapping[str, str], base_forms: Iterable[str] = ()) -> None:
        self._forms = table
        self._lemmas = frozenset(table.values()).union(base_forms)

    def __contains__(self, word: str) -> bool:
        return word in self._lemmas or word in self._forms

    def lemma_of(self, form: str) -> str | None:
        """The lemma the table reads ``form`` as, or ``None`` when it is no listed form."""
        return self._forms.get(form)


@functools.lru_cache(maxsize=1)
def english_words() -> _EnglishWords | None:
    """spaCy's English words (``None`` without the lemma table: then no word is read as a
    typo)."""
    table = load_lemma_table("en")
    return None if table is None else _EnglishWords(table, _base_forms())


def _base_forms() -> set[str]:
    """The one-word entries of ``en_lemma_index`` (spacy-lookups-data), or none."""
    from spacy.lookups import load_lookups

    try:
        index = load_lookups("en", ["lemma_index"]).get_table("lemma_index")
    except (ValueError, KeyError, OSError):
        return set()
    return {word for pos in ("noun", "verb", "adj", "adv") for word in index.get(pos, ()) if word.isalpha()}


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


@functools.lru_cache(maxsize=8192)
def inflected_forms(lemma: str) -> tuple[str, ...]:
    """The regular English forms of ``lemma`` that spaCy's lemma table lists and reads back
    as ``lemma`` ("camp" -> "camped", "camper", "campers", "camping", "camps"); none
    without the table."""
    lexicon = english_words()
    if lexicon is None or not lemma.isalpha():
        return ()
    stems = {lemma}
    if lemma[-1] in "ey":
        stems.add(lemma[:-1])  # hope -> hoping; study -> stud + ies
    if len(lemma) >= 3 and lemma[-1] not in _VOWELS | {"w", "x", "y"} and lemma[-2] in _VOWELS:
        stems.add(lemma + lemma[-1])  # stop -> stopped
    forms = {stem + ending for stem in stems for ending in _ENDINGS}
    return tuple(sorted(f for f in forms if f != lemma and lexicon.lemma_of(f) == lemma))


def typo_variant(word: str, vocabulary: Iterable[str]) -> str | None:
    """The token of ``vocabulary`` that ``word`` misspells, itself or through one of its
    :func:`inflected_forms`, or ``None``.

    The closest wins: fewer edits first, then the token itself before its forms (a user
    holding "painting" and "paint" reads "paitning" as "painting"). Two tokens equally
    close: neither."""
    limit = max_edits(word)
    letters = frozenset(word)
    best: dict[tuple[int, int], set[str]] = {}
    for token in vocabulary:
        if token == word or token[:1] != word[:1]:
            continue
        closeness = _closeness(word, letters, token, limit)
        if closeness is not None:
            best.setdefault(closeness, set()).add(token)
    if not best:
        return None
    closest = best[min(best)]
    return next(iter(closest)) if len(closest) == 1 else None


def _closeness(word: str, letters: frozenset[str], token: str, limit: int) -> tuple[int, int] | None:
    """(edits, 0) when ``word`` (whose letters are ``letters``) is at most ``limit`` edits
    from ``token``; else (edits, 1) for the closest of its inflected forms within
    ``limit``; else ``None``."""
    edits = _edits_within(word, letters, token, limit)
    if edits <= limit:
        return (edits, 0)
    if len(token) + MAX_ENDING_LETTERS + limit < len(word) or len(token) > len(word) + limit:
        return None
    nearest = min((_edits_within(word, letters, form, limit) for form in inflected_forms(token)), default=limit + 1)
    return (nearest, 1) if nearest <= limit else None


def _edits_within(word: str, letters: frozenset[str], other: str, limit: int) -> int:
    """:func:`_edit_distance`, after cheap bounds: an edit changes the length by at most
    one, the set of letters used by at most two (a substitution drops one, adds one), and
    removes at most one letter of either word (a swap none)."""
    if abs(len(word) - len(other)) > limit or len(letters.symmetric_difference(other)) > 2 * limit:
        return limit + 1
    missing = sum(max(0, word.count(c) - other.count(c)) for c in letters)
    if missing > limit or len(other) - len(word) + missing > limit:
        return limit + 1
    return _edit_distance(word, other, limit=limit)
