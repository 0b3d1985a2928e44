"""A search reads a message to the assistant without its greetings, thanks and requests to
recall (graphmem._chat_phrases); the words a question asks about stay."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem._chat_phrases import _blanked, answers_yes_or_no, is_reaction, without_chat_phrases


def words(text: str) -> str:
    return " ".join(without_chat_phrases(text).split())


@pytest.mark.parametrize(
    ("message", "asked"),
    [
        ("Hey, quick question: what did Mel paint?", ", : what did Mel paint?"),
        ("Can you remind me what my sister's bakery is called? Thanks!", "what my sister's bakery is called? !"),
        ("Do you remember when Caroline went to the parade?", "when Caroline went to the parade?"),
        ("Remind me: where does Maria live?", ": where does Maria live?"),
        ("Tell me about Caroline's adoption plans.", "Caroline's adoption plans."),
        ("please tell me what mel did", "please what mel did"),
        ("I was wondering if Mel likes pottery", "Mel likes pottery"),
        ("I can't remember whether Jon opened his studio", "Jon opened his studio"),
        ("Any idea what Gina sells?", "what Gina sells?"),
        ("What do you know about John's car?", "What John's car?"),
        ("hi! what's the name of the cafe, thank you", "! what's the name of the cafe,"),
        ("Hello Kitty backpack", "Kitty backpack"),
        ("Sorry to bother you again, what did Mel paint?", ", what did Mel paint?"),
        ("I'm trying to remember where Maria lives", "where Maria lives"),
        ("Do you happen to know when Jon opened the studio?", "when Jon opened the studio?"),
        ("Help me recall Gina's store name", "Gina's store name"),
        ("Did Mel paint a sunset by any chance?", "Did Mel paint a sunset ?"),
    ],
)
def test_greetings_thanks_and_requests_to_recall_are_no_words_of_the_question(message: str, asked: str) -> None:
    assert words(message) == asked


@pytest.mark.parametrize(
    "question",
    [
        "What does Jon tell Gina he won't do?",  # tell: what Jon said
        "What did Maria make for her home to remind her of a trip to England?",
        "What did Jon tell me?",  # not a request: what he told
        "Is Caroline okay after the accident?",
        "Did he say sorry?",
        "Was she sorry to bother them?",
        "Which trip to Ohio did they plan?",  # "oh" inside a word
        "Where did she buy the hi-fi set?",
        "Does Melanie remember her first pottery class?",  # her memory, not the assistant's
        "¿Qué recuerda Lucía de su infancia?",  # hers, not the assistant's: no "you"
        "Marie se souvient de son enfance ?",
        "健太は何を教えてくれましたか？",  # what Kenta taught: no request
    ],
)
def test_words_a_question_asks_about_stay(question: str) -> None:
    assert without_chat_phrases(question) == question


@pytest.mark.parametrize(
    ("message", "asked"),
    [
        ("Hola, ¿dónde vive Lucía? ¡Gracias!", ", ¿dónde vive Lucía? ¡ !"),
        ("Merci beaucoup, où habite Marie ?", ", où habite Marie ?"),
        ("Danke schön! Wo wohnt Anna?", "! Wo wohnt Anna?"),
        ("你好！李娜的妹妹住在哪里？谢谢！", "！李娜的妹妹住在哪里？ ！"),
        ("こんにちは！美咲はどこに住んでいますか？ありがとう！", "！美咲はどこに住んでいますか？ ！"),
        ("नमस्ते, प्रिया कहाँ रहती है? धन्यवाद!", ", प्रिया कहाँ रहती है? !"),
        ("¿Te acuerdas de dónde vive Lucía?", "dónde vive Lucía?"),
        ("Tu te souviens où habite Marie ?", "où habite Marie ?"),
        ("Weißt du noch, wo Anna wohnt?", ", wo Anna wohnt?"),
        ("Ti ricordi dove vive Giulia?", "dove vive Giulia?"),
        ("Você se lembra onde mora Ana?", "onde mora Ana?"),
        ("你还记得李娜的妹妹住在哪里吗？", "李娜的妹妹住在哪里吗？"),
        ("你还记得吗？李娜的妹妹住在哪里？", "？李娜的妹妹住在哪里？"),
        ("教えてください。美咲はどこに住んでいますか？", "。美咲はどこに住んでいますか？"),
        ("क्या आपको याद है प्रिया कहाँ रहती है?", "प्रिया कहाँ रहती है?"),
    ],
)
def test_greetings_and_thanks_of_the_other_languages_are_not_read(message: str, asked: str) -> None:
    assert words(message) == asked


def test_a_message_of_nothing_else_is_read_as_written() -> None:
    # Then the phrases are what is asked about ("when did we say thanks?" aside).
    for message in ("thanks", "Hey!", "hi, thank you!", "Do you remember?"):
        assert without_chat_phrases(message) == message


@given(
    st.lists(st.sampled_from([*"abcdeghiklmnorstuwy ,.!?:'-", "hey", "thanks", "remind me", "do you recall"])).map(
        "".join
    )
)
def test_blanking_keeps_every_other_character_where_it_was(text: str) -> None:
    # Offsets into the query (a time's span) stay true: each blanked character is a space.
    out = without_chat_phrases(text)
    assert len(out) == len(text)
    assert all(o == t or o == " " for o, t in zip(out, text, strict=True))


#: Pieces of the phrases the rule reads (and words it does not), for texts made of them.
_PIECES = [
    *"hey hi hello hiya howdy thanks thx lol btw hmmm umm uh oh hola gracias salut merci hallo danke ciao grazie".split(),
    *"ola oi obrigada please again still about if whether know idea question curious chance".split(),
    "te acuerdas de", "tu te souviens", "rappelle-moi", "weisst du noch", "erinnerst du dich an", "ti ricordi",
    "ricordami", "voce se lembra", "lembra-me", "recuerdas", "recuerdame",
    "thank you", "muchas gracias", "merci beaucoup", "grazie mille", "can you remind me", "could you please tell me",
    "remind me", "tell me", "do you remember", "did you recall", "can you know", "i was wondering", "i wonder",
    "i'm wondering", "i can't remember", "i don't remember", "i'm trying to remember", "help me recall",
    "do you happen to know", "sorry to bother you", "a quick question", "just curious", "by any chance", "any idea",
    *"sorry tell remind".split(),
]  # fmt: skip
_OTHERS = [*"what where Mel paint umbrella this ohio hi-fi".split(), ",", ".", "?", "!", ":"]


@settings(max_examples=400)
@given(
    st.lists(st.one_of(st.sampled_from(_PIECES), st.sampled_from(_OTHERS)), max_size=5).map(" ".join),
    st.booleans(),
)
def test_the_shortcut_never_changes_what_is_read(text: str, upper: bool) -> None:
    # An ASCII text holding no key word is left as it is without the full expression: the
    # same as the full expression would leave it.
    text = text.title() if upper else text
    assert without_chat_phrases(text) == _blanked(text)


@pytest.mark.parametrize("piece", _PIECES)
def test_each_phrase_passes_the_shortcut(piece: str) -> None:
    for text in (f"{piece} what did Mel paint", f"Where does Mel live? {piece.title()}!"):
        assert without_chat_phrases(text) == _blanked(text)


# ---------------------------------------------------------------------------- reactions


@pytest.mark.parametrize(
    "message",
    ["haha", "hahaha", "LOL", "lmaooo", "😂", "👍", "omg yes!!", "ok thanks", "wow!", "yeah", "hmm", "aww", "nope",
     "oh no", "wait what?", "xD", "thank you", "hehe so cool", "!!!"],
)
def test_a_message_that_only_reacts_is_a_reaction(message: str) -> None:
    assert is_reaction(message)


@pytest.mark.parametrize(
    "message",
    ["I went hiking", "haha I went hiking yesterday", "Sweden", "pottery", "nice pic", "cool car", "ok see you at 5",
     "no way, really? that is wild", "yes, the red one", "dinosaurs!", "5", "same here, love it", "こんにちは",
     "ok yes no sure fine"],
)
def test_a_message_that_says_something_is_no_reaction(message: str) -> None:
    assert not is_reaction(message)


@pytest.mark.parametrize(("message", "answers"), [("yes", True), ("Nope!", True), ("ok thanks", True), ("haha", False), ("omg", False), ("👍", False)])
def test_a_reaction_may_answer_a_yes_or_no_question(message: str, answers: bool) -> None:
    assert is_reaction(message) and answers_yes_or_no(message) is answers
