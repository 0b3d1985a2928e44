"""The spaCy pipeline of each language other than the default one, loaded lazily.

Each is built from a PyPI package and decomposes entries and queries of its language by the
same rules, so their tokens agree:

- **es, fr, de, it, pt** ("lookup" style, the English rules): spaCy's tokenizer and stop
  words for the language and the lemma lookup table of ``spacy-lookups-data``; a word written
  as a name keeps its form (in German, where every noun is capitalised, only a word the
  table does not know), and a word whose lemma is a stop word is one (Italian ``I`` ->
  ``il``, French ``-ce`` of ``est-ce`` -> ``ce``). No entities (no PyPI pipeline with NER fits spaCy 3.8).
- **ja** (extra ``ja``): the GiNZA pipeline ``ja_ginza`` (SudachiPy with SudachiDict-core,
  split mode C), reduced to its tokenizer and named-entity recogniser. Words are
  dictionary forms (``住んで`` -> ``住む``); particles, auxiliaries, conjunctions, pronouns,
  determiners, punctuation and Japanese stop words are not words. The part of speech comes
  from the tokenizer (Sudachi's dictionary), not from the morphologizer, so a query (run
  through the tokenizer alone) and an entry agree. GiNZA's entity labels (Extended Named
  Entities) are mapped to the OntoNotes labels graphmem keeps (``Person`` -> ``PERSON``).
- **zh** (extra ``zh``): spaCy's Chinese tokenizer with the ``jieba`` segmenter (its
  dictionary ships in the package; ``spacy-pkuseg`` would download its model at run time),
  Chinese stop words dropped. No entities (no Chinese NER pipeline on PyPI).
- **ja and zh**: besides the words, the character n-grams of the text (``char_grams``,
  unigrams by default, from every run of Han and kana: ``char_gram_scope="text"``). They
  keep what segmentation loses: a name transliterated one character differently
  ("玛丽亚" / "玛利亚") still shares its other characters, a word the segmenter cuts
  otherwise in the question still shares its characters, and a content word on the stop
  list (行く) still counts. A character in most entries (a particle) weighs next to
  nothing (inverse document frequency). The mix was chosen by measurement
  (benchmarks/README.md, "Multilingual recall").
- **hi**: spaCy's Hindi tokenizer, stop words (and the question words and pronoun forms its
  list lacks: ``क्या``, ``कहाँ``, ``कब``, ``मैंने``, ``मुझे``, ``मेरी``, ...) and its ``norm`` (a light suffix stemmer:
  ``रहती`` -> ``रह``), after Indic normalisation (:func:`normalise_indic`). No entities.

A language whose package is missing is decomposed by the default pipeline, as before this
module existed (Chinese and Japanese in character unigrams and bigrams), with a warning
naming the extra to install.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

#: The scripts written without spaces between words (Han, kana, Hangul, and the Southeast
#: Asian scripts Thai, Lao, Khmer and Myanmar, for which no pipeline finds the words), as
#: character ranges.
NO_SPACE_SCRIPT = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\u1100-\u11ff"  # Hangul jamo
    "\U00020000-\U0003ffff"  # CJK extensions B to H and their compatibility ideographs (𠮷)
)
NO_SPACE_CHAR = re.compile(f"[{NO_SPACE_SCRIPT}]")

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Token

__all__ = [
    "CHAR_GRAM_SCOPES",
    "CapitalisedNounLemmas",
    "NO_SPACE_CHAR",
    "NO_SPACE_SCRIPT",
    "DEFAULT_CHAR_GRAMS",
    "DEFAULT_CHAR_GRAM_SCOPE",
    "HeadwordLemmas",
    "LemmaTable",
    "LanguagePipeline",
    "load_language_pipeline",
    "normalise_indic",
]

logger = logging.getLogger("graphmem")

#: Character n-gram sizes Chinese and Japanese text adds besides its words.
DEFAULT_CHAR_GRAMS: tuple[int, ...] = (1,)
#: Where those n-grams come from, measured in benchmarks/README.md ("Multilingual recall"):
#: ``"text"``: every run of Han and kana in the text, particles and stop words included;
#: ``"content"``: runs of adjacent words that are not grammar (particles, auxiliaries,
#: punctuation; stop words are kept), so no n-gram spans a particle or is one;
#: ``"words"``: each content word on its own; ``"long"``: each content word of
#: :data:`CHAR_GRAM_MIN_LENGTH` characters or more.
CHAR_GRAM_SCOPES = ("text", "content", "words", "long")
DEFAULT_CHAR_GRAM_SCOPE = "text"
#: Words at least this long give character n-grams in the ``"long"`` scope.
CHAR_GRAM_MIN_LENGTH = 3

#: Parts of speech (from Sudachi's dictionary) that are grammar, not content, in Japanese.
_JA_GRAMMAR_POS = frozenset({"ADP", "AUX", "SCONJ", "CCONJ", "PART", "PRON", "DET", "PUNCT", "SYM", "X", "SPACE"})
#: The ja_ginza components decomposition does not use (kept: tokenizer, tok2vec, ner).
_JA_UNUSED = ("parser", "morphologizer", "compound_splitter", "bunsetu_recognizer", "attribute_ruler")

#: SudachiPy (GiNZA's tokenizer) refuses a text over 49,149 UTF-8 bytes; a margin below it.
_SUDACHI_MAX_BYTES = 45_000

#: Hindi question words that spaCy's Hindi stop list lacks (it has कौन, किसे, कितना): grammar
#: of the question, like English "what", "where" and "when", which are stop words there.
HINDI_QUESTION_WORDS = (
    "क्या",
    "कहाँ",
    "कहां",
    "कब",
    "किसने",
    "किससे",
    "किसको",
    "किसका",
    "किसकी",
    "किसके",
    "कैसे",
    "कैसा",
    "कैसी",
    "क्यों",
    "कितने",
    "कितनी",
    "कौनसी",
    "कौनसे",
)

#: Hindi pronoun forms that spaCy's Hindi stop list lacks (it has मैं, मेरा, आप, ...): the
#: ergative (मैंने), oblique (मुझे, हमें) and possessive (मेरी, हमारे) forms of the same
#: pronouns, which say as little.
HINDI_PRONOUN_FORMS = (
    "मैंने",
    "मुझे",
    "मेरी",
    "मेरे",
    "हम",
    "हमने",
    "हमें",
    "हमको",
    "हमारा",
    "हमारी",
    "हमारे",
    "तुम",
    "तुमने",
    "तुम्हें",
    "तुमको",
    "तुम्हारा",
    "तुम्हारी",
    "तुम्हारे",
    "आपने",
    "आपको",
    "आपका",
    "आपकी",
    "आपके",
    "उसने",
    "उसको",
    "उसका",
    "उसकी",
    "उन्होंने",
    "इसने",
    "इसको",
    "इन्होंने",
    "इनको",
    "इनकी",
    "इनके",
    "तू",
    "तूने",
    "तुझे",
    "तेरा",
    "तेरी",
    "तेरे",
)

#: Which extra installs each language's pipeline.
EXTRAS = {"ja": "ja", "zh": "zh"}
_NAMES = {"ja": "Japanese", "zh": "Chinese", "hi": "Hindi"}


@dataclass(frozen=True, slots=True)
class LanguagePipeline:
    """One language's pipeline and the rules that turn its tokens into graph nodes.

    ``style="lookup"``: the default pipeline's rules (stop words, lookup ``lemmas``, names
    kept as written). ``style="words"``: every word that is not grammar (``grammar_pos``),
    a stop word or punctuation is a token, as ``value`` gives it (a lemma or a norm).
    """

    language: str
    nlp: Language
    style: str
    lemmas: Mapping[str, str] | None = None
    grammar_pos: frozenset[str] = frozenset()
    value: Callable[[Token], str] | None = None
    entity_labels: Mapping[str, str] | None = None
    normalise: Callable[[str], str] | None = None
    char_grams: tuple[int, ...] = ()
    #: Where the character n-grams come from (see :data:`CHAR_GRAM_SCOPES`).
    gram_scope: str = DEFAULT_CHAR_GRAM_SCOPE
    #: Whether a word whose lemma is a stop word is one too (Japanese inflects them).
    stop_lemmas: bool = False
    #: The most UTF-8 bytes the pipeline takes in one piece of text (``None``: no limit but
    #: spaCy's ``max_length`` in characters); a longer text is cut into pieces.
    max_chunk_bytes: int | None = None

    @property
    def has_ner(self) -> bool:
        return "ner" in self.nlp.pipe_names


def normalise_indic(text: str) -> str:
    """Devanagari spelled one way: NFC; no zero-width joiners (they only shape the glyphs);
    no nukta (``क़`` is written ``क`` as often as not); chandrabindu as anusvara (``हैँ`` /
    ``हैं``). The same normalisation as Lucene's Hindi normaliser applies for search."""
    if "\u093c" in text or any("\u0958" <= ch <= "\u095f" or ch in "\u0929\u0931\u0934" for ch in text):
        text = unicodedata.normalize("NFD", text).replace("\u093c", "")
    text = unicodedata.normalize("NFC", text)
    return text.replace("\u200c", "").replace("\u200d", "").replace("\u0901", "\u0902")


def load_language_pipeline(
    language: str,
    *,
    char_grams: tuple[int, ...] = DEFAULT_CHAR_GRAMS,
    gram_scope: str = DEFAULT_CHAR_GRAM_SCOPE,
    lemma_table: Callable[[str], Mapping[str, str] | None],
) -> LanguagePipeline | None:
    """The pipeline of ``language``, or ``None`` (with a warning) when its package is not
    installed: the caller then uses the default pipeline."""
    import spacy

    if language == "ja":
        try:
            nlp = spacy.load("ja_ginza", exclude=list(_JA_UNUSED))
        except (OSError, ImportError) as exc:
            _warn_missing(language, exc)
            return None
        return LanguagePipeline(
            language="ja",
            nlp=nlp,
            style="words",
            grammar_pos=_JA_GRAMMAR_POS,
            value=_lemma,
            entity_labels=_ene_to_ontonotes(),
            stop_lemmas=True,
            max_chunk_bytes=_SUDACHI_MAX_BYTES,
            char_grams=char_grams,
            gram_scope=gram_scope,
        )
    if language == "zh":
        try:
            _quiet_jieba()  # before spaCy's tokenizer warms jieba up
            nlp = spacy.blank("zh", config={"nlp": {"tokenizer": {"segmenter": "jieba"}}})
        except ImportError as exc:
            _warn_missing(language, exc)
            return None
        nlp.tokenizer = _LetterRunsWhole(nlp.tokenizer)
        return LanguagePipeline(
            language="zh", nlp=nlp, style="words", value=_lower, char_grams=char_grams, gram_scope=gram_scope
        )
    if language == "hi":
        nlp = spacy.blank("hi")
        for word in (*HINDI_QUESTION_WORDS, *HINDI_PRONOUN_FORMS):  # this pipeline's vocabulary, not spaCy's list
            nlp.vocab[normalise_indic(word)].is_stop = True
        return LanguagePipeline(language="hi", nlp=nlp, style="words", value=_hindi_stem, normalise=normalise_indic)
    lemmas = lemma_table(language)
    if lemmas is not None and language in _HEADWORDS_KEPT:
        lemmas = HeadwordLemmas(lemmas)
    elif lemmas is not None and language == "de":
        lemmas = CapitalisedNounLemmas(lemmas)
    elif lemmas is not None:
        lemmas = LemmaTable(lemmas)
    return LanguagePipeline(language=language, nlp=spacy.blank(language), style="lookup", lemmas=lemmas)


class LemmaTable(Mapping[str, str]):
    """A language's lemma lookup table, and the set of its headwords (its lemmas, lowercase):
    with the forms, the words the table knows (what the typo rule must never change)."""

    def __init__(self, table: Mapping[str, str]) -> None:
        self._table = table

    def __getitem__(self, form: str) -> str:
        return self._table[form]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    @functools.cached_property
    def headwords(self) -> frozenset[str]:
        return frozenset(lemma.lower() for lemma in self._table.values())

    def knows(self, word: str) -> bool:
        """Whether ``word`` (lowercase) is a form or a headword of the table."""
        return word in self or word in self.headwords


class CapitalisedNounLemmas(LemmaTable):
    """German's lemma table, read by lowercase form. Its nouns are keyed as German writes
    them, capitalised ("Hunde" -> "Hund", "Kindern" -> "Kind"), and a token's form is
    lowercase: a form is looked up as it is, then capitalised, and its lemma is lowercase."""

    def __getitem__(self, form: str) -> str:
        lemma = self._table.get(form)
        if lemma is None:
            lemma = self._table[form[:1].upper() + form[1:]]
        return lemma.lower()

    @functools.cached_property
    def nouns(self) -> frozenset[str]:
        """The headwords the table writes capitalised (its nouns), lowercase."""
        return frozenset(lemma.lower() for lemma in self._table.values() if lemma[:1].isupper())

    def noun_lemma(self, form: str) -> str | None:
        """The lemma of a word written capitalised, read as the noun German capitalises:
        its capitalised form's ("Gärten" -> "garten"), or itself when it is a noun ("Garten",
        which the lowercase key read as a form of "garen"); ``None`` when it is no noun
        ("Sie", whose key reads "ich")."""
        lemma = self._table.get(form[:1].upper() + form[1:])
        if lemma is not None and lemma[:1].isupper():
            return lemma.lower()
        return form if form in self.nouns else None


#: Languages whose lookup table reads a headword as another word's form: spaCy's tables
#: have no part of speech, and for a noun that is also a verb form they give the verb
#: ("libro" -> "librar", "gato" -> "gatar", "sogno" -> "sognare") while the plural gives the
#: noun ("libros" -> "libro"), so the two shared no token. 2,567 Spanish, 4,393 Portuguese and
#: 3,020 Italian headwords are read so; French 41. German's table lists participles as
#: headwords (22,810), so the rule would undo its lemmas: not there.
_HEADWORDS_KEPT = frozenset({"es", "pt", "it"})


class HeadwordLemmas(LemmaTable):
    """A lemma table in which a form that is itself a headword of the table stays itself
    ("libro", like "libros", is "libro"), and keeps the table's reading of it as a second
    token (:meth:`second_reading`: "librar"), so that what the plain table matched still
    matches ("buceo", diving, still finds "buceando", diving)."""

    def __getitem__(self, form: str) -> str:
        return form if form in self.headwords else self._table[form]

    def second_reading(self, headword: str) -> str | None:
        """The table's lemma of a headword when it reads it as another word's form."""
        if headword not in self.headwords:
            return None
        lemma = self._table.get(headword)
        return lemma if lemma is not None and lemma != headword else None


def _is_letter_run(text: str) -> bool:
    """Letters (and their combining marks) of a script written with spaces: not Han, kana
    or Hangul, not digits."""
    return bool(text) and all(
        (ch.isalpha() or unicodedata.category(ch).startswith("M")) and NO_SPACE_CHAR.match(ch) is None for ch in text
    )


class _LetterRunsWhole:
    """spaCy's Chinese tokenizer, with each word of another script kept whole.

    jieba keeps ASCII letters together but cuts every other letter apart: "José" came out
    as ``jos`` + ``é``, "Zoë" as ``zo`` + ``ë``, "мир" as three letters, so a name with an
    accent (or a word in Cyrillic or Devanagari) in a Chinese text matched nothing. Tokens
    that are letters of such scripts, with no space between them, are merged back."""

    def __init__(self, tokenizer: Callable[[str], Doc]) -> None:
        self.tokenizer = tokenizer

    def __call__(self, text: str) -> Doc:
        doc = self.tokenizer(text)
        runs: list[tuple[int, int]] = []
        start: int | None = None
        for i, token in enumerate(doc):
            letters = _is_letter_run(token.text)
            if letters and start is not None and not doc[i - 1].whitespace_:
                continue  # the run goes on
            if start is not None and i - start > 1:
                runs.append((start, i))
            start = i if letters else None
        if start is not None and len(doc) - start > 1:
            runs.append((start, len(doc)))
        if runs:
            with doc.retokenize() as retokenizer:
                for begin, end in runs:
                    retokenizer.merge(doc[begin:end])
        return doc


def _warn_missing(language: str, exc: Exception) -> None:
    logger.warning(
        "graphmem: the %s pipeline is not installed (%s); %s text is decomposed by the default "
        "pipeline instead (character unigrams and bigrams, no entities). Install it with: "
        "pip install 'graphmem[%s]'",
        _NAMES.get(language, language),
        str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
        _NAMES.get(language, language),
        EXTRAS.get(language, "multilingual"),
    )


def _quiet_jieba() -> None:
    import jieba

    # jieba logs "Building prefix dict..." on stderr at DEBUG level on its first cut.
    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()


def _ene_to_ontonotes() -> Mapping[str, str]:
    try:
        from ginza.ene_ontonotes_mapper import ENE_ONTONOTES_MAPPING
    except ImportError:
        return {}
    return dict(ENE_ONTONOTES_MAPPING)


def _lemma(token: Token) -> str:
    return str(token.lemma_ or token.text).lower()


def _lower(token: Token) -> str:
    return str(token.lower_)


def _norm(token: Token) -> str:
    return str(token.norm_ or token.lower_)


def _hindi_stem(token: Token) -> str:
    """spaCy's Hindi norm (a suffix stemmer), unless it leaves fewer than two letters:
    ``मां`` ("mother") -> ``म`` would match every word stemmed to that consonant."""
    stem = str(token.norm_ or token.lower_)
    return stem if sum(1 for ch in stem if ch.isalpha()) >= 2 else str(token.lower_)
