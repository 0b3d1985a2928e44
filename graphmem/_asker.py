"""Who "I" is in a question put to the assistant: the person whose memory it is.

An agent searches its memory with what its user types ("what's my dog's name?", "where did
I say I'd go in May?"), and every entry point stores what that person says under the
author ``user``: :class:`~graphmem.MemoryEntry`'s default author, Google ADK's author of
the user's own messages, the MCP server's ``remember``. A question in the first person
asks about what that author said, as "What is Kate's dog's name?" asks about Kate's turns
(speaker focus, rule 4 of :mod:`graphmem._scoring`): the assistant's replies repeat the
user's words ("a shelter dog! which breed did you adopt?"), and without the focus they
compete with the user's own turn on equal terms. So a search reads a first-person word as
naming the author ``user`` (:data:`ASKER`), when:

- the user's entries have that author and another one (in notes of one author, everything
  is the user's already; a store of people's chats, authors Kate and Ben, reads "I" as
  before);
- the question names no speaker as written ("what did Kate tell me?" asks about Kate).

An app may store its user under their name instead ("Bob", with the role ``"user"``) and
the assistant with another role (``"model"``): then the first person names the authors
who speak as the user, when some other author does not (:func:`asking_speakers`; people's
chats stored with every author in the role ``"user"`` read "I" as before).

Unlike a name written in the question, the first person alone recalls nothing: an entry
that holds no other word of the question matches nothing asked ("what did I eat?" does not
recall every message the user typed). Only the singular: "we" and "our" are the user and
someone else. The words are read in the language the query is decomposed in
(:func:`first_person_words`).
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet

__all__ = ["ASKER", "asking_speakers", "first_person_words"]

#: The author whose entries a question in the first person asks about (a speaker token:
#: lowercase, as :func:`~graphmem._decompose.speaker_tokens` gives it).
ASKER = "user"

#: First-person singular words (subject, object, possessive, reflexive) per language code.
_SPACED = {
    "en": r"i|me|my|mine|myself",
    "es": r"yo|me|mi|mis|m[íi]os?|m[íi]as?|conmigo",
    "fr": r"je|moi|me|mon|ma|mes",
    "de": r"ich|mich|mir|mein(?:e[mnrs]?)?",
    "it": r"io|mi|me|mio|mia|miei|mie",
    "pt": r"eu|me|mim|meus?|minhas?|comigo",
    "hi": r"मैंने|मैं|मेरा|मेरी|मेरे|मुझसे|मुझको|मुझे|मुझ",
}
_UNSPACED = {
    "zh": r"我(?!们|們)",  # 我们: "we"
    "ja": r"私|僕|俺|わたし|あたし|ぼく",
}
# A word of its own: not inside another word (Devanagari's vowel signs are no \w).
_PATTERNS = {
    **{
        code: re.compile(rf"(?<![\w\u0900-\u097f])(?:{words})(?![\w\u0900-\u097f])", re.IGNORECASE)
        for code, words in _SPACED.items()
    },
    **{code: re.compile(words) for code, words in _UNSPACED.items()},
}
# French elides "je" and "me" before a vowel: "j'ai", "il m'a dit".
_PATTERNS["fr"] = re.compile(rf"{_PATTERNS['fr'].pattern}|(?<!\w)[jm]['’](?=\w)", re.IGNORECASE)


def first_person_words(text: str, language: str | None) -> list[str]:
    """The first-person singular words of ``text`` as written ("I", "my", "mi", "我"), in
    ``language`` (a query's decomposition language; ``None`` reads English), in order."""
    pattern = _PATTERNS.get(language or "en")
    if pattern is None:
        return []
    return [m.group(0) for m in pattern.finditer(text)]


def asking_speakers(speakers: AbstractSet[str], as_user: AbstractSet[str]) -> tuple[str, ...]:
    """The speaker words a question in the first person asks about, given the owner's
    speaker words (``Token.speaker``) and those of them naming an author who speaks as the
    user (``Token.user_speaker``), sorted; empty when "I" is no one in particular.

    - The author :data:`ASKER` when the entries have it and another author (what graphmem's
      entry points store).
    - Else the authors speaking as the user, when some other author does not: an app that
      stores its user under their name ("Bob", role ``"user"``) and the assistant with
      another role (``"model"``). Several people speaking as the user (a group chat with an
      assistant) are read together.
    - Else none: notes of one author, or people's chats where every author speaks as the
      user (the person asking is not told apart from the others).
    """
    if ASKER in speakers and len(speakers) > 1:
        return (ASKER,)
    if as_user and not speakers <= as_user:
        return tuple(sorted(as_user))
    return ()
