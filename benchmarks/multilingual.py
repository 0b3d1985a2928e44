"""Recall@5 and recall@10 on the multilingual set (Japanese, Chinese, Hindi, Spanish).

Run from anywhere::

    python benchmarks/multilingual.py                       # every system, markdown tables
    python benchmarks/multilingual.py --languages zh,ja --systems graphmem,bm25 --json out.json
    python benchmarks/multilingual.py --languages zh,ja --perturb names --systems graphmem,graphmem:words,bm25

The set (``benchmarks/data/multilingual/``, written for graphmem) has two conversations per
language, four dated sessions each, and 14 questions per conversation in its language:
single-hop, multi-hop (evidence in different sessions), temporal (anchored to a date written
the language's way: 2023年5月8日, el 3 de mayo de 2023, 3 मई 2023) and variant (a name
written differently than the speakers wrote it, or a typo). The protocol is that of
``benchmarks/recall.py``: per conversation a fresh store, one ``add_session`` per session,
author = speaker, one search with ``limit=10`` per question, recall@k = the share of the
question's evidence turns among the first k results.

Systems:

- ``graphmem``: networkx, with whatever ``Decomposer()`` does on this checkout (the
  default pipeline, or per-language pipelines where the checkout has them);
- ``graphmem-neo4j``: the same on Neo4j (``--neo4j-uri`` / ``GRAPHMEM_NEO4J_URI``); it must
  retrieve exactly what ``graphmem`` retrieves (the run fails otherwise);
- ``graphmem-blank``: graphmem with ``spacy.blank("en")``, the fallback used when no
  statistical pipeline is installed (no entities; CJK text as character unigrams and bigrams);
- ``bm25``: ``rank_bm25.BM25Okapi`` with a tokenizer for the language: character bigrams
  for Chinese and Japanese runs (other words lowercased), whitespace-separated lowercase
  words without punctuation for Hindi and Spanish;
- ``bm25-seg``: the same with a word segmenter for Chinese (jieba) and Japanese (SudachiPy,
  mode C); not run on Hindi and Spanish (their words are already separated);
- ``graphmem:MIX``: graphmem with other ``Decomposer`` options (see :func:`mix_options`):
  ``graphmem:words`` (Chinese and Japanese words without character n-grams),
  ``graphmem:text-12`` (words and the unigrams and bigrams of the text),
  ``graphmem:content-1``, ``graphmem:noner`` (no entity recognition), ...

Like the other peers, BM25 indexes "speaker: text".

``--perturb names`` changes one character in every person name of the Chinese and Japanese
questions (see :func:`perturb_names`): how recall holds when names are transliterated
differently than the conversation wrote them. ``--perturb accents`` types the Spanish
questions without their accents (see :func:`perturb_accents`), as people often do.
``--perturb latin-authors`` writes every speaker's name in Latin letters, as an app that
keeps its users' names so would (see :func:`perturb_latin_authors`); texts and questions
keep their script. ``--perturb chat`` asks each question as a message, after a greeting or a
request to recall or before thanks, in its language (see :func:`perturb_chat`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._env import checkout, machine, versions
from benchmarks._locomo import Conversation, Turn
from benchmarks._multilingual import APP, CATEGORIES, LANGUAGES, load_set
from benchmarks._report import fmt, markdown_table, summary
from benchmarks._systems import (
    CachingDecomposer,
    System,
    SystemFactory,
    _top_k,
    graphmem_factory,
    graphmem_neo4j_factory,
    peer_factory,
    peer_text,
)
from benchmarks.recall import KS, backends_note, evaluate, shared_decomposer
from graphmem._pipelines import CHAR_GRAM_SCOPES

__all__ = [
    "ALL_SYSTEMS",
    "LangBm25System",
    "bigram_tokens",
    "mix_options",
    "perturb_accents",
    "perturb_chat",
    "perturb_latin_authors",
    "perturb_names",
    "run",
    "segmenter",
    "whitespace_tokens",
]

ALL_SYSTEMS = ("graphmem", "graphmem-neo4j", "graphmem-blank", "bm25", "bm25-seg")
_CJK_RUN = re.compile(r"[\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def _is_punctuation(token: str) -> bool:
    return all(unicodedata.category(ch)[0] in "PSZC" for ch in token)


def _strip_punctuation(token: str) -> str:
    start, end = 0, len(token)
    while start < end and unicodedata.category(token[start])[0] in "PS":
        start += 1
    while end > start and unicodedata.category(token[end - 1])[0] in "PS":
        end -= 1
    return token[start:end]


def whitespace_tokens(text: str) -> list[str]:
    """Hindi and Spanish: lowercase, NFC, split on whitespace, punctuation stripped from
    each word's ends (``re``'s ``\\w`` would split Devanagari words at their vowel signs)."""
    words = (_strip_punctuation(w) for w in unicodedata.normalize("NFC", text).lower().split())
    return [w for w in words if w]


def bigram_tokens(text: str) -> list[str]:
    """Chinese and Japanese: the character bigrams of each CJK run (a one-character run is
    its unigram), other words as :func:`whitespace_tokens`."""
    text = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    last = 0
    for run in _CJK_RUN.finditer(text):
        out.extend(whitespace_tokens(text[last : run.start()]))
        chars = run.group()
        out.extend([chars] if len(chars) == 1 else [chars[i : i + 2] for i in range(len(chars) - 1)])
        last = run.end()
    out.extend(whitespace_tokens(text[last:]))
    return out


def segmenter(language: str) -> Callable[[str], list[str]] | str:
    """A word segmenter for Chinese (jieba) or Japanese (SudachiPy), or why there is none."""
    if language == "zh":
        try:
            import jieba
        except ImportError as exc:
            return f"jieba is not installed ({exc})"
        jieba.setLogLevel(logging.WARNING)

        def zh(text: str) -> list[str]:
            words = jieba.lcut(unicodedata.normalize("NFKC", text).lower())
            return [w for w in (w.strip() for w in words) if w and not _is_punctuation(w)]

        return zh
    if language == "ja":
        try:
            from sudachipy import dictionary, tokenizer

            sudachi = dictionary.Dictionary().create()
        except Exception as exc:  # not installed, or no dictionary (SudachiDict-core)
            return f"SudachiPy with a dictionary is not installed ({type(exc).__name__}: {exc})"
        mode = tokenizer.Tokenizer.SplitMode.C

        def ja(text: str) -> list[str]:
            words = (m.surface() for m in sudachi.tokenize(unicodedata.normalize("NFKC", text).lower(), mode))
            return [w for w in (w.strip() for w in words) if w and not _is_punctuation(w)]

        return ja
    return f"no segmenter for {language!r}: its words are separated already"


def tokenizer_for(language: str) -> Callable[[str], list[str]]:
    """The ``bm25`` peer's tokenizer for a language."""
    return bigram_tokens if language in ("zh", "ja") else whitespace_tokens


class LangBm25System(System):
    """``rank_bm25.BM25Okapi`` (k1=1.5, b=0.75) over a language's tokens, one index per
    user built after ingest; only turns with a positive score are returned."""

    def __init__(self, name: str, tokenize: Callable[[str], list[str]]) -> None:
        from rank_bm25 import BM25Okapi  # imported here: import time is not ingest time

        self.name = name
        self._bm25 = BM25Okapi
        self._tokenize = tokenize
        self._keys: dict[str, list[str]] = {}
        self._docs: dict[str, list[list[str]]] = {}
        self._index: dict[str, Any] = {}

    async def add_session(self, user: str, session_id: str, turns: Sequence[Turn]) -> None:
        self._keys.setdefault(user, []).extend(t.key for t in turns)
        self._docs.setdefault(user, []).extend(self._tokenize(peer_text(t)) for t in turns)

    async def build(self) -> None:
        self._index = {user: self._bm25(docs) for user, docs in self._docs.items()}

    async def search(self, user: str, query: str, k: int) -> list[str]:
        index, tokens = self._index.get(user), self._tokenize(query)
        if index is None or not tokens:
            return []
        return [self._keys[user][i] for i in _top_k(index.get_scores(tokens), k, positive_only=True)]


def _language(conv: Conversation) -> str:
    return conv.sample_id.split("-")[0]


def _factories(names: Sequence[str], neo4j_uri: str | None) -> dict[str, SystemFactory | str]:
    out: dict[str, SystemFactory | str] = {}
    nlp = shared_decomposer()
    for name in names:
        if name == "graphmem":
            out[name] = graphmem_factory(nlp, APP)
        elif name == "graphmem-neo4j":
            out[name] = graphmem_neo4j_factory(neo4j_uri, nlp, APP)
        elif name == "graphmem-blank":
            import spacy

            out[name] = graphmem_factory(CachingDecomposer(spacy.blank("en")), APP, name=name)
        elif name == "bm25":
            out[name] = peer_factory(lambda conv: LangBm25System("bm25", tokenizer_for(_language(conv))))
        elif name == "bm25-seg":
            out[name] = peer_factory(_segmented_bm25)
        elif name.startswith("graphmem:"):
            out[name] = graphmem_factory(CachingDecomposer(**mix_options(name.split(":", 1)[1])), APP, name=name)
        else:
            raise SystemExit(f"unknown system {name!r}; choose from {', '.join(ALL_SYSTEMS)}")
    return out


_SEGMENTERS: dict[str, Callable[[str], list[str]] | str] = {}


def _segmented_bm25(conv: Conversation) -> System:
    """``bm25-seg`` for a conversation's language (its segmenter loaded once)."""
    lang = _language(conv)
    if lang not in _SEGMENTERS:
        _SEGMENTERS[lang] = segmenter(lang)
    tokenize = _SEGMENTERS[lang]
    if isinstance(tokenize, str):
        raise LookupError(tokenize)
    return LangBm25System("bm25-seg", tokenize)


def mix_options(mix: str) -> dict[str, Any]:
    """``Decomposer`` options named on the command line (``graphmem:MIX``, parts joined by
    ``+``): ``words`` (Chinese and Japanese words only), ``SCOPE-SIZES`` (the words and the
    character n-grams of SIZES, ``12``: unigrams and bigrams, from SCOPE: ``text``,
    ``content``, ``words`` or ``long``; see ``graphmem._pipelines.CHAR_GRAM_SCOPES``), and
    ``noner`` (``entities=False``: no named-entity recognition)."""
    options: dict[str, Any] = {}
    for part in mix.split("+"):
        if part == "words":
            options["char_grams"] = ()
        elif part == "noner":
            options["entities"] = False
        else:
            scope, _, sizes = part.partition("-")
            if scope not in CHAR_GRAM_SCOPES or not sizes.isdigit():
                raise SystemExit(
                    f"unknown mix {part!r}: words, noner, or SCOPE-SIZES with SCOPE one of "
                    f"{', '.join(CHAR_GRAM_SCOPES)} (e.g. text-12)"
                )
            options.update(char_grams=tuple(int(n) for n in sizes), char_gram_scope=scope)
    return options


PERTURBATIONS = ("names", "accents", "latin-authors", "chat")
#: ``--perturb chat``: each question as a message to an assistant, in its own language: a
#: greeting first, thanks last, or a request to recall first, in turn.
CHAT_FRAMES = {
    "ja": ("こんにちは！{q}", "{q} ありがとう！", "教えてください。{q}"),
    "zh": ("你好！{q}", "{q} 谢谢！", "你还记得吗？{q}"),
    "hi": ("नमस्ते, {q}", "{q} धन्यवाद!", "क्या आपको याद है? {q}"),
    "es": ("Hola, {q}", "{q} ¡Gracias!", "¿Te acuerdas? {q}"),
}

#: How an app that keeps its users' names in Latin letters would have them (the usual
#: romanisation: Hepburn, pinyin, Hindi's common spelling), for ``--perturb latin-authors``.
LATIN_NAMES = {
    "美咲": "Misaki", "健太": "Kenta", "陽子": "Yoko", "拓也": "Takuya",
    "李娜": "Li Na", "王强": "Wang Qiang", "陈静": "Chen Jing", "刘洋": "Liu Yang",
    "प्रिया": "Priya", "राहुल": "Rahul", "अनीता": "Anita", "विकास": "Vikas",
}  # fmt: skip


def name_finder(language: str) -> Callable[[str], list[str]] | None:
    """The person names in a Chinese (jieba's part-of-speech tags ``nr*``) or Japanese
    (Sudachi's 固有名詞/人名) text, or ``None`` for another language or a missing tagger."""
    if language == "zh":
        import jieba
        import jieba.posseg

        jieba.setLogLevel(logging.WARNING)
        return lambda text: [w.word for w in jieba.posseg.cut(text) if w.flag.startswith("nr")]
    if language == "ja":
        try:
            from sudachipy import dictionary, tokenizer

            sudachi = dictionary.Dictionary().create()
        except Exception:  # not installed, or no dictionary
            return None
        mode = tokenizer.Tokenizer.SplitMode.C
        return lambda text: [m.surface() for m in sudachi.tokenize(text, mode) if m.part_of_speech()[1:3] == ("固有名詞", "人名")]
    return None


def perturb_names(data: dict[str, list[Conversation]]) -> int:
    """Rewrite the Chinese and Japanese questions in place the way transliterated names vary
    (deterministic, blind to the answers): in every person name of two or more characters
    the question holds (speakers' too), the middle character is replaced by the next one in
    Unicode (ジョナサン -> ジョニサン, 玛丽亚 -> 玛举亚, 王强 -> 王弻). Returns how many
    questions changed. A measure of robustness, never of tuning."""
    changed = 0
    for lang, convs in data.items():
        find = name_finder(lang)
        if find is None:
            continue
        for conv in convs:
            for q in conv.questions:
                text = q.question
                for name in dict.fromkeys(n for n in find(text) if len(n) >= 2):
                    i = len(name) // 2
                    text = text.replace(name, name[:i] + chr(ord(name[i]) + 1) + name[i + 1 :])
                if text != q.question:
                    object.__setattr__(q, "question", text)  # frozen dataclass, a private copy
                    changed += 1
    return changed


def perturb_latin_authors(data: dict[str, list[Conversation]]) -> int:
    """Rewrite every turn's author in place as written in Latin letters (:data:`LATIN_NAMES`:
    美咲 -> Misaki, 李娜 -> Li Na, प्रिया -> Priya); texts and questions keep their script.
    Returns how many turns changed. A measure of robustness, never of tuning."""
    changed = 0
    for convs in data.values():
        for conv in convs:
            for session in conv.sessions:
                for turn in session.turns:
                    if turn.speaker in LATIN_NAMES:
                        object.__setattr__(turn, "speaker", LATIN_NAMES[turn.speaker])  # a private copy
                        changed += 1
            object.__setattr__(conv, "speakers", tuple(LATIN_NAMES.get(s, s) for s in conv.speakers))
    return changed


def perturb_chat(data: dict[str, list[Conversation]]) -> int:
    """Rewrite every question in place as a message to an assistant (:data:`CHAT_FRAMES`: a
    greeting before it, thanks after it, or a request to recall before it, in turn).
    Returns how many questions changed. A measure of robustness, never of tuning."""
    changed = 0
    for lang, convs in data.items():
        frames = CHAT_FRAMES.get(lang)
        if frames is None:
            continue
        for conv in convs:
            for i, q in enumerate(conv.questions):
                object.__setattr__(q, "question", frames[i % len(frames)].format(q=q.question))  # a private copy
                changed += 1
    return changed


def perturb_accents(data: dict[str, list[Conversation]]) -> int:
    """Rewrite the questions of Latin-script languages (Spanish here) in place as typed
    without accents: every letter's combining marks dropped ("¿Qué comió José?" -> "¿Que
    comio Jose?"; ñ -> n too). Returns how many questions changed. A measure of
    robustness, never of tuning."""
    changed = 0
    for lang, convs in data.items():
        if lang in ("ja", "zh", "hi"):
            continue
        for conv in convs:
            for q in conv.questions:
                text = "".join(
                    ch for ch in unicodedata.normalize("NFKD", q.question) if not unicodedata.combining(ch)
                )
                text = unicodedata.normalize("NFC", text)
                if text != q.question:
                    object.__setattr__(q, "question", text)  # frozen dataclass, a private copy
                    changed += 1
    return changed


async def run(
    languages: Sequence[str] = LANGUAGES,
    systems: Sequence[str] = ALL_SYSTEMS,
    *,
    neo4j_uri: str | None = None,
    perturb: str | None = None,
    say: Callable[[str], None] = lambda msg: None,
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every system on every language; returns ``{system: {"by_language": {lang: summary},
    "by_category": {...}, "by_language_category": {...}, "overall": ..., "questions": [...]}}``
    and notes (skipped systems, the Neo4j comparison)."""
    data = load_set(list(languages))
    if perturb == "names":
        say(f"--perturb names: {perturb_names(data)} questions changed")
    elif perturb == "accents":
        say(f"--perturb accents: {perturb_accents(data)} questions changed")
    elif perturb == "chat":
        say(f"--perturb chat: {perturb_chat(data)} questions changed")
    elif perturb == "latin-authors":
        say(f"--perturb latin-authors: {perturb_latin_authors(data)} turns' authors changed")
    factories = _factories(systems, neo4j_uri)
    graphmems = [n for n in systems if n in ("graphmem", "graphmem-neo4j") and not isinstance(factories[n], str)]
    if graphmems:  # spaCy once per text, shared by both backends
        texts = [t.text for convs in data.values() for c in convs for t in c.turns]
        texts += [q.question for convs in data.values() for c in convs for q in c.questions]
        started = time.perf_counter()
        await asyncio.to_thread(shared_decomposer().decompose_many, texts)
        say(f"decomposition of {len(texts)} texts: {time.perf_counter() - started:.1f} s")
    results: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for name in systems:
        factory = factories[name]
        if isinstance(factory, str):
            notes.append(f"{name}: skipped: {factory}")
            say(notes[-1])
            continue
        rows: list[dict[str, Any]] = []
        seconds = {"ingest": 0.0, "search": 0.0}
        skipped: list[str] = []
        for lang, convs in data.items():
            if name == "bm25-seg" and isinstance(segmenter_reason := _segmenter_reason(lang), str):
                skipped.append(f"{lang} ({segmenter_reason})")
                continue
            result = await evaluate(factory, convs, KS, categories=CATEGORIES)
            for row in result["questions"]:
                row["language"] = lang
            rows.extend(result["questions"])
            for key in seconds:
                seconds[key] += result["seconds"][key]
        if skipped:
            notes.append(f"{name}: not run on {', '.join(skipped)}")
        langs = [lang for lang in languages if any(r["language"] == lang for r in rows)]
        results[name] = {
            "overall": summary(rows, KS),
            "by_language": {lang: summary([r for r in rows if r["language"] == lang], KS) for lang in langs},
            "by_category": {c: summary([r for r in rows if r["category"] == n], KS) for n, c in CATEGORIES.items()},
            "by_language_category": {
                f"{lang}/{c}": summary([r for r in rows if r["language"] == lang and r["category"] == n], KS)
                for lang in langs
                for n, c in CATEGORIES.items()
            },
            "seconds": {k: round(v, 3) for k, v in seconds.items()},
            "questions": rows,
        }
        say(f"{name}: recall@10 {results[name]['overall']['recall@10']:.3f}")
    if note := backends_note(results):
        notes.append(note)
    return results, notes


def _segmenter_reason(language: str) -> str | None:
    """Why ``bm25-seg`` cannot run on a language (``None``: it can)."""
    if language not in _SEGMENTERS:
        _SEGMENTERS[language] = segmenter(language)
    found = _SEGMENTERS[language]
    return found if isinstance(found, str) else None


def markdown_tables(results: dict[str, dict[str, Any]], languages: Sequence[str]) -> str:
    """Per k: systems as rows; overall, each language and each category as columns."""
    if not results:
        return "(no system ran)\n"
    counts = max(results.values(), key=lambda r: r["overall"]["questions"])
    lines: list[str] = []
    for k in sorted(KS, reverse=True):
        key = f"recall@{k}"
        lines.append(f"recall@{k}\n")
        rows = [
            ["*questions*", str(counts["overall"]["questions"])]
            + [str(counts["by_language"].get(lang, {}).get("questions", 0)) for lang in languages]
            + [str(counts["by_category"][c]["questions"]) for c in CATEGORIES.values()]
        ]
        for name, r in results.items():
            cells = [name, fmt(r["overall"][key])]
            cells += [fmt(r["by_language"].get(lang, {}).get(key)) for lang in languages]
            cells += [fmt(r["by_category"][c][key]) for c in CATEGORIES.values()]
            rows.append(cells)
        lines += markdown_table(["system", "overall", *languages, *CATEGORIES.values()], rows)
        lines.append("")
    lines.append("recall@10 per language and category\n")
    lines += markdown_table(
        ["system", *(f"{lang} {c}" for lang in languages for c in CATEGORIES.values())],
        [
            [name]
            + [fmt(r["by_language_category"].get(f"{lang}/{c}", {}).get("recall@10")) for lang in languages for c in CATEGORIES.values()]
            for name, r in results.items()
        ],
    )
    lines.append("")
    return "\n".join(lines)


async def _main(args: argparse.Namespace) -> int:
    say = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    languages = [s.strip() for s in args.languages.split(",") if s.strip()]
    unknown = [lang for lang in languages if lang not in LANGUAGES]
    if unknown:
        raise SystemExit(f"unknown language(s) {unknown}; choose from {', '.join(LANGUAGES)}")
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    results, notes = await run(languages, systems, neo4j_uri=args.neo4j_uri, perturb=args.perturb, say=say)
    # The pipeline's name says which decomposition was measured (per-language pipelines, when
    # a checkout has them, are named by the decomposer as it sees fit).
    pipeline = str(getattr(shared_decomposer(), "pipeline_name", "?"))
    perturbed = f", questions perturbed: {args.perturb}" if args.perturb else ""
    print(f"## Recall on the multilingual set ({', '.join(languages)}){perturbed}\n")
    print(f"graphmem {checkout()}, default pipeline {pipeline}, {datetime.now(UTC):%Y-%m-%d}\n")
    print(markdown_tables(results, languages))
    for note in notes:
        print(f"- {note}")
    if args.json:
        payload = {
            "meta": {
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "checkout": checkout(),
                "pipeline": pipeline,
                "machine": machine(),
                "versions": versions(),
                "languages": languages,
                "perturb": args.perturb,
                "notes": notes,
            },
            "systems": results,
        }
        Path(args.json).write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
        say(f"wrote {args.json}")
    return 1 if any(n.startswith("WARNING") for n in notes) else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", default=",".join(ALL_SYSTEMS), help=f"comma-separated, from: {', '.join(ALL_SYSTEMS)} (default: all)")
    parser.add_argument("--languages", default=",".join(LANGUAGES), help=f"comma-separated, from: {', '.join(LANGUAGES)} (default: all)")
    parser.add_argument("--neo4j-uri", default=os.environ.get("GRAPHMEM_NEO4J_URI"), help="Bolt URI for graphmem-neo4j (default: $GRAPHMEM_NEO4J_URI)")
    parser.add_argument("--json", default=None, metavar="OUT", help="also write every number and every question's results as JSON")
    parser.add_argument("--perturb", choices=PERTURBATIONS, default=None, help="names: one character changed in every person name of the Chinese and Japanese questions; accents: the Spanish questions typed without accents; latin-authors: every speaker's name written in Latin letters; chat: every question after a greeting or a request to recall or before thanks, in its language (robustness)")
    parser.add_argument("--quiet", action="store_true", help="print only the tables")
    return asyncio.run(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
