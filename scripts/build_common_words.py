#!/usr/bin/env python3
"""Build graphmem/_data/common_words.txt.gz, the English word frequencies that decide
which misspelt word of an entry is read as which word (graphmem._spelling.typo_correction).
Run it again only to change what the table holds; the table is committed, so storing an
entry never reads the 7 MB source (2.8 s and ~370 MB to load).

    python scripts/build_common_words.py [--out PATH]

What goes in: every word of spacy-lookups-data's ``en_lexeme_prob`` table (MIT licence;
spaCy's English unigram log probabilities, a dependency of graphmem already) that is
lowercase ASCII letters with a log probability above :data:`COMMON_LOG_PROB`, one per line
as ``word<TAB>log probability`` (two decimals), the most frequent first.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graphmem._spelling import COMMON_LOG_PROB, COMMON_WORDS_FILE  # noqa: E402


def common_words() -> list[tuple[str, float]]:
    """The table's rows from the installed spacy-lookups-data, most frequent first."""
    import spacy_lookups_data
    from spacy.util import load_language_data

    # The file as spaCy reads it (load_lookups), not its Table: a Table keeps hashes of
    # its keys, not the words.
    table = load_language_data(spacy_lookups_data.en["lexeme_prob"])
    rows = [
        (word, round(float(prob), 2))
        for word, prob in table.items()
        if isinstance(word, str) and word.isascii() and word.isalpha() and word.islower() and prob > COMMON_LOG_PROB
    ]
    return sorted(rows, key=lambda row: (-row[1], row[0]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "graphmem" / "_data" / COMMON_WORDS_FILE)
    args = parser.parse_args()
    rows = common_words()
    text = "".join(f"{word}\t{prob:.2f}\n" for word, prob in rows)
    # mtime=0: the same table gives the same bytes.
    with args.out.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(text.encode("ascii"))
    print(f"wrote {len(rows)} words to {args.out} ({args.out.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
