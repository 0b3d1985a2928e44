"""Which language a text is in: by its script first, then by a detector among Latin languages.

Detection has to be cheap for English, which is most of what graphmem stores, and right for
the short texts a memory sees (a turn, a question). So it decides from what costs least:

1. **ASCII only** -> English, at once (``str.isascii``). A Spanish text without accents or
   inverted marks is therefore read as English: an app whose users write Spanish sets
   ``Decomposer(language="es")``.
2. **Script**: the letters are counted per script (a Han, kana or Hangul character counts as
   three letters: it is about a word's worth of Latin letters). The script with most wins:
   any kana among CJK characters -> Japanese; Han without kana -> Chinese; Hangul -> Korean;
   Devanagari -> Hindi; another non-Latin script -> ``"xx"`` (unknown). So "I had ラーメン
   in Tokyo" stays English and "LGBTQのサポートグループ" is Japanese.
3. **Latin letters**: all of them ASCII (curly quotes, dashes and emoji are no letters) ->
   English; "¿" or "¡" -> Spanish; a letter none of them writes (Vietnamese "ở", Polish
   "ł", outside names) -> ``"xx"``, so that a language without a pipeline is not read as
   whichever of them the detector guesses, text by text; otherwise `lingua <https://github.com/pemistahl/lingua-py>`_
   (``lingua-language-detector``, extra ``langdetect``), built for English and the Latin
   languages graphmem has pipelines for only, decides; when it is unsure (the two best
   languages less than 0.1 apart), or is not installed, English. It is given the text
   without its names by their look (words capitalised inside a sentence, :func:`without_names`):
   short questions are mostly a name and a few words, and a name's accents ("Zoë",
   "André") said Portuguese or French where the words are English.
4. **Words English writes with their accents** ("fiancée", "soirée", "jalapeños": without
   their marks, words of spaCy's English lists, three letters or more): when every word
   with an accent is one, they tell no language, and the text is English if the detector
   reads the rest of its words as English. lingua took "When did she meet her fiancée?"
   for French on that one word. Too few other words, or words it is unsure of, and it
   decides on the whole text as before ("Vamos mañana al café", "Señor" stay Spanish).

The detector is built on the first text that needs it, never at import, in lingua's low
accuracy mode (trigram models only): about 10 MB and 0.3 s to load, where the high
accuracy mode takes over 200 MB and seconds, a cost an English user would pay for the first
"café". It is less sure of very short texts; an app that knows its language sets it.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["LATIN_LANGUAGES", "SUPPORTED_LANGUAGES", "LanguageDetector", "WordList", "script_language", "without_marks"]

logger = logging.getLogger("graphmem")

#: Latin-script languages with a spaCy tokenizer, stop words and lookup lemmas.
LATIN_LANGUAGES = ("es", "fr", "de", "it", "pt")
#: Every language code a text can be decomposed as (``"xx"``: unknown script, and ``"ko"``
#: Korean, are decomposed by the default pipeline).
SUPPORTED_LANGUAGES = ("en", *LATIN_LANGUAGES, "hi", "ja", "zh")
#: Codes ``detect`` may return besides the supported ones.
DETECTED_ONLY = ("ko", "xx")
#: Every language an entry may store (and be decomposed as).
ENTRY_LANGUAGES = (*SUPPORTED_LANGUAGES, *DETECTED_ONLY)

_KANA = re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff]")
_HANGUL = re.compile("[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
_DEVANAGARI = re.compile("[\u0900-\u097f\ua8e0-\ua8ff]")
_LATIN = re.compile("[A-Za-z\u00aa\u00ba\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff]")
_NON_ASCII_LATIN = re.compile("[\u00aa\u00ba\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff]")
_LETTER = re.compile(r"[^\W\d_]")
#: The letters beyond ASCII that English and :data:`LATIN_LANGUAGES` write (lowercase).
_DETECTABLE_LETTERS = frozenset("ªºàáâãäæçèéêëìíîïñòóôõöùúûüÿœß")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
#: What may stand between a sentence's end and its first word, and what ends a sentence.
_BEFORE_A_WORD = " \t\r\"'“”‘’«»([\u00a0"
_SENTENCE_END = ".!?¿¡…:;\n"
#: Characters weigh like this many Latin letters (a CJK character is about a word).
_CJK_WEIGHT = 3
#: Long texts are judged on their beginning: the script of a turn does not change midway.
_SAMPLE_CHARS = 2_000
#: lingua's answer counts only when the best language leads the next by this much.
_MIN_RELATIVE_DISTANCE = 0.1


class WordList(Protocol):
    """Words to look up (:class:`LanguageDetector`'s English lists)."""

    def __contains__(self, word: str, /) -> bool: ...


def script_language(text: str) -> str | None:
    """The language a text's script decides (``"ja"``, ``"zh"``, ``"ko"``, ``"hi"``, ``"xx"``
    or ``"en"`` for Latin text whose letters are all ASCII), or ``None`` when its Latin
    letters need the detector. Text without letters is ``"en"``."""
    if text.isascii():
        return "en"
    sample = text[:_SAMPLE_CHARS]
    kana = len(_KANA.findall(sample))
    han = len(_HAN.findall(sample))
    hangul = len(_HANGUL.findall(sample))
    devanagari = len(_DEVANAGARI.findall(sample))
    latin = len(_LATIN.findall(sample))
    letters = len(_LETTER.findall(sample))
    other = max(0, letters - kana - han - hangul - devanagari - latin)
    cjk = _CJK_WEIGHT * (kana + han + hangul)
    best = max(cjk, devanagari, latin, other)
    if best == 0:
        return "en"
    if cjk == best:
        if kana:
            return "ja"
        return "ko" if hangul > han else "zh"
    if devanagari == best:
        return "hi"
    if latin == best:
        if "¿" in sample or "¡" in sample:
            return "es"
        return None if _NON_ASCII_LATIN.search(sample) else "en"
    return "xx"


def without_marks(word: str) -> str:
    """``word`` without its combining marks ("fiancée" -> "fiancee")."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", word) if not unicodedata.combining(ch))


def without_names(text: str) -> str:
    """``text`` without the words that are names by their look: capitalised inside a
    sentence (not its first word). A name is no evidence of a language: "What did Zoë
    adopt?" is English, "Ayer vi a José" Spanish, whatever the name's accents say."""
    kept: list[str] = []
    start = 0
    for word in _WORD.finditer(text):
        if word.group()[0].isupper() and not _opens_a_sentence(text, word.start()):
            kept.append(text[start : word.start()])
            start = word.end()
    kept.append(text[start:])
    return "".join(kept)


def _opens_a_sentence(text: str, at: int) -> bool:
    """Whether the word at ``at`` is a sentence's first: only spaces, quotes and brackets
    stand between it and the text's start or a sentence's end."""
    at -= 1
    while at >= 0 and text[at] in _BEFORE_A_WORD:
        at -= 1
    return at < 0 or text[at] in _SENTENCE_END


class LanguageDetector:
    """Detects the language of a text (see the module docstring). Thread-safe; lingua is
    built on the first text that needs it.

    Args:
        english_words: gives the English word lists (step 4; ``None`` from it: no lists),
            called on the first text with an accent that needs the detector.
    """

    def __init__(self, english_words: Callable[[], WordList | None] | None = None) -> None:
        self._english_words = english_words
        self._lock = threading.Lock()
        self._lingua: Any = None
        self._lingua_missing = False
        self._codes: dict[Any, str] = {}

    @property
    def ready(self) -> bool:
        """Whether detecting needs no loading (lingua built, or not installed)."""
        return self._lingua is not None or self._lingua_missing

    def detect(self, text: str) -> str:
        """The language code of ``text``: one of :data:`SUPPORTED_LANGUAGES`, ``"ko"`` or ``"xx"``."""
        by_script = script_language(text)
        if by_script is not None:
            return by_script
        lingua = self._detector()
        if lingua is None:
            return "en"
        sample = text[:_SAMPLE_CHARS]
        words = without_names(sample)
        if not _LETTER.search(words):
            return "en"  # nothing but names: no evidence of another language
        if any(ch not in _DETECTABLE_LETTERS for ch in _NON_ASCII_LATIN.findall(words.lower())):
            # A letter none of these languages writes (Vietnamese "ở", "đ"; Polish "ł"):
            # the detector would guess one of them, text by text, so an entry and its
            # question would be read as two languages. Unknown instead, as other scripts.
            return "xx"
        if self._accents_only_on_english_words(words):
            # The rest of the text must say English itself: "Vamos mañana al café" has only
            # English words with accents too ("manana", "cafe"), and too little else.
            rest = " ".join(word for word in _WORD.findall(words) if word.isascii())
            found = lingua.detect_language_of(rest) if _LETTER.search(rest) else None
            if found is not None and self._codes.get(found) == "en":
                return "en"
        # Judged on what is not a name; a text whose accents are all in names ("Who is
        # André?") then reads as its words do.
        found = lingua.detect_language_of(words)
        return "en" if found is None else self._codes.get(found, "en")

    def _accents_only_on_english_words(self, words: str) -> bool:
        """Whether every word of ``words`` with an accent is an English word without it, of
        at least three letters ("é", "já" are words of other languages)."""
        lexicon = self._english_words() if self._english_words is not None else None
        if lexicon is None:
            return False
        accented = [word for word in _WORD.findall(words.lower()) if not word.isascii()]
        bare = [without_marks(word) for word in accented]
        return bool(bare) and all(len(word) >= 3 and word.isascii() and word in lexicon for word in bare)

    def _detector(self) -> Any:
        if self._lingua is not None or self._lingua_missing:
            return self._lingua
        with self._lock:
            if self._lingua is None and not self._lingua_missing:
                try:
                    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder
                except ImportError:
                    self._lingua_missing = True
                    logger.warning(
                        "graphmem: the language detector is not installed; text in Latin "
                        "letters is taken as English. Install it with: "
                        "pip install 'graphmem[langdetect]' (or set Decomposer(language=...))"
                    )
                    return None
                languages = [
                    Language.from_iso_code_639_1(getattr(IsoCode639_1, code.upper()))
                    for code in ("en", *LATIN_LANGUAGES)
                ]
                self._codes = {language: language.iso_code_639_1.name.lower() for language in languages}
                self._lingua = (
                    LanguageDetectorBuilder.from_languages(*languages)
                    .with_minimum_relative_distance(_MIN_RELATIVE_DISTANCE)
                    .with_low_accuracy_mode()
                    .with_preloaded_language_models()
                    .build()
                )
        return self._lingua
