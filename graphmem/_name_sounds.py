"""How a name sounds, whatever script it is written in: a speaker named in Latin letters and
asked about in Han, katakana or Devanagari.

A conversation translated into Chinese, or kept by an app that stores its users' names as
they signed up, has entries by "Caroline" and questions asking "卡罗琳研究了什么？". No
letter is shared, so the question names no speaker, and its name only matches the turns
that address her (the other speaker's). Transliteration keeps a name's consonants in
order and changes little else: 卡罗琳 is *ka luo lin*, キャロライン *kya ro ra i n*,
कैरोलिन *kai ro li n*, Caroline *c-r-l-n*. So a name is compared by its **sound key**: its
consonants in order, each reduced to a class that transliterations keep apart, vowels,
*h*, *w* and *y* dropped.

=====  ==============================================================================
class  letters (Latin spelling; pinyin initials; kana and Devanagari through their romaji)
=====  ==============================================================================
P      b, p
T      d, t (and *th*, or S)
K      k, q, hard c and g, *ck*, *kh*
S      s, z, j, soft c and g, *sh*, *ch* (or K); pinyin j, q, x, z, c, s, zh, ch, sh
F      f, *ph*, v (or P: オリバー *oribaa*; or nothing: 维 *wei*)
L      l, r (r before no vowel may be dropped: Jennifer / 詹妮弗 *zhan ni fu*)
M, N   m; n, *ng* (a pinyin syllable's final nasal may be dropped: 梅兰妮 *mei lan ni*)
=====  ==============================================================================

A spelling can sound several ways (*g* before *e* or *i*, *th*, *ch*, *v*, a final *r* or
nasal), so each name has a small set of keys; two names sound alike when their sets
share one. What never links: a key of fewer than :data:`MIN_KEY_SOUNDS` classes (a name
such as "Li" or "Ana" has too few sounds to tell), and anything not written wholly in
one script. Han is read through pypinyin (the ``zh`` extra): without it, Han names are
not compared. Which spans of a question are read as names, and how a speaker is chosen
among those a span sounds like: :func:`cross_script_names`.
"""

from __future__ import annotations

import functools
import itertools
import threading
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphmem._decompose import _edit_distance
from graphmem._spelling import han_name_places, has_kana, spaced_name_words

__all__ = [
    "MAX_QUESTION",
    "CrossScriptName",
    "cross_script_names",
    "devanagari_sound_keys",
    "han_sound_keys",
    "kana_sound_keys",
    "latin_sound_keys",
]

#: A key of fewer sound classes tells too little ("Li", "Ana", "Al" have one).
MIN_KEY_SOUNDS = 2
#: At most this many keys per name (each ambiguous letter doubles them).
MAX_KEYS = 64

_VOWELS = frozenset("aeiouy")
# A slot is the alternatives one sound may take ("" = dropped).
_Slot = tuple[str, ...]


def _keys(slots: Sequence[_Slot]) -> frozenset[str]:
    """Every key the slots spell (each slot one of its alternatives), of at least
    :data:`MIN_KEY_SOUNDS` classes; none when the alternatives would be too many."""
    count = 1
    for slot in slots:
        count *= len(slot)
    if count > MAX_KEYS:
        return frozenset()
    return frozenset(key for choice in itertools.product(*slots) if len(key := "".join(choice)) >= MIN_KEY_SOUNDS)


def _latin_letters(word: str) -> str:
    """``word`` lowercase, accents dropped, letters a-z only, a doubled letter once."""
    bare = "".join(ch for ch in unicodedata.normalize("NFKD", word.lower()) if "a" <= ch <= "z")
    return "".join(ch for i, ch in enumerate(bare) if i == 0 or bare[i - 1] != ch)


#: Two letters that spell one sound, and its classes.
_DIGRAPHS: dict[str, _Slot] = {
    "ph": ("F",),
    "th": ("T", "S"),
    "sh": ("S",),
    "ch": ("S", "K"),
    "ck": ("K",),
    "kh": ("K",),
    "gh": ("K", ""),
    "bh": ("P",),
    "dh": ("T",),
    "qu": ("K",),
    "ts": ("S",),
}
_LETTERS: dict[str, _Slot] = {
    "b": ("P",),
    "p": ("P",),
    "d": ("T",),
    "t": ("T",),
    "k": ("K",),
    "q": ("K",),
    "j": ("S",),
    "s": ("S",),
    "z": ("S",),
    "f": ("F",),
    "v": ("F", "P", ""),  # 奥利弗 -fu, オリバー -ba, 维 wei
    "l": ("L",),
    "m": ("M",),
    "n": ("N",),
}


def _latin_slots(letters: str) -> list[_Slot]:
    slots: list[_Slot] = []
    i = 0
    while i < len(letters):
        ch = letters[i]
        after = letters[i + 1] if i + 1 < len(letters) else ""
        if ch + after in _DIGRAPHS:
            slots.append(_DIGRAPHS[ch + after])
            i += 2
            continue
        if ch in _VOWELS or ch in "hw":
            pass
        elif ch == "c":
            slots.append(("S",) if after in ("e", "i", "y") else ("K",))
        elif ch == "g":
            slots.append(("S", "K") if after in ("e", "i", "y") else ("K",))
        elif ch == "x":
            slots.extend((("K",), ("S",)))
        elif ch == "r":
            # Before no vowel (Mark, Jennifer) many transliterations drop it.
            slots.append(("L",) if after in _VOWELS else ("L", ""))
        elif ch in _LETTERS:
            slots.append(_LETTERS[ch])
        i += 1
    return slots


@functools.lru_cache(maxsize=4096)
def latin_sound_keys(word: str) -> frozenset[str]:
    """The sound keys of a name written in Latin letters ("Caroline": ``KLLN``)."""
    return _keys(_latin_slots(_latin_letters(word)))


# ---------------------------------------------------------------------------- Han (pinyin)

_PINYIN_INITIALS: tuple[tuple[str, str], ...] = (
    ("zh", "S"),
    ("ch", "S"),
    ("sh", "S"),
    *((c, "P") for c in "bp"),
    *((c, "T") for c in "dt"),
    *((c, "K") for c in "gk"),
    *((c, "S") for c in "jqxzcs"),
    ("f", "F"),
    *((c, "L") for c in "lr"),
    ("m", "M"),
    ("n", "N"),
    *((c, "") for c in "hyw"),
)


def _pinyin_slots(syllables: Sequence[str]) -> list[_Slot] | None:
    slots: list[_Slot] = []
    for syllable in syllables:
        if not syllable.isascii() or not syllable.isalpha():
            return None  # a character pypinyin does not know
        if syllable == "er":  # 尔: a final r or l (Carl / 卡尔)
            slots.append(("L",))
            continue
        rest = syllable
        for initial, sound in _PINYIN_INITIALS:
            if syllable.startswith(initial):
                if sound:
                    slots.append((sound,))
                rest = syllable[len(initial) :]
                break
        if rest.endswith(("n", "ng")) and rest not in ("n", "ng"):
            slots.append(("N", ""))  # 兰 lan before 妮 ni: one n, or a vowel's nasal
    return slots


@functools.lru_cache(maxsize=4096)
def _pinyin(name: str) -> tuple[str, ...]:
    try:
        from pypinyin import Style, lazy_pinyin
    except ImportError:
        return ()
    return tuple(lazy_pinyin(name, style=Style.NORMAL, errors="replace"))


@functools.lru_cache(maxsize=4096)
def han_sound_keys(name: str) -> frozenset[str]:
    """The sound keys of a name written in Han characters, read in Mandarin through
    pypinyin (卡罗琳 *ka luo lin*: ``KLLN``); none when pypinyin is not installed."""
    syllables = _pinyin(name)
    slots = _pinyin_slots(syllables) if syllables else None
    return _keys(slots) if slots is not None else frozenset()


# ---------------------------------------------------------------------------- katakana

#: Katakana -> Hepburn romaji. Small ャュョ follow a consonant (キャ kya); ッ doubles the next
#: consonant, which the letters make once anyway; ー lengthens a vowel: both spell nothing.
_KANA: dict[str, str] = {
    **dict(zip("アイウエオ", ("a", "i", "u", "e", "o"), strict=True)),
    **dict(zip("カキクケコ", ("ka", "ki", "ku", "ke", "ko"), strict=True)),
    **dict(zip("ガギグゲゴ", ("ga", "gi", "gu", "ge", "go"), strict=True)),
    **dict(zip("サシスセソ", ("sa", "shi", "su", "se", "so"), strict=True)),
    **dict(zip("ザジズゼゾ", ("za", "ji", "zu", "ze", "zo"), strict=True)),
    **dict(zip("タチツテト", ("ta", "chi", "su", "te", "to"), strict=True)),
    **dict(zip("ダヂヅデド", ("da", "ji", "zu", "de", "do"), strict=True)),
    **dict(zip("ナニヌネノ", ("na", "ni", "nu", "ne", "no"), strict=True)),
    **dict(zip("ハヒフヘホ", ("ha", "hi", "fu", "he", "ho"), strict=True)),
    **dict(zip("バビブベボ", ("ba", "bi", "bu", "be", "bo"), strict=True)),
    **dict(zip("パピプペポ", ("pa", "pi", "pu", "pe", "po"), strict=True)),
    **dict(zip("マミムメモ", ("ma", "mi", "mu", "me", "mo"), strict=True)),
    **dict(zip("ヤユヨ", ("ya", "yu", "yo"), strict=True)),
    **dict(zip("ラリルレロ", ("ra", "ri", "ru", "re", "ro"), strict=True)),
    **dict(zip("ワヰヱヲ", ("wa", "i", "e", "o"), strict=True)),
    **dict(zip("ァィゥェォャュョヮ", ("a", "i", "u", "e", "o", "ya", "yu", "yo", "wa"), strict=True)),
    "ン": "n",
    "ヴ": "vu",
    "ッ": "",
    "ー": "",
}


@functools.lru_cache(maxsize=4096)
def kana_sound_keys(name: str) -> frozenset[str]:
    """The sound keys of a name written in katakana (キャロライン *kyarorain*: ``KLLN``);
    none when a character is no katakana letter."""
    romaji = _hepburn(name)
    return _keys(_latin_slots(_latin_letters(romaji))) if romaji else frozenset()


# ---------------------------------------------------------------------------- Devanagari

#: Devanagari consonants -> their usual Latin spelling; nukta forms first, as NFC keeps
#: them apart from their base.
_DEVANAGARI: dict[str, str] = {
    "क़": "q", "ख़": "kh", "ग़": "g", "ज़": "z", "ड़": "r", "ढ़": "rh", "फ़": "f",
    "क": "k", "ख": "kh", "ग": "g", "घ": "gh", "ङ": "n",
    "च": "ch", "छ": "chh", "ज": "j", "झ": "jh", "ञ": "n",
    "ट": "t", "ठ": "th", "ड": "d", "ढ": "dh", "ण": "n",
    "त": "t", "थ": "th", "द": "d", "ध": "dh", "न": "n",
    "प": "p", "फ": "ph", "ब": "b", "भ": "bh", "म": "m",
    "य": "y", "र": "r", "ल": "l", "व": "v", "श": "sh", "ष": "sh", "स": "s", "ह": "h",
}  # fmt: skip
#: Vowels, independent and as signs after a consonant (which then loses its inherent "a").
_DEVANAGARI_VOWELS: dict[str, str] = {
    "अ": "a", "आ": "a", "इ": "i", "ई": "i", "उ": "u", "ऊ": "u", "ऋ": "ri", "ए": "e", "ऐ": "ai",
    "ओ": "o", "औ": "au", "ऍ": "e", "ऑ": "o",
    "ा": "a", "ि": "i", "ी": "i", "ु": "u", "ू": "u", "ृ": "ri", "े": "e", "ै": "ai", "ो": "o",
    "ौ": "au", "ॅ": "e", "ॉ": "o",
}  # fmt: skip
#: Signs after a consonant or vowel: virama (no vowel), anusvara, chandrabindu, visarga.
_DEVANAGARI_SIGNS = {"्": "", "ं": "n", "ँ": "", "ः": "h"}


@functools.lru_cache(maxsize=4096)
def devanagari_sound_keys(name: str) -> frozenset[str]:
    """The sound keys of a name written in Devanagari (प्रिया *priya*: ``PL``); none when
    a character is no Devanagari letter or sign."""
    letters = _devanagari_letters(name)
    return _keys(_latin_slots(letters)) if letters else frozenset()


def _devanagari_letters(name: str) -> str | None:
    """A Devanagari word in Latin letters as Hindi names are written (प्रिया *priya*, राहुल
    *rahul*): a consonant's inherent "a" where no vowel sign or virama follows, except at
    the word's end; ``None`` when a character is no Devanagari letter or sign."""
    chars = unicodedata.normalize("NFC", name)
    out: list[str] = []
    i = 0
    while i < len(chars):
        pair = chars[i : i + 2]
        consonant = _DEVANAGARI.get(pair) if pair in _DEVANAGARI else _DEVANAGARI.get(chars[i])
        step = 2 if pair in _DEVANAGARI else 1
        if consonant is not None:
            after = chars[i + step] if i + step < len(chars) else ""
            vowel = "" if after in _DEVANAGARI_VOWELS or after == "्" or not after else "a"
            out.append(consonant + vowel)
        elif chars[i] in _DEVANAGARI_VOWELS:
            out.append(_DEVANAGARI_VOWELS[chars[i]])
        elif chars[i] in _DEVANAGARI_SIGNS:
            out.append(_DEVANAGARI_SIGNS[chars[i]])
        else:
            return None
        i += step
    return "".join(out)


# ---------------------------------------------------------------------------- names in a question

#: A Han name is looked for in at most this many characters from where it starts.
MAX_HAN_NAME = 5
#: Shorter Latin names are not compared by sound (too few letters to tell from chance).
MIN_LATIN_NAME = 3
#: Longer texts are not read for names: a question is short, and the taggers' cost grows
#: with the text (Sudachi refuses texts over ~49 kB).
MAX_QUESTION = 500
#: A Han character takes part in a transliterated name when at least this many of jieba's
#: transliterated names (tag ``nrt``) hold it (卡, 罗, 琳, 詹, 丹, ...; not 总, 说, 杯, 张).
MIN_TRANSLITERATIONS = 2


@dataclass(frozen=True, slots=True)
class CrossScriptName:
    """A span of a question (``text[start:end]``) that writes a speaker's name in another
    script, and the speaker's words it writes, space-separated (``"caroline"``, ``"li na"``)."""

    start: int
    end: int
    span: str
    words: str


def cross_script_names(text: str, speakers: Iterable[str]) -> list[CrossScriptName]:
    """Where a question ``text`` writes the name of one of ``speakers`` (words of speakers'
    names, lowercase) in another script: 卡罗琳 or キャロライン for "caroline", 李娜 for
    "li na", 健太 for "kenta"; in order, never overlapping.

    Only speakers written in Latin letters (accents and apostrophes aside: "chloé",
    "o'brien") are read, only in a text of at most :data:`MAX_QUESTION` characters, and
    only spans a tagger marks as a person's name: in Japanese, the words Sudachi's
    dictionary tags so (姓, 名; kanji or katakana), read as their reading; in Chinese, from
    where jieba's tagger starts one (``nr``, ``nrt``, ``nrfg``; extra ``zh``), up to
    :data:`MAX_HAN_NAME` characters, in the groups
    :func:`graphmem._spelling.han_name_places` gives; in Devanagari (no tagger), each
    word that is no Hindi stop word.

    *Spelled exactly*: a Chinese name's pinyin syllables (two or more), each a speaker's
    word (李娜 *li na*: "Li Na"); a Japanese name's Hepburn reading, long vowels written
    once (陽子 *yōko*: "Yoko"). *By sound* (:func:`latin_sound_keys`), for a speaker's
    word of :data:`MIN_LATIN_NAME` letters or more: a Japanese name by its reading; a
    Chinese span whose every character is one transliterations use
    (:data:`MIN_TRANSLITERATIONS`); a Devanagari word whose letters are also within a
    typo of the name's (none up to four letters, one up to six, two above: परिवार
    *parivar*, "family", is no Priya). Of a place's first group holding a span that sounds
    like a speaker, the span and speaker whose sounds are closest (:func:`_closest`),
    the shorter span on a tie; a span that sounds equally like two speakers links to
    neither."""
    if len(text) > MAX_QUESTION:
        return []
    by_letters: dict[str, str] = {}
    for word in set(speakers):
        if _is_latin_word(word) and (letters := _latin_letters(word)):
            by_letters.setdefault(letters, word)
    if not by_letters:
        return []
    sounds = {
        word: keys
        for letters, word in by_letters.items()
        if len(letters) >= MIN_LATIN_NAME and (keys := latin_sound_keys(word))
    }
    found: list[CrossScriptName] = []
    taken = 0  # where the last name found ends: places are in order
    for start, place in _spoken_places(text):
        if start < taken:
            continue
        name = _spelled(place, by_letters) or _sounding(place, sounds)
        if name is not None:
            spoken, words = name
            taken = start + len(spoken.span)
            found.append(CrossScriptName(start, taken, spoken.span, words))
    return found


def _is_latin_word(word: str) -> bool:
    """Whether ``word`` is written in Latin letters (accents, apostrophes, hyphens aside)."""
    letters = [ch for ch in unicodedata.normalize("NFKD", word) if ch.isalpha()]
    return bool(letters) and all(ch.isascii() for ch in letters)


@dataclass(frozen=True, slots=True)
class _Spoken:
    """A span of a question that may write a name, and how it sounds."""

    span: str
    #: its romanisation, in Latin letters (doubled letters once)
    letters: str
    #: the words it spells when read exactly (pinyin syllables; a Japanese reading as one;
    #: none for Devanagari, whose spelling in Latin letters varies)
    syllables: tuple[str, ...]
    #: how many of them make a name spelled exactly (one pinyin syllable is no name)
    min_syllables: int
    keys: frozenset[str]
    #: whether it may link by sound (a Han span: only of transliterations' characters)
    sounds: bool = True
    #: at most this many edits between its letters and a name it sounds like (None: any)
    max_edits: int | None = None


def _spelled(place: Sequence[Sequence[_Spoken]], by_letters: Mapping[str, str]) -> tuple[_Spoken, str] | None:
    """The shortest span of ``place`` whose syllables are all speakers' words, and them."""
    spelled = [
        spoken
        for group in place
        for spoken in group
        if len(spoken.syllables) >= spoken.min_syllables
        and all(_latin_letters(s) in by_letters for s in spoken.syllables)
    ]
    if not spelled:
        return None
    exact = min(spelled, key=lambda spoken: len(spoken.span))
    return exact, " ".join(dict.fromkeys(by_letters[_latin_letters(s)] for s in exact.syllables))


def _sounding(place: Sequence[Sequence[_Spoken]], sounds: Mapping[str, frozenset[str]]) -> tuple[_Spoken, str] | None:
    """A span of ``place`` that sounds like a speaker's name, and that name: of the first
    group of spans holding one (see :func:`graphmem._spelling.han_name_places`), the
    span and name whose sounds are closest (:func:`_closest`), the shorter span on a tie
    (迈克尔 for Michael, not 迈克 for Mark; 凯瑟琳, not 凯瑟琳和)."""
    for group in place:
        best: tuple[int, int, _Spoken, str] | None = None
        for spoken in group:
            if not spoken.sounds:
                continue
            alike = [word for word, word_keys in sounds.items() if not spoken.keys.isdisjoint(word_keys)]
            if not alike or (closest := _closest(spoken.letters, alike)) is None:
                continue
            word, heard, typed = closest
            if spoken.max_edits is not None and typed > spoken.max_edits:
                continue
            if best is None or (heard, len(spoken.span)) < best[:2]:
                best = (heard, len(spoken.span), spoken, word)
        if best is not None:
            _, _, spoken, word = best
            return spoken, word
    return None


def _spoken_places(text: str) -> list[tuple[int, list[list[_Spoken]]]]:
    """The places of ``text`` that may write a name, in order, each as the spans starting
    there, in groups to try in turn (see :func:`cross_script_names`)."""
    places: list[tuple[int, list[list[_Spoken]]]] = []
    if has_kana(text):
        for start, span, reading in _japanese_names(text):
            romaji = _hepburn(reading)
            if romaji:
                keys = kana_sound_keys(reading)
                places.append((start, [[_Spoken(span, _latin_letters(romaji), (romaji,), 1, keys)]]))
    else:
        alphabet = _transliteration_alphabet()
        for start, groups in han_name_places(text, max_han=MAX_HAN_NAME):
            places.append((start, [[_han_spoken(span, alphabet) for span in group] for group in groups]))
    for start, span in spaced_name_words(text):
        letters = _latin_letters(_devanagari_letters(span) or "")
        if letters:
            keys = devanagari_sound_keys(span)
            places.append((start, [[_Spoken(span, letters, (), 1, keys, max_edits=_devanagari_edits(letters))]]))
    return sorted(places, key=lambda place: place[0])


def _devanagari_edits(letters: str) -> int:
    """How many edits a Devanagari word's letters may be from a name it sounds like: none up
    to four letters, one up to six, two above. Stricter than a typo in a Latin query
    (:func:`graphmem._spelling.max_edits`): Hindi has no tagger to say a word is a name,
    and its short words sound like short names (साल, "year", is one edit from Sally)."""
    return 0 if len(letters) <= 4 else 1 if len(letters) <= 6 else 2


def _han_spoken(span: str, alphabet: frozenset[str]) -> _Spoken:
    syllables = _pinyin(span)
    keys = han_sound_keys(span)
    return _Spoken(span, _latin_letters("".join(syllables)), syllables, 2, keys, sounds=alphabet.issuperset(span))


@functools.cache
def _transliteration_alphabet() -> frozenset[str]:
    """The Han characters of transliterated names (see :data:`MIN_TRANSLITERATIONS`), from
    jieba's dictionary; empty without jieba."""
    try:
        import jieba
    except ImportError:
        return frozenset()
    from collections import Counter
    from pathlib import Path

    counts: Counter[str] = Counter()
    with (Path(jieba.__file__).parent / "dict.txt").open(encoding="utf-8") as lines:
        for line in lines:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "nrt":
                counts.update(set(parts[0]))
    return frozenset(ch for ch, n in counts.items() if n >= MIN_TRANSLITERATIONS)


#: Letters as they sound, vowels kept, for telling apart names whose consonants sound
#: alike: l/r, the hissing sounds, b/p, d/t, k/g, f/v; e and i, o and u; h, w dropped.
_SOUNDING = (
    ("ph", "f"), ("th", "t"), ("sh", "s"), ("ch", "s"), ("ck", "k"), ("qu", "k"), ("kh", "k"), ("zh", "s"),
    ("ts", "s"), ("ce", "se"), ("ci", "si"), ("cy", "si"), ("ge", "se"), ("gi", "si"),
)  # fmt: skip
_SOUNDING_LETTERS = str.maketrans(
    {"r": "l", "c": "k", "q": "s", "g": "k", "j": "s", "z": "s", "x": "s", "b": "p", "d": "t", "v": "f",
     "y": "i", "e": "i", "o": "u", "h": None, "w": None}
)  # fmt: skip


def _sound_letters(letters: str) -> str:
    """``letters`` (lowercase a-z) as :data:`_SOUNDING` hears them, a repeated sound once."""
    for pair, sound in _SOUNDING:
        letters = letters.replace(pair, sound)
    sounded = letters.translate(_SOUNDING_LETTERS)
    return "".join(ch for i, ch in enumerate(sounded) if i == 0 or sounded[i - 1] != ch)


def _closest(romanized: str, words: Sequence[str]) -> tuple[str, int, int] | None:
    """The one word of ``words`` (speakers whose names sound like a span) whose sounds
    (:func:`_sound_letters`: vowels too) are fewest edits from the span's ``romanized``
    letters' (吉娜 *jina*: "gina", not "jon"; ルーシー *rushii*: "lucy", not "hiroshi"), then
    whose letters as written are (a typo's edits, also a limit); those two distances;
    ``None`` on a tie."""
    heard = _sound_letters(romanized)
    distances = {
        word: (
            _edit_distance(heard, _sound_letters(_latin_letters(word)), limit=99),
            _edit_distance(romanized, _latin_letters(word), limit=len(romanized) + len(word)),
        )
        for word in words
    }
    best = min(distances.values())
    closest = [word for word, distance in distances.items() if distance == best]
    return (closest[0], *best) if len(closest) == 1 else None


# ---------------------------------------------------------------------------- Japanese names

_SMALL_Y = {"ャ": "ya", "ュ": "yu", "ョ": "yo"}
#: Long vowels as Hepburn without macrons writes names: ヨウコ Yoko, ユウキ Yuki, オオノ Ono.
_LONG_VOWELS = (("ou", "o"), ("oo", "o"), ("uu", "u"))


def _hepburn(reading: str) -> str | None:
    """A katakana reading in Hepburn as names are written in Latin letters: キャ *kya*, シャ
    *sha*, long vowels once (ヨウコ *yoko*), ッ doubling the next consonant, ン *n*."""
    reading = unicodedata.normalize("NFKC", reading)
    out: list[str] = []
    double = False
    for ch in reading:
        if ch == "ッ":
            double = True
            continue
        if ch in _SMALL_Y and out and out[-1].endswith("i") and len(out[-1]) >= 2:
            stem = out.pop()[:-1]  # キ + ャ: kya; シ + ャ: sha; チ + ャ: cha; ジ + ャ: ja
            syllable = stem + (_SMALL_Y[ch][1:] if stem.endswith(("sh", "ch", "j")) else _SMALL_Y[ch])
        elif ch in _KANA:
            syllable = _KANA[ch] if ch != "ツ" else "tsu"
        else:
            return None
        if double and syllable:
            syllable = syllable[0] + syllable
            double = False
        out.append(syllable)
    romaji = "".join(out)
    for long, short in _LONG_VOWELS:
        romaji = romaji.replace(long, short)
    return romaji or None


def _japanese_names(text: str) -> list[tuple[int, str, str]]:
    """The words of a Japanese ``text`` that Sudachi's dictionary tags as a person's name,
    with where they start and their readings (健太: ケンタ); none without Sudachi (the
    ``ja`` extra)."""
    tokenizer = _sudachi()
    if tokenizer is None:
        return []
    from sudachipy import SplitMode

    return [
        (m.begin(), m.surface(), m.reading_form())
        for m in tokenizer.tokenize(text, SplitMode.C)
        if m.part_of_speech()[1:3] == ("固有名詞", "人名")
    ]


_THREAD = threading.local()


def _sudachi() -> Any:
    """A Sudachi tokenizer of this thread (one is not safe to share between threads: a
    service may be searched from several event loops); ``None`` without Sudachi."""
    if not hasattr(_THREAD, "sudachi"):
        _THREAD.sudachi = _dictionary().create() if _dictionary() is not None else None
    return _THREAD.sudachi


@functools.cache
def _dictionary() -> Any:
    try:
        from sudachipy import Dictionary
    except ImportError:
        return None
    try:
        return Dictionary()
    except Exception:  # no dictionary installed
        return None
