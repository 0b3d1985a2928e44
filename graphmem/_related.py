"""Related words, as a search reads them: a table shipped with graphmem
(``graphmem/_data/related_words.npz``, 0.4 MB) of English words and the words related to
each ("pet": "dog", "puppy", "kitten"; "store": "shop"), so that "What pets does Kate
have?" also finds "We got a puppy". Reading it costs a dictionary lookup per query word:
no word vectors, no tagger and no model are loaded at search time.

The table is built by ``scripts/build_related_words.py`` from spaCy's ``en_core_web_md``
3.7.1 English vectors (CC0; extra ``graphmem[vectors]``, see :mod:`graphmem._vectors`
for what is related and what never is) and WordNet 3.0's sense counts:

- its words are the candidate forms of :mod:`graphmem._vectors` (lowercase English words
  that are their own lemma, no stop words) that hold a vector of their own or of a word
  they are a form of: 10,676 words in 8,732 groups of words that share a vector
  ("symbolic", "symbolize"); a form the vectors' pruning gave another word's vector
  ("fiance" holds "mother"'s) is not in it;
- the words related to a word are those whose vectors' cosine with its own is at least
  :data:`graphmem._vectors.MIN_SIMILARITY` (0.70), with that cosine (4 digits): exactly what
  :meth:`graphmem._vectors.WordVectors.related` answers (a test compares the two when the
  vectors are installed);
- a query word is read through related words when WordNet's tagged senses use it as a
  noun or an adjective at least as often as a verb or an adverb ("pet", "dessert",
  "activity", "sunny"; not "go", "walk", "paint", "quickly"); one without tagged senses
  when WordNet lists it as a noun or an adjective, or not at all. Categories are nouns; a
  verb's vector neighbours are mostly other verbs, its tenses' company.

A query word that is not in the table (a name, a number, a misspelling, a word of
another language) reads no related words; :mod:`graphmem._scoring` (rule 1c) says what a
related word weighs, and :func:`graphmem._service.related_tokens` which of them a search
keeps (those the user's entries hold, never a speaker's name).
"""

from __future__ import annotations

import functools
import logging
import threading
from importlib import resources
from typing import Any

__all__ = ["RelatedWords", "load_related_words", "related_words_loaded"]

logger = logging.getLogger("graphmem")

#: The table, inside the package.
TABLE_FILE = "related_words.npz"


class RelatedWords:
    """The table: each word's group, the related groups of each group with their
    similarity, and whether a query reads a word through related words (read-only once
    built; thread-safe)."""

    def __init__(
        self,
        words: list[str],
        word_group: Any,
        expandable: Any,
        indptr: Any,
        near: Any,
        similarity: Any,
    ) -> None:
        self._index = dict(zip(words, range(len(words)), strict=True))
        self._group: list[int] = list(word_group)
        self._expandable: list[bool] = list(expandable)
        members: list[list[str]] = [[] for _ in range(len(indptr) - 1)]
        for word, group in zip(words, self._group, strict=True):
            members[group].append(word)
        self._members = [tuple(m) for m in members]
        self._indptr: list[int] = list(indptr)
        self._near: list[int] = list(near)
        self._similarity: list[int] = list(similarity)
        self._related = functools.lru_cache(maxsize=8192)(self._related_uncached)

    @classmethod
    def from_pairs(
        cls, related: dict[str, dict[str, float]], *, expandable: frozenset[str] | None = None
    ) -> RelatedWords:
        """A small table of your own (for tests): each word's related words and their
        similarity, one group per word; every word is read through related words unless
        ``expandable`` says which are."""
        words = sorted(set(related) | {w for near in related.values() for w in near})
        group = {w: g for g, w in enumerate(words)}
        indptr, near, similarity = [0], [], []
        for word in words:
            found = {group[word]: 1.0, **{group[w]: s for w, s in related.get(word, {}).items()}}
            for g, s in sorted(found.items(), key=lambda item: (-item[1], item[0])):
                near.append(g)
                similarity.append(round(s * 10_000))
            indptr.append(len(near))
        return cls(
            words,
            list(range(len(words))),
            [expandable is None or w in expandable for w in words],
            indptr,
            near,
            similarity,
        )

    def __len__(self) -> int:
        return len(self._index)

    def reads_related(self, word: str) -> bool:
        """Whether a query reads ``word`` through related words (it is in the table, and a
        noun or an adjective more often than not)."""
        at = self._index.get(word)
        return at is not None and self._expandable[at]

    def related(self, word: str) -> tuple[tuple[str, float], ...]:
        """The words related to ``word`` (``word`` itself left out), each with its
        similarity, most similar first, then alphabetically; ``()`` for a word not in the
        table."""
        return self._related(word)

    def _related_uncached(self, word: str) -> tuple[tuple[str, float], ...]:
        at = self._index.get(word)
        if at is None:
            return ()
        group = self._group[at]
        found: list[tuple[str, float]] = []
        for k in range(self._indptr[group], self._indptr[group + 1]):
            s = self._similarity[k] / 10_000
            found.extend((w, s) for w in self._members[self._near[k]] if w != word)
        return tuple(sorted(found, key=lambda item: (-item[1], item[0])))


_lock = threading.Lock()
_loaded: dict[str, RelatedWords | None] = {}


def related_words_loaded() -> bool:
    """Whether :func:`load_related_words` has run in this process (then it returns at once)."""
    return "table" in _loaded


def load_related_words() -> RelatedWords | None:
    """The table, read once per process (about 40 ms and 12 MB); ``None``, with a warning,
    when it is missing from the installed package (queries then read no related words)."""
    with _lock:
        if "table" not in _loaded:
            _loaded["table"] = _read_table()
        return _loaded["table"]


def _read_table() -> RelatedWords | None:
    import numpy as np

    source = resources.files("graphmem").joinpath("_data", TABLE_FILE)
    try:
        with resources.as_file(source) as path, np.load(path) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, KeyError) as exc:
        logger.warning(
            "graphmem: the related-words table (graphmem/_data/%s) cannot be read (%s); queries "
            "are not read through related words. Reinstall graphmem.",
            TABLE_FILE,
            exc,
        )
        return None
    words = arrays["words"].tobytes().decode("ascii").split("\n")
    return RelatedWords(
        words,
        arrays["word_group"].tolist(),
        arrays["expandable"].tolist(),
        arrays["indptr"].tolist(),
        arrays["near"].tolist(),
        arrays["similarity"].tolist(),
    )
