#!/usr/bin/env python3
"""Lab (tried, left out): category -> instance links from WordNet 3.0, read as related words.

Issue 10, multi-hop: "What activities has Melanie done with her family?" is answered by turns
naming pottery, camping, swimming, which share no word with the question. This script adds,
to graphmem's related-words table, links from a category word to the table's words whose
*dominant* noun sense descends from it in WordNet, and measures recall with them
(``benchmarks/README.md``, "What each recall mechanism did", session 10). Nothing here is
used by graphmem. WordNet 3.0's files come from Debian's ``wordnet-base``::

    apt-get download wordnet-base && dpkg -x wordnet-base*.deb /tmp/wn
    python benchmarks/lab_wordnet_categories.py --variant dominant [--perturb typo]
    python benchmarks/lab_wordnet_categories.py --variant path --supply

Constants, fixed before the first measurement:

- an instance word's sense is its dominant noun sense: the most SemCor-tagged one
  (``cntlist.rev``), or its only sense; a word with several senses and no tagged one, or whose
  dominant sense WordNet writes capitalised (a name: "Mary", "Chopin"), is no instance;
- ``dominant``: the category is the query word's own dominant noun sense too, and only when
  its hyponyms hold at most 1% of WordNet's noun lemmas (one noun in a hundred);
- ``path``: every synset on the instance's hypernym path (any depth), matched by any of its
  lemmas, or a multiword lemma's head ("water_sport" -> "sport"), whatever the query word's sense;
- a link weighs as a related word of similarity 0.70 (graphmem._vectors.MIN_SIMILARITY: the
  weakest related word accepted).
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MAX_SHARE = 0.01
SIMILARITY = 0.70



def _reachable(links: Mapping[str, Iterable[str]], start: str) -> set[str]:
    """Every synset reached from ``start`` through ``links`` (not ``start`` itself, unless a cycle leads back)."""
    seen: set[str] = set()
    stack = [start]
    while stack:
        for linked in links[stack.pop()]:
            if linked not in seen:
                seen.add(linked)
                stack.append(linked)
    return seen

class WordNet:
    """The noun part of WordNet 3.0: synsets, hypernyms, senses in index order, SemCor counts."""

    def __init__(self, root: Path) -> None:
        self.lemmas: dict[str, list[str]] = {}
        self.hypernyms: dict[str, list[str]] = {}
        self.names: set[tuple[str, str]] = set()  # (lemma, synset) written capitalised
        for line in (root / "data.noun").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue
            parts = line.split(" | ")[0].split()
            offset, count = parts[0], int(parts[3], 16)
            raw = [parts[4 + 2 * i] for i in range(count)]
            self.lemmas[offset] = [w.lower() for w in raw]
            self.names.update((w.lower(), offset) for w in raw if w[:1].isupper())
            at = 4 + 2 * count
            pointers, at = int(parts[at]), at + 1
            hyper = []
            for _ in range(pointers):
                symbol, target, pos, _ = parts[at : at + 4]
                at += 4
                if symbol in ("@", "@i") and pos == "n":
                    hyper.append(target)
            self.hypernyms[offset] = hyper
        self.senses: dict[str, list[str]] = {}
        for line in (root / "index.noun").read_text(encoding="latin-1").splitlines():
            if not line.startswith(" "):
                p = line.split()
                self.senses[p[0]] = p[4 + int(p[3]) + 2 :]
        self.count: dict[tuple[str, str], int] = defaultdict(int)
        for line in (root / "cntlist.rev").read_text(encoding="utf-8").splitlines():
            key, number, tagged = line.split()
            lemma, _, rest = key.partition("%")
            offsets = self.senses.get(lemma)
            if rest.split(":")[0] == "1" and offsets and int(number) <= len(offsets):
                self.count[(lemma, offsets[int(number) - 1])] += int(tagged)
        self.hyponyms: dict[str, list[str]] = defaultdict(list)
        for offset, hyper in self.hypernyms.items():
            for h in hyper:
                self.hyponyms[h].append(offset)

    def dominant(self, word: str) -> str | None:
        offsets = self.senses.get(word)
        if not offsets:
            return None
        best = max(offsets, key=lambda o: self.count.get((word, o), 0))
        if len(offsets) > 1 and self.count.get((word, best), 0) < 1:
            return None
        return None if (word, best) in self.names else best

    def ancestors(self, offset: str) -> set[str]:
        return _reachable(self.hypernyms, offset)

    def lemmas_under(self, offset: str) -> int:
        return len({w for o in _reachable(self.hyponyms, offset) for w in self.lemmas[o]})


def category_links(wordnet: WordNet, words: set[str], variant: str) -> dict[str, set[str]]:
    """Category word -> the words of ``words`` that are instances of it."""
    out: dict[str, set[str]] = defaultdict(set)
    if variant == "dominant":
        limit = MAX_SHARE * len(wordnet.senses)
        category_of: dict[str, str] = {}
        for w in words:
            o = wordnet.dominant(w)
            if o is not None and 0 < wordnet.lemmas_under(o) <= limit:
                category_of[w] = o
        by_synset: dict[str, list[str]] = defaultdict(list)
        for w, o in category_of.items():
            by_synset[o].append(w)
        for w in words:
            o = wordnet.dominant(w)
            if o is None:
                continue
            for a in wordnet.ancestors(o):
                for c in by_synset.get(a, ()):
                    if c != w:
                        out[c].add(w)
        return out
    for w in words:
        o = wordnet.dominant(w)
        if o is None:
            continue
        names = {x for a in wordnet.ancestors(o) for lemma in wordnet.lemmas[a] for x in (lemma, lemma.split("_")[-1])}
        for c in names & words:
            if c != w:
                out[c].add(w)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wordnet", type=Path, default=Path("/tmp/wn/usr/share/wordnet"))
    parser.add_argument("--variant", choices=("dominant", "path"), default="dominant")
    parser.add_argument(
        "--supply",
        metavar="RECALL_JSON",
        type=Path,
        help="count missing multi-hop evidence turns reached (a recall.py --json of graphmem)",
    )
    args, rest = parser.parse_known_args()

    import graphmem._related as related

    table = related.load_related_words()
    assert table is not None
    links = category_links(WordNet(args.wordnet), set(table._index), args.variant)
    print(f"{args.variant}: {len(links)} category words, {sum(map(len, links.values()))} links", file=sys.stderr)

    if args.supply:
        from benchmarks._locomo import load_conversations
        from graphmem import Decomposer

        nlp = Decomposer()
        conversations = load_conversations()
        turns = {(c.sample_id, t.key): t.text for c in conversations for t in c.turns}
        asked_of = {c.sample_id: c.questions for c in conversations}
        rows = json.loads(args.supply.read_text())["systems"]["graphmem"]["questions"]
        missing = reached = 0
        for q in rows:
            if q["category"] != 1:
                continue
            # (A recall.py --json holds no question text: its index in its conversation.)
            asked = set(nlp.decompose(asked_of[q["conversation"]][q["question_index"]].question).tokens)
            instances = {w for c in asked for w in links.get(c, ())}
            for e in q["evidence"]:
                if e not in q["retrieved"][:10]:
                    missing += 1
                    reached += bool(set(nlp.decompose(turns[(q["conversation"], e)]).tokens) & (instances - asked))
        print(
            f"multi-hop evidence turns missing from the top 10: {missing}; holding an instance of a question word: {reached}"
        )
        return

    unpatched = related.RelatedWords._related_uncached

    def with_categories(self: related.RelatedWords, word: str) -> tuple[tuple[str, float], ...]:
        found = dict(unpatched(self, word))
        for instance in links.get(word, ()):
            found[instance] = max(found.get(instance, 0.0), SIMILARITY)
        return tuple(sorted(found.items(), key=lambda item: (-item[1], item[0])))

    related.RelatedWords._related_uncached = with_categories  # type: ignore[method-assign]
    import functools

    table._related = functools.lru_cache(maxsize=8192)(table._related_uncached)  # the table is loaded once
    sys.argv = [str(ROOT / "benchmarks" / "recall.py"), "--systems", "graphmem", *rest]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
