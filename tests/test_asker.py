"""The first-person words a question put to the assistant is read by (graphmem._asker)."""

from __future__ import annotations

import pytest

from graphmem._asker import asking_speakers, first_person_words


@pytest.mark.parametrize(
    ("text", "language", "words"),
    [
        ("What is my dog's name?", "en", ["my"]),
        ("what did i say about the trip", "en", ["i"]),
        ("I'm sure I told you", "en", ["I", "I"]),
        ("Is the blue one mine?", "en", ["mine"]),
        ("Remind me what I bought myself", "en", ["me", "I", "myself"]),
        ("What did Kate tell me?", None, ["me"]),  # unknown language: read as English
        ("¿Dónde está mi perro? Yo no sé", "es", ["mi", "Yo"]),
        ("¿Vienes conmigo?", "es", ["conmigo"]),
        ("Qu'est-ce que j'ai dit ? Il m'a parlé de moi", "fr", ["j'", "m'", "moi"]),
        ("Où est mon chien ?", "fr", ["mon"]),
        ("Was hat mir meine Mutter gesagt?", "de", ["mir", "meine"]),
        ("Wo ist mein Hund?", "de", ["mein"]),
        ("Dov'è il mio cane?", "it", ["mio"]),
        ("Onde está o meu cão? Eu não sei", "pt", ["meu", "Eu"]),
        ("我的狗叫什么？", "zh", ["我"]),
        ("私の犬の名前は？", "ja", ["私"]),
        ("मेरा कुत्ता कहाँ है?", "hi", ["मेरा"]),
        ("मैंने क्या कहा था?", "hi", ["मैंने"]),
    ],
)
def test_first_person_words_are_read_in_the_querys_language(text: str, language: str | None, words: list[str]) -> None:
    assert first_person_words(text, language) == words


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Where did we go with our kids?", "en"),  # the plural: the user and someone else
        ("What did Kate tell Mike about the meme?", "en"),  # "me", "i" inside words
        ("How did IBM do in time?", "en"),
        ("¿Dónde vive Lucía?", "es"),
        ("Où habite Marie ?", "fr"),
        ("Wo wohnt Jonas?", "de"),
        ("我们去哪儿了？", "zh"),  # 我们: "we"
        ("健太は何を食べましたか", "ja"),
        ("वे कहाँ गए?", "hi"),
        ("hi there", "ko"),  # a language without a list
    ],
)
def test_no_first_person_word_is_found_where_there_is_none(text: str, language: str) -> None:
    assert first_person_words(text, language) == []


def test_a_word_of_one_language_is_not_read_in_another() -> None:
    # Italian "mi" and Spanish "me" are first person; in English they are not words of it.
    assert first_person_words("mi casa", "en") == []
    assert first_person_words("mi casa", "es") == ["mi"]
    assert first_person_words("my house", "es") == []


@pytest.mark.parametrize(
    ("speakers", "as_user", "asked"),
    [
        # graphmem's entry points: the author "user" and another (ADK, MCP, MemoryEntry).
        ({"user", "helper"}, {"user"}, ("user",)),
        ({"user", "assistant"}, {"user", "assistant"}, ("user",)),  # MCP's remember: every author in the role "user"
        # The user stored under their name, the assistant in another role.
        ({"bob", "assistant"}, {"bob"}, ("bob",)),
        ({"bob", "smith", "assistant"}, {"bob", "smith"}, ("bob", "smith")),  # "Bob Smith"
        ({"ann", "bob", "assistant"}, {"ann", "bob"}, ("ann", "bob")),  # people with an assistant
        # "I" is no one in particular: one author, or everyone speaks as the user, or no one does.
        ({"user"}, {"user"}, ()),
        ({"kate", "ben"}, {"kate", "ben"}, ()),
        ({"kate", "ben"}, set(), ()),
        (set(), set(), ()),
    ],
)
def test_the_first_person_asks_about_the_author_user_or_those_speaking_as_the_user(
    speakers: set[str], as_user: set[str], asked: tuple[str, ...]
) -> None:
    assert asking_speakers(frozenset(speakers), frozenset(as_user)) == asked
