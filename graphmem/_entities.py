"""Entity canonicalisation: which of a user's entity names are one real thing.

``Entity`` nodes stay one per normalised name (case, a leading article and a possessive
``'s`` dropped; see :func:`graphmem._decompose.normalise_entity_name`), whatever label spaCy
gave each mention. This module groups those names: a group is one thing named several
ways, and a query that links one of its names matches entries naming any of them (see
:mod:`graphmem._scoring`, "Groups"). Nothing is stored: the groups are a pure function of
the user's set of entity names and of the words of their speakers' names, computed when a
search needs them, so they never depend on the order entries were stored, both backends
group alike, and deleting an entry or a user leaves nothing behind.

Two names are *linked* when one of these holds:

1. **The same words**: the same words once accents, punctuation and a leading article are
   set aside ("José Saramago" / "Jose Saramago", "the lean startup" / "\\"the lean startup").
2. **A spelling variant**: the same number of words, all equal but one, and those two
   words have six letters or more, start and end with the same letter and are one edit
   apart (an insertion, deletion, substitution or swap of neighbours: "Katharine" /
   "Katherine", "Phillip Hughes" / "Philip Hughes") -- and each is the other's only such
   variant among the user's names ("Christine" never links when "Christina"-like names
   abound: a word that could be two names links to neither).
3. **A name inside a longer one**: the shorter name's words are a run of the longer's
   ("Aurora" / "Pastelaria Aurora", "Katherine" / "Katherine Hughes"), and every name that
   contains it is one thing (each contains the other or they are linked by 1 or 2):
   "Aurora" inside "Pastelaria Aurora" and "Aurora Borealis" links to neither, and
   "Katherine" with "Katherine Hughes" and "Katherine Smith" links to no one.

A group is a set of names connected by links.

What never links:

- two names one edit apart when either word is shorter than six letters ("Mark" / "Mary",
  "Maria" / "Marta", "Jon" / "Joan"), differs in its first or last letter ("Daniel" /
  "Danielle", "Christian" / "Christina", "Catherine" / "Katherine"), or is two edits away
  ("Austria" / "Australia", "Slovenia" / "Slovakia", "Steven" / "Stephen");
- names differing in a number ("iPhone 12" / "iPhone 13", "World War I" / "World War II");
- a name made only of words of the speakers' names ("Caroline", "Jon"), by any rule: a
  speaker is the person the conversation is with, and a longer name around that word
  ("Bye Caroline", "Caroline Smith") is as often a greeting or somebody else; two speakers
  are two people (names spelled another way in a query have their own rule,
  :func:`graphmem._decompose.speaker_variant`). So a search whose linked names are all
  speakers' names has nothing to group, and need not read the user's names;
- a name of fewer than three letters inside a longer one.

Names alone cannot tell a place from a thing named after it ("New York" / "New York
Times", "Tokyo" / "Tokyo Tower" link): a link only lends a name's weight to its group, the
words of each name stay its own tokens.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from graphmem._decompose import _edit_distance

__all__ = ["EntityGroups", "entity_groups", "name_words"]

_WORDS = re.compile(r"\w+")
_ARTICLES = frozenset({"the", "a", "an"})
#: A spelling variant's words have at least this many letters (see rule 2 above).
MIN_VARIANT_LETTERS = 6
#: A name inside a longer one has at least this many letters (see rule 3 above).
MIN_INNER_LETTERS = 3


@functools.lru_cache(maxsize=8192)
def name_words(name: str) -> tuple[str, ...]:
    """The words of a name as rule 1 compares them: accents folded, punctuation and a
    leading article dropped, lowercase."""
    folded = "".join(ch for ch in unicodedata.normalize("NFKD", name) if not unicodedata.combining(ch))
    words = tuple(w.casefold() for w in _WORDS.findall(folded))
    if len(words) > 1 and words[0] in _ARTICLES:
        words = words[1:]
    return words


def _spelling_pair(a: str, b: str) -> bool:
    """Two different words that rule 2 lets link."""
    return (
        len(a) >= MIN_VARIANT_LETTERS
        and len(b) >= MIN_VARIANT_LETTERS
        and a.isalpha()
        and b.isalpha()
        and a[0] == b[0]
        and a[-1] == b[-1]
        and _edit_distance(a, b, limit=1) == 1
    )


def _contains_run(long: tuple[str, ...], short: tuple[str, ...]) -> bool:
    n = len(short)
    return any(long[i : i + n] == short for i in range(len(long) - n + 1))


@dataclass(frozen=True, slots=True)
class EntityGroups:
    """The groups of one user's entity names (see the module docstring for the rules).

    ``group_of`` maps every name in a group of two or more to that group (a name in no
    such group is alone: absent). ``variant_words`` maps a word of a name to the words
    it is spelled as in the other names of its group (rules 1 and 2: "katharine" ->
    {"katherine"}), never a word of a speaker's name."""

    group_of: Mapping[str, frozenset[str]]
    variant_words: Mapping[str, frozenset[str]]

    @property
    def groups(self) -> list[frozenset[str]]:
        """Every group of two or more names, each once, in a stable order."""
        unique = {min(g): g for g in self.group_of.values()}
        return [unique[k] for k in sorted(unique)]

    def names_like(self, name: str) -> frozenset[str]:
        """The names of ``name``'s group (just ``name`` when it is alone)."""
        return self.group_of.get(name, frozenset({name}))


def entity_groups(names: Collection[str], speaker_words: Collection[str] = ()) -> EntityGroups:
    """Group a user's entity names (their normalised names, as stored) into the things they
    name. Order-independent: a function of the two sets alone.

    Args:
        names: the names of the user's ``Entity`` nodes.
        speaker_words: the words of the user's speakers' names (``Token.speaker``).
    """
    return _entity_groups(frozenset(names), frozenset(speaker_words))


@functools.lru_cache(maxsize=256)
def _entity_groups(names: frozenset[str], speaker_words: frozenset[str]) -> EntityGroups:
    # A name's key is its words (rule 1): names with one key are linked, and every other
    # rule is applied to keys.
    by_key: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for name in names:
        words = name_words(name)
        if words:
            by_key[words].append(name)
    keys = sorted(by_key)
    # A name made only of words of the speakers' names (accents folded) links to nothing.
    folded_speakers = {w for word in speaker_words for w in name_words(word)}
    speakers_only = {k for k in keys if folded_speakers.issuperset(k)}
    links: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)

    # Rule 2: bucket by everything but the differing word, and that word's ends.
    buckets: dict[tuple[tuple[str, ...], tuple[str, ...], str, str], list[tuple[str, ...]]] = defaultdict(list)
    for key in keys:
        if key in speakers_only:
            continue
        for i, word in enumerate(key):
            if len(word) >= MIN_VARIANT_LETTERS and word.isalpha():
                buckets[(key[:i], key[i + 1 :], word[0], word[-1])].append(key)
    variants: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
    for (before, _, _, _), members in buckets.items():
        i = len(before)
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                a, b = members[x], members[y]
                if _spelling_pair(a[i], b[i]):
                    variants[a].add(b)
                    variants[b].add(a)
    spelled: dict[tuple[str, ...], tuple[str, ...]] = {}
    for key, found in variants.items():
        if len(found) == 1:
            (other,) = found
            if len(variants[other]) == 1:
                spelled[key] = other
                links[key].add(other)

    # Rule 3: the names containing a shorter one must all be one thing.
    with_word: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for key in keys:
        for word in key:
            with_word[word].add(key)

    def one_thing(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
        return spelled.get(a) == b or _contains_run(a, b) or _contains_run(b, a)

    for short in keys:
        holders = min((with_word[w] for w in short), key=len)
        if len(holders) < 2 or short in speakers_only or sum(map(len, short)) < MIN_INNER_LETTERS:
            continue  # most names are inside no other
        if len(short) == 1 and short[0].isdigit():
            continue  # a bare number inside names ("12" in "iPhone 12") is no name
        containers = sorted(k for k in holders if len(k) > len(short) and _contains_run(k, short))
        if not containers:
            continue
        if all(one_thing(a, b) for i, a in enumerate(containers) for b in containers[i + 1 :]):
            for long in containers:
                links[short].add(long)
                links[long].add(short)

    # Groups: names connected by links (keys first, then their names).
    group_of: dict[str, frozenset[str]] = {}
    seen: set[tuple[str, ...]] = set()
    for start in keys:
        if start in seen:
            continue
        component, todo = [], [start]
        seen.add(start)
        while todo:
            key = todo.pop()
            component.append(key)
            for other in links.get(key, ()):
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        group = frozenset(name for key in component for name in by_key[key])
        if len(group) > 1 and start not in speakers_only:
            group_of.update(dict.fromkeys(group, group))
    # Words spelled two ways: between names of one key (rule 1) and spelling variants (rule 2).
    pairs = [
        (p, q)
        for key in keys
        if key not in speakers_only
        for i, p in enumerate(sorted(by_key[key]))
        for q in sorted(by_key[key])[i + 1 :]
    ]
    pairs += [(p, q) for key, other in spelled.items() if key < other for p in by_key[key] for q in by_key[other]]
    variant_words: dict[str, set[str]] = defaultdict(set)
    for p, q in pairs:
        for u, v in _differing_words(p, q):
            if u not in speaker_words and v not in speaker_words:
                variant_words[u].add(v)
                variant_words[v].add(u)
    return EntityGroups(group_of, {w: frozenset(v) for w, v in variant_words.items()})


def _differing_words(a: str, b: str) -> list[tuple[str, str]]:
    """The pairs of words (as stored: lowercase) by which two names of as many words differ."""
    wa, wb = _WORDS.findall(a), _WORDS.findall(b)
    if len(wa) != len(wb):
        return []
    return [(x, y) for x, y in zip(wa, wb, strict=True) if x != y and x.isalpha() and y.isalpha()]
