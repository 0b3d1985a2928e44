"""Misspelt words. A query word that is no English word and that no entry holds is read as
the one word of the user's entries it is a typo of. Also a word typed with other accents
than the user's ("cafe" / "café"; :func:`accent_variant`).

Questions are typed fast ("What career path has she decided to persue?"). A token that no
entry holds matches nothing, so such a question loses its rarest, most telling term. But
"correcting" words is dangerous: "likely" is one edit from "lively", "status" from "statue".
So only a word that is in no English word list is tried (spaCy's lemma lookup table, its
word forms and lemmas, and its lemmatizer's index of base forms: ~110k words): a real word
is never changed, however rare it is in the user's entries. In a query read as Spanish,
French, German, Italian or Portuguese the list is that language's lemma table instead (in
French, "marteau" is no English word, yet real). The rule
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

Entries are typed fast too, and an entry's misspelt word hides it from every question that
spells the word right. An entry has no user's tokens to be read against, so its misspelt
words are read by English word frequencies instead (:func:`typo_correction`): the entry
then holds the word as written and the lemma of the one frequent word it misspells.
"""

from __future__ import annotations

import functools
import gzip
import logging
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from importlib import resources

from graphmem._decompose import _edit_distance, load_lemma_table, unique_variant
from graphmem._language import LATIN_LANGUAGES, without_marks
from graphmem._pipelines import LemmaTable, _quiet_jieba, normalise_indic

logger = logging.getLogger("graphmem")

__all__ = [
    "MAX_ENDING_LETTERS",
    "MIN_SPACED_NAME",
    "MIN_TYPO_LETTERS",
    "MIN_UNCASED_NAME",
    "accent_variant",
    "common_words",
    "english_words",
    "fold_accents",
    "is_accent_candidate",
    "has_kana",
    "has_uncased_letters",
    "inflected_forms",
    "is_typo_candidate",
    "is_uncased_word",
    "one_edit",
    "han_name_places",
    "spaced_name_words",
    "typo_correction",
    "typo_variant",
    "uncased_name_variants",
    "uncased_word_variant",
    "unstretched",
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


def is_typo_candidate(word: str, language: str | None = "en", lemmas: Mapping[str, str] | None = None) -> bool:
    """Whether a query token may be a typo: lowercase ASCII letters only, five or more,
    and no word of the query's language. In English (and any language without a lemma
    table of its own), no English word; in a language with one (``lemmas``, a
    :class:`~graphmem._pipelines.LemmaTable`), no form or headword of it: a real French or
    Portuguese word ("marteau", "prato") is no English word, yet must not be read as the
    user's other word one edit away ("manteau", "preto"), while a word typed without its
    accent ("vivia" for "vivía") is still read as the token it misspells."""
    if len(word) < MIN_TYPO_LETTERS or not (word.isascii() and word.isalpha() and word.islower()):
        return False
    if language in LATIN_LANGUAGES:
        return isinstance(lemmas, LemmaTable) and not lemmas.knows(word)
    lexicon = english_words()
    return lexicon is not None and word not in lexicon and not _regular_form_of_a_word(word, lexicon)


def _regular_form_of_a_word(word: str, lexicon: _EnglishWords) -> bool:
    """Whether ``word`` is an English word with a regular ending the lists do not spell out
    ("texted" is "text" + "ed", "podcasts" "podcast" + "s"): a real word, no typo ("texted"
    was read as "tested", a form of the user's "test")."""
    for ending in _ENDINGS:
        stem = word[: -len(ending)]
        if not word.endswith(ending) or len(stem) < 3 or (ending == "d" and not stem.endswith("e")):
            continue  # ("campd" is a typo of "camped": "d" follows an "e" only)
        if stem in lexicon or stem + "e" in lexicon or (stem[-1] == stem[-2] and stem[:-1] in lexicon):
            return True
        if ending.startswith("ie") and stem + "y" in lexicon:
            return True
    return False


#: Shorter words are not read through their accents (Spanish "sí" / "si", "él" / "el" are
#: two words; they are stop words anyway).
MIN_ACCENT_LETTERS = 3


def fold_accents(word: str) -> str:
    """``word`` without its accents: each letter's combining marks dropped (NFKD), and an
    apostrophe written as a straight one (a phone types "O’Brien", a keyboard "O'Brien")."""
    return without_marks(word).translate(_APOSTROPHES)


#: The apostrophe's other forms: the right single quotation mark, the modifier letter.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'"})


def accent_variant(word: str, vocabulary: Iterable[str]) -> str | None:
    """The one token of ``vocabulary`` that is ``word`` with other accents ("cafe" and
    "café", "jose" and "josé", "resume" and "résumé") or another apostrophe ("o’brien" and
    "o'brien"), or ``None`` (none, or several).

    Only words of Latin letters: without its marks the word is ASCII letters, three or
    more. People type without accents (or with them) as it comes, and a word is the same
    word either way; a Devanagari or Greek mark, dropped, could make another word, so no
    other script is folded."""
    if not is_accent_candidate(word):
        return None
    key = fold_accents(word)
    # Two ASCII words fold alike only when they are one word: for an ASCII query word
    # (most) only the user's tokens with an accent or a curly apostrophe are folded.
    plain = word.isascii()
    found = {t for t in vocabulary if t != word and not (plain and t.isascii()) and fold_accents(t) == key}
    return found.pop() if len(found) == 1 else None


def is_accent_candidate(word: str) -> bool:
    """Whether ``word`` is read through its accents: without them, ASCII letters (and
    apostrophes), at least :data:`MIN_ACCENT_LETTERS` (see :func:`accent_variant`)."""
    letters = fold_accents(word).replace("'", "")
    return len(letters) >= MIN_ACCENT_LETTERS and letters.isascii() and letters.isalpha()


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


# ---------------------------------------------------------------------------- misspelt words in entries

#: The table of common English words (``graphmem/_data``, built by
#: ``scripts/build_common_words.py`` from spacy-lookups-data's ``en_lexeme_prob``).
COMMON_WORDS_FILE = "common_words.txt.gz"
#: The table lists the lowercase words whose unigram log probability (spaCy's, natural log)
#: is above this, ~74k of them; a word it does not list counts as this frequent, the most
#: it can be.
COMMON_LOG_PROB = -17.0
#: A misspelling is read as a word only when that word is at least ten times as frequent
#: as the word as written and as any other word (of another lemma) equally close:
#: "persue" is "pursue", not "peruse"; "movin" may be "moving" or "movie", so neither;
#: "kinda" and "hoodie" are written that way on purpose (frequent themselves).
CLEAR_WINNER = math.log(10.0)

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@functools.lru_cache(maxsize=1)
def common_words() -> Mapping[str, float]:
    """English words and their log probabilities, the ~74k most frequent lowercase ones
    (empty when the table cannot be read: then no entry word is read as a typo, with a
    warning)."""
    source = resources.files("graphmem").joinpath("_data", COMMON_WORDS_FILE)
    try:
        text = gzip.decompress(source.read_bytes()).decode("ascii")
    except (OSError, ValueError) as exc:
        logger.warning(
            "graphmem: the common-words table (graphmem/_data/%s) cannot be read (%s); "
            "misspelt words in entries are stored as written only",
            COMMON_WORDS_FILE,
            exc,
        )
        return {}
    words: dict[str, float] = {}
    for line in text.splitlines():
        word, _, prob = line.partition("\t")
        words[word] = float(prob)
    return words


@functools.lru_cache(maxsize=1)
def _longest_common_word() -> int:
    return max(map(len, common_words()), default=0)


@functools.lru_cache(maxsize=4096)
def typo_correction(word: str) -> str | None:
    """The lemma of the common English word that ``word``, a word of an entry, misspells,
    or ``None``.

    The entry side of :func:`typo_variant`, with no user's tokens to choose from: ``word``
    is lowercase ASCII letters, five or more, and no English word
    (:func:`is_typo_candidate`); its candidates are the English words one edit away with
    the same first letter (an insertion, deletion, substitution or swap of neighbours: most
    typos are one such edit); the most frequent wins when it is a :data:`CLEAR_WINNER`
    over the word as written and over the others (candidates of one lemma count as one).
    The entry keeps its word as written too, so a wrong reading adds a token and takes
    none away."""
    if len(word) > _longest_common_word() + 1 or not is_typo_candidate(word):
        return None  # (no longer word is one edit from one of the table's)
    common = common_words()
    lexicon = english_words()
    if not common or lexicon is None:
        return None
    best: dict[str, float] = {}
    for candidate in one_edit(word):
        prob = common.get(candidate)
        if prob is None or candidate not in lexicon:
            continue
        lemma = lexicon.lemma_of(candidate) or candidate
        if prob > best.get(lemma, -math.inf):
            best[lemma] = prob
    if not best:
        return None
    ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    rivals = [common.get(word, COMMON_LOG_PROB), *(prob for _, prob in ranked[1:2])]
    return ranked[0][0] if ranked[0][1] - max(rivals) >= CLEAR_WINNER else None


#: A letter typed three or more times in a row: chat stretches a word for emphasis.
_STRETCHED_RUN = re.compile(r"([a-z])\1{2,}")
#: Words with more stretched runs are read as written (each run doubles the readings).
_MAX_STRETCHED_RUNS = 3
_VOWELS_OR_Y = frozenset("aeiouy")


@functools.lru_cache(maxsize=4096)
def unstretched(word: str) -> str | None:
    """The English word that ``word`` stretches by repeating its letters, as chat does
    ("sooo", "amaaazing", "youuu", "yesss", "gameee"), or ``None``.

    ``word`` is lowercase ASCII letters and no English word itself ("www" stays). Each run
    of three or more of one letter is read as two letters or as one; the readings that are
    English words (:func:`english_words`) with a vowel are candidates and the most frequent
    wins (:func:`common_words`: "gooood" is "good", not "god"; "brrr" and "hmmm" stay).
    Without the word lists nothing is read."""
    runs = list(_STRETCHED_RUN.finditer(word))
    if not runs or len(runs) > _MAX_STRETCHED_RUNS or not (word.isascii() and word.isalpha()):
        return None
    lexicon = english_words()
    common = common_words()
    if lexicon is None or word in lexicon:
        return None
    readings = [""]
    end = 0
    for run in runs:
        letter = run.group(1)
        head = word[end : run.start()]
        readings = [reading + head + letter * n for reading in readings for n in (2, 1)]
        end = run.end()
    readings = [reading + word[end:] for reading in readings]
    # A reading with no vowel is a sound ("brrr", "hmmm", "zzz" are not "br", "hm", "z").
    known = [reading for reading in readings if reading in lexicon and _VOWELS_OR_Y.intersection(reading)]
    if not known:
        return None
    # The most frequent reading; a listed word the frequency table lacks counts as rarest.
    return max(known, key=lambda reading: (common.get(reading, COMMON_LOG_PROB - 1.0), -len(reading), reading))


def one_edit(word: str) -> set[str]:
    """The strings one edit from ``word`` that keep its first letter."""
    found: set[str] = set()
    for i in range(1, len(word) + 1):
        head, tail = word[:i], word[i:]
        if tail:
            found.add(head + tail[1:])
        if len(tail) > 1:
            found.add(head + tail[1] + tail[0] + tail[2:])
        for letter in _LETTERS:
            if tail:
                found.add(head + letter + tail[1:])
            found.add(head + letter + tail)
    found.discard(word)
    return found


# ---------------------------------------------------------------------------- names without capitals

#: Scripts whose words no spaces separate: a name is looked for inside the runs of its
#: script (Han), or is a whole run of it (kana: a katakana name ends where the particle
#: after it, in hiragana, begins).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KATAKANA = "\u30a0-\u30ff\uff66-\uff9f"
_HIRAGANA = "\u3040-\u309f"
_RUNS = {
    "han": re.compile(f"[{_HAN}]+"),
    "katakana": re.compile(f"[{_KATAKANA}]+"),
    "hiragana": re.compile(f"[{_HIRAGANA}]+"),
}
#: A word of a script with spaces: letters with their combining marks (Devanagari vowel
#: signs and viramas are marks, which ``\w`` does not match).
_SPACED_WORD = re.compile(r"(?:[^\W\d_]|[\u0300-\u036f\u0900-\u0903\u093a-\u094f\u0951-\u0957\u0962\u0963])+")
#: Marks that spell no sound apart from their neighbours: the katakana long-vowel mark and
#: middle dot (ジョーナサン / ジョナサン, マリア・ロペス / マリアロペス).
_SILENT = str.maketrans("", "", "\u30fc\u30fb\uff70\uff65")
#: Shorter names and words (in characters, after folding) are never linked: a two-character
#: Han name one character off is another name (健太 / 健二), not another spelling.
MIN_UNCASED_NAME = 3
#: The same in a script with spaces, in code points (a Devanagari vowel sign is one):
#: राहुल, मायकल have five; राम / रोम (three) are two names.
MIN_SPACED_NAME = 5


def _long_enough(folded: str, script: str) -> bool:
    return len(folded) >= (MIN_SPACED_NAME if script == "spaced" else MIN_UNCASED_NAME)


def has_uncased_letters(text: str) -> bool:
    """Whether ``text`` holds a letter of a script without capitals (Han, kana, Devanagari)."""
    return any(ch.isalpha() and not (ch.isupper() or ch.islower()) for ch in text)


def _script(name: str) -> str | None:
    """The script class of a name written in a script without capitals, or ``None`` (a
    cased script: the capitalised-word rule applies; or a mix)."""
    for script, run in _RUNS.items():
        if run.fullmatch(name):
            return script
    if _SPACED_WORD.fullmatch(name) and not any(ch.isupper() or ch.islower() for ch in name):
        return "spaced"
    return None


#: jieba's part-of-speech tags of a person's name (``nrt``: transliterated, ``nrfg``: a
#: well-known one).
_HAN_NAME_TAGS = ("nr", "nrt", "nrfg")


#: Kana letters (not the middle dot or the long-vowel mark, which Chinese text uses too).
_KANA_LETTER = re.compile("[\u3041-\u3096\u30a1-\u30fa\uff66-\uff6f\uff71-\uff9d]")


def has_kana(text: str) -> bool:
    """Whether ``text`` holds a hiragana or katakana letter (so it is Japanese, not Chinese)."""
    return _KANA_LETTER.search(text) is not None


def han_name_places(text: str, *, max_han: int) -> list[tuple[int, tuple[tuple[str, ...], ...]]]:
    """Where ``text`` may write a person's name in Han: each place as where it starts and
    the spans starting there, in groups to try in turn.

    A place is where jieba's tagger starts a word it tags as a person's name (``nr``,
    ``nrt``, ``nrfg``; none without the ``zh`` extra); its spans are stretches of two to
    ``max_han`` characters of its run, first the name's words themselves (凯 + 罗琳: 凯罗琳)
    with any going on into a word the tagger made up (its tagger cuts transliterations
    short: 梅兰 + 妮的, so 梅兰妮 too), then those ending where it ends another word, then
    those ending inside a made-up word within the name. Never one ending inside a word of
    its dictionary (卡罗琳 + 研究: not 卡罗琳研; 约翰 + 上周: not 约翰上)."""
    places: list[tuple[int, tuple[tuple[str, ...], ...]]] = []
    for run in _RUNS["han"].finditer(text):
        chars = run.group()
        words = _han_words(chars)
        ends = {end for _, end, _, _ in words}
        # A span may end inside a word the tagger made up (梅兰 + 妮的: 梅兰妮), never
        # inside one of its dictionary's (卡罗琳 + 研究: not 卡罗琳研; 约翰 + 上周).
        made_up = {i for start, end, _, known in words if not known for i in range(start + 1, end)}
        for i, (start, _, flag, _) in enumerate(words):
            if flag not in _HAN_NAME_TAGS or (i and words[i - 1][2] in _HAN_NAME_TAGS):
                continue  # (a name's words, 凯 + 罗琳, start one place)
            j = i
            while j + 1 < len(words) and words[j + 1][2] in _HAN_NAME_TAGS:
                j += 1
            whole = words[j][1]
            lengths = range(2, min(max_han, len(chars) - start) + 1)
            named = [chars[start:whole]] if 2 <= whole - start <= max_han else []
            # A name cut short (梅兰 + 妮的) may go on into the made-up word after it.
            named += [chars[start : start + n] for n in lengths if start + n in made_up and start + n > whole]
            aligned = [chars[start : start + n] for n in lengths if start + n in ends and start + n != whole]
            cut = [chars[start : start + n] for n in lengths if start + n in made_up and start + n <= whole]
            places.append((run.start() + start, (tuple(named), tuple(aligned), tuple(cut))))
    return places


def spaced_name_words(text: str) -> list[tuple[int, str]]:
    """Where ``text`` may write a person's name in a script with spaces and no capitals
    (Devanagari): each word of three or more code points that is no Hindi stop word, and
    where it starts."""
    stop = _hindi_stop_words()
    return [
        (m.start(), word)
        for m in _SPACED_WORD.finditer(text)
        if _script(word := m.group()) == "spaced" and len(word) >= 3 and word not in stop
    ]


def _han_words(chars: str) -> list[tuple[int, int, str, bool]]:
    """The words jieba's tagger cuts a run of Han ``chars`` into: start, end, tag, and
    whether its dictionary holds the word (else its HMM made it up)."""
    try:
        import jieba
        import jieba.posseg
    except ImportError:
        return []
    _quiet_jieba()
    words, at = [], 0
    for word in jieba.posseg.cut(chars, HMM=True):
        words.append((at, at + len(word.word), word.flag, jieba.dt.FREQ.get(word.word, 0) > 0))
        at += len(word.word)
    return words


@functools.cache
def _hindi_stop_words() -> frozenset[str]:
    from spacy.lang.hi.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def _fold(text: str) -> str:
    """How two spellings of a name are compared: NFKC (half-width katakana), the silent
    marks dropped, Indic normalisation (nukta, joiners, chandrabindu)."""
    return normalise_indic(unicodedata.normalize("NFKC", text)).translate(_SILENT)


def _places(text: str, name: str, script: str) -> list[tuple[int, str]]:
    """Where in ``text`` (start, span) ``name`` could be spelled another way: whole words (a
    script with spaces) or whole runs (kana); inside a Han run, the stretches one character
    shorter than the name, as long, and one longer, that start with its first character."""
    if script != "han":
        pattern = _SPACED_WORD if script == "spaced" else _RUNS[script]
        return [(m.start(), m.group()) for m in pattern.finditer(text)]
    found: list[tuple[int, str]] = []
    for run in _RUNS["han"].finditer(text):
        chars = run.group()
        for i, char in enumerate(chars):
            if char == name[0]:
                found.extend(
                    (run.start() + i, chars[i : i + n])
                    for n in (len(name) - 1, len(name), len(name) + 1)
                    if n >= 1 and i + n <= len(chars)
                )
    return found


def uncased_name_variants(text: str, names: Iterable[str]) -> dict[str, str]:
    """The spans of a query ``text`` that spell one of ``names`` (words of speakers' or
    entities' names) written in a script without capitals another way, and that name.

    The capitalised-word rule cannot tell a name in Han, kana or Devanagari. Instead each
    name of :data:`MIN_UNCASED_NAME` or more characters (folded, see :func:`_fold`) that
    the query does not hold as written is looked for: a span of the query in the same script
    (:func:`_places`) that starts with the same character and is one edit away from the
    name after folding (玛丽亚 / 玛利亚, ジョナサン / ジョーナサン / ジョニサン, मायकल /
    माइकल), or the same after folding. A span that could spell two names, and a name with
    two such spans starting at one place (玛丽说 for 玛丽亚: 玛丽 or 玛丽说?), link to none.
    """
    by_span: dict[str, set[str]] = {}
    for name in set(names):
        script = _script(name)
        folded = _fold(name)
        # A hiragana name is not tried: a run of hiragana carries its particles (さくらが).
        if script in (None, "hiragana") or not _long_enough(folded, script) or name in text:
            continue
        matches = [
            (start, span)
            for start, span in _places(text, name, script)
            if span != name and span[:1] == name[:1] and _edit_distance(_fold(span), folded, limit=1) <= 1
        ]
        starts = [start for start, _ in matches]
        if len(set(starts)) != len(starts):  # one place read two ways
            continue
        for _, span in matches:
            by_span.setdefault(span, set()).add(name)
    return {span: found.pop() for span, found in by_span.items() if len(found) == 1}


def is_uncased_word(word: str) -> bool:
    """Whether ``word`` is written wholly in Han, wholly in katakana, or in one script with
    spaces and without capitals (Devanagari)."""
    return _script(word) in ("han", "katakana", "spaced")


def uncased_word_variant(word: str, vocabulary: Iterable[str]) -> str | None:
    """The one token of ``vocabulary`` that ``word`` (a query word held by no entry) spells
    another way, for words written wholly in Han, in katakana, or in a script with spaces
    and no capitals: long enough after folding (:data:`MIN_UNCASED_NAME` characters,
    :data:`MIN_SPACED_NAME` code points with spaces), the same script and first character,
    one edit away after folding (玛举亚 / 玛丽亚, ジョーナサン / ジョナサン, मायकल / माइकल).
    ``None``: none, or more than one.

    This is the typo rule of scripts without a word list to tell real words: no dictionary
    says which Han words are real (transliterations such as 玛利亚 are in jieba's), so what
    keeps it safe is the length (three Han characters are a name or a compound whose other
    two morphemes stay; 健太 / 健二 are never linked), the place (the first character
    stays), and uniqueness among the user's own tokens. Hiragana words are never tried:
    they are grammar or common words, and one kana changes the word (いる / いく)."""
    script = _script(word)
    folded = _fold(word)
    if script not in ("han", "katakana", "spaced") or not _long_enough(folded, script):
        return None
    return unique_variant(
        word,
        (t for t in vocabulary if _script(t) == script),
        lambda token: _edit_distance(_fold(token), folded, limit=1) <= 1,
    )
