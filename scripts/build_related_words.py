#!/usr/bin/env python3
"""Build graphmem/_data/related_words.npz, the table of related words a search reads
(graphmem._related), from the word vectors and WordNet's sense counts. Run it again only
to change what the table holds; the table is committed, so installing or searching never
needs the vectors, a tagger, or WordNet.

    pip install 'graphmem[vectors]'           # spaCy's en_core_web_md 3.7.1 vectors (CC0)
    apt-get install wordnet-base              # WordNet 3.0 (its own BSD-style licence)
    python scripts/build_related_words.py [--wordnet /usr/share/wordnet] [--out PATH]

What goes in:

- the words: the candidate forms of graphmem._vectors (lowercase English words that are
  their own lemma, no stop words, holding a vector of their own or of a word they are a
  form of), each with the row of its vector; forms sharing a row are one group;
- for each group, the groups whose vectors' cosine is at least graphmem._vectors'
  MIN_SIMILARITY (itself included), computed by WordVectors.related, so the table answers
  exactly what the vectors answer for every candidate form;
- for each word, whether a query reads it through related words: when WordNet's tagged
  senses (SemCor counts in ``cntlist.rev``) use it as a noun or an adjective at least as
  often as a verb or an adverb. A word with no tagged sense counts as a noun or adjective
  when WordNet lists it as one or does not list it at all. This stands in for the
  part-of-speech tagger the search used before (a tagger costs 1.2 ms a query).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# WordNet's synset types: noun, verb, adjective, adverb, adjective satellite.
_NOUN_OR_ADJECTIVE = {"1", "3", "5"}
_VERB_OR_ADVERB = {"2", "4"}
_INDEX_POS = {"noun": "n", "adj": "a", "verb": "v", "adv": "r"}


def wordnet_expandable(words: list[str], wordnet: Path) -> list[bool]:
    """Whether each word is used as a noun or an adjective at least as often as a verb or
    an adverb (see the module docstring)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # [noun/adj, verb/adv]
    for line in (wordnet / "cntlist.rev").read_text(encoding="utf-8").splitlines():
        key, _, count = line.split()
        lemma, _, rest = key.partition("%")
        kind = rest.split(":", 1)[0]
        if kind in _NOUN_OR_ADJECTIVE:
            counts[lemma][0] += int(count)
        elif kind in _VERB_OR_ADVERB:
            counts[lemma][1] += int(count)
    listed: dict[str, set[str]] = defaultdict(set)
    for name, pos in _INDEX_POS.items():
        for line in (wordnet / f"index.{name}").read_text(encoding="utf-8").splitlines():
            if not line.startswith(" "):  # the licence header's lines start with spaces
                listed[line.split(" ", 1)[0]].add(pos)
    out: list[bool] = []
    for word in words:
        nominal, verbal = counts.get(word, (0, 0))
        if nominal or verbal:
            out.append(nominal >= verbal)
        else:
            kinds = listed.get(word)
            out.append(kinds is None or bool(kinds & {"n", "a"}))
    return out


def build(wordnet: Path, out: Path) -> None:
    import numpy as np

    from graphmem._vectors import MIN_SIMILARITY, read_vectors

    vectors = read_vectors()
    if vectors is None:
        raise SystemExit("build_related_words: install the vectors first: pip install 'graphmem[vectors]'")
    words = sorted(vectors._word_row)
    rows = sorted({vectors._word_row[w] for w in words})
    group_of_row = {row: g for g, row in enumerate(rows)}
    first_word = {}
    for word in words:
        first_word.setdefault(vectors._word_row[word], word)
    indptr = [0]
    near: list[int] = []
    similarity: list[int] = []
    for row in rows:
        probe = first_word[row]
        # The groups related to this row's words: WordVectors.related leaves the probe out,
        # so the probe's own group is added back at its similarity to itself.
        found: dict[int, float] = {}
        for form, s in vectors.related(probe):
            found.setdefault(group_of_row[vectors._word_row[form]], s)
        self_similarity = vectors.similarity(probe, probe)
        assert self_similarity is not None and self_similarity >= MIN_SIMILARITY
        found.setdefault(group_of_row[row], self_similarity)
        for group, s in sorted(found.items(), key=lambda item: (-item[1], item[0])):
            near.append(group)
            similarity.append(round(s * 10_000))
        indptr.append(len(near))
    expandable = wordnet_expandable(words, wordnet)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        out,
        words=np.frombuffer("\n".join(words).encode("ascii"), dtype=np.uint8),
        word_group=np.array([group_of_row[vectors._word_row[w]] for w in words], dtype=np.uint16),
        expandable=np.array(expandable, dtype=np.bool_),
        indptr=np.array(indptr, dtype=np.int32),
        near=np.array(near, dtype=np.uint16),
        similarity=np.array(similarity, dtype=np.uint16),
        min_similarity=np.array(round(MIN_SIMILARITY * 10_000), dtype=np.uint16),
    )
    print(
        f"{out}: {len(words)} words in {len(rows)} groups, {len(near)} related pairs of groups, "
        f"{sum(expandable)} words a query reads through related words; {out.stat().st_size:,} bytes"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wordnet", type=Path, default=Path("/usr/share/wordnet"), help="WordNet 3.0 dict folder")
    parser.add_argument("--out", type=Path, default=ROOT / "graphmem" / "_data" / "related_words.npz")
    args = parser.parse_args()
    build(args.wordnet, args.out)


if __name__ == "__main__":
    main()
