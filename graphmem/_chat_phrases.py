"""What a message says to the assistant, not about what it asks for: greetings, thanks and
the phrases that ask an assistant to recall ("can you remind me", "do you remember").

An agent often searches its memory with the user's message as written: Google ADK's
``PreloadMemoryTool`` does so on every turn. "Hey! Can you remind me what Mel painted?
Thanks!" asks what "what did Mel paint?" asks, but its words "hey", "remind" and "thanks"
match every greeting, every turn saying something "reminds me" of something, and every
thank-you of the conversation, and those then outrank the answer. A search reads such a
query without these phrases (:func:`without_chat_phrases`); a delete by query, which
means its words, reads them.

Only phrases that ask for nothing in a question put to an assistant: a word that can be
what is asked about stays ("What did Jon *tell* Gina?", "What did Maria make to *remind*
her of England?", "Is Caroline *okay*?", "Did he say *sorry*?"). So the request verbs are
read only in the frame of a request to the assistant: *remind me* and
*tell me* where a request starts (or after "you" or "please"), *you remember / recall /
know* after "do", "did", "can" or "could", *I wonder*, *I was wondering*, *I can't
remember*, *I'm trying to remember*, *help me recall*, *do you happen to know*, *sorry to
bother you*, *by any chance*; and greetings and thanks as words of their own.

The same in the other languages graphmem reads: greetings and thanks ("hola", "merci",
"danke", "你好", "ありがとう", "धन्यवाद"), and the requests that say who is asked ("¿te
acuerdas de", "tu te souviens", "weißt du noch", "你还记得", "教えてください", "क्या आपको याद
है"): "Lucía recuerda" and 健太は何を教えてくれましたか stay.
"""

from __future__ import annotations

import re

__all__ = ["answers_yes_or_no", "is_reaction", "without_chat_phrases"]

#: Greetings, thanks and fillers: a word of its own (not inside "hi-fi" or "Ohio"); the
#: greetings and thanks of the other languages graphmem reads with spaces between words
#: (Spanish, French, German, Italian, Portuguese, Hindi).
_WORDS = (
    r"hey|hi|hello|hiya|heya|howdy|thanks|thank\s+you|thank\s+u|thx|lol|btw|hmm+|um+|uh+|oh"
    r"|hola|(?:muchas\s+)?gracias|salut|bonjour|coucou|merci(?:\s+beaucoup)?|hallo|danke(?:\s+sch[öo]n)?"
    r"|ciao|grazie(?:\s+mille)?|ol[áa]|oi|obrigad[oa]"
    r"|नमस्ते|नमस्कार|धन्यवाद|शुक्रिया"
)
#: The same in Chinese and Japanese, whose words have no spaces around them, with their
#: requests to recall that say who is asked ("do *you* still remember", "please tell me").
_UNSPACED = (
    r"你好|您好|谢谢(?:你|您)?|多谢|こんにちは|こんばんは|おはよう(?:ございます)?|ありがとう(?:ございます)?"
    r"|(?:你|您)还?记得吗?|请问|提醒我|教えてください"
)
#: Where a request starts: the text's start, a sentence's or a clause's, or after "please".
_START = r"(?:^|(?<=[.!?,:;])|(?<=\bplease))\s*"
_REQUESTS = (
    # can you remind me (again) (of / about), could you please tell me ...
    r"(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:remind|tell)\s+me(?:\s+again)?(?:\s+(?:of|about|if|whether))?",
    # do you (still) remember / recall / know (about / if / whether)
    r"(?:do|did|can|could)\s+you\s+(?:still\s+)?(?:remember|recall|know)(?:\s+(?:about|if|whether))?",
    # I wonder / I was wondering / I'm wondering / I can't remember (if / whether)
    r"i\s+(?:wonder|was\s+wondering|am\s+wondering|['’]m\s+wondering|can['’]?t\s+remember|cannot\s+remember"
    r"|don['’]?t\s+remember|do\s+not\s+remember)(?:\s+(?:about|if|whether))?",
    # I'm trying to remember / help me recall / do you happen to know
    r"i(?:\s+am|['’]m)\s+trying\s+to\s+(?:remember|recall)(?:\s+(?:if|whether))?",
    r"help\s+me\s+(?:remember|recall)",
    r"(?:do|did)\s+you\s+happen\s+to\s+(?:remember|recall|know)(?:\s+(?:if|whether))?",
    r"sorry\s+to\s+(?:bother|bug|trouble)\s+you(?:\s+again)?",
    r"(?:a\s+)?quick\s+question",
    r"just\s+(?:curious|wondering)",
    r"by\s+any\s+chance",
    r"any\s+idea",
    # The same requests in the other languages, each saying who is asked: Spanish, French,
    # German, Italian, Portuguese, Hindi ("do you remember", "remind me").
    r"¿?\s*(?:te\s+acuerdas|(?:me\s+)?recuerdas|recu[ée]rdame|(?:me\s+)?puedes\s+recordar)(?:\s+(?:de|si))?",
    r"(?:tu\s+te\s+souviens|vous\s+vous\s+souvenez|rappel(?:le|ez)[-\s]moi|(?:peux|pouvez)[-\s](?:tu|vous)\s+me\s+rappeler)"
    r"(?:\s+(?:de|si))?",
    r"(?:wei(?:ß|ss)t\s+du\s+noch|erinnerst\s+du\s+dich(?:\s+an)?|kannst\s+du\s+mich\s+erinnern)(?:\s+ob)?",
    r"(?:ti\s+ricordi|ricordami|puoi\s+ricordarmi)(?:\s+(?:di|se))?",
    r"(?:voc[êe]\s+(?:se\s+)?lembra|te\s+lembras|lembra[-\s]me|pode\s+me\s+lembrar)(?:\s+(?:de|se))?",
    r"क्या\s+(?:आपको|तुम्हें|तुमको)\s+याद\s+है|मुझे\s+याद\s+दिला(?:ओ|इए|एँ)",
)
_PHRASE = re.compile(
    rf"(?<![\w'’-])(?:{_WORDS})(?![\w'’-])|{_UNSPACED}"
    rf"|{_START}(?:(?:{'|'.join(_REQUESTS)})(?![\w'’-])|(?:remind|tell)\s+me(?:\s+again)?(?:\s+(?:of|about))?(?![\w'’-]))"
    rf"|(?<![\w'’-])(?:{'|'.join(_REQUESTS)})(?![\w'’-])",
    re.IGNORECASE,
)


#: A word every phrase of an ASCII text holds (a filler also by its start: "hmmm"): a
#: text holding none is left as it is without running :data:`_PHRASE` (most questions;
#: 3 µs instead of 14).
_ASCII_KEYS = frozenset(
    "hey hi hello hiya heya howdy thanks thank thx lol btw oh hola gracias salut bonjour coucou merci hallo danke"
    " ciao grazie ola oi obrigado obrigada remind tell remember recall know wonder wondering question curious"
    " idea sorry chance acuerdas recuerdas recuerdame souviens souvenez rappelle rappelez rappeler weisst"
    " erinnerst erinnern ricordi ricordami ricordarmi lembra lembras lembrar voce".split()
)
_FILLER_STARTS = ("hmm", "um", "uh")
_ASCII_WORD = re.compile(r"[a-z]+")


def without_chat_phrases(text: str) -> str:
    """``text`` with its greetings, thanks and requests to recall blanked out (each
    character a space, so that offsets into the text stay true); the text as it was when
    nothing is left but such phrases (then they are what is asked for)."""
    if text.isascii():
        words = set(_ASCII_WORD.findall(text.lower()))
        if words.isdisjoint(_ASCII_KEYS) and not any(w.startswith(_FILLER_STARTS) for w in words):
            return text
    return _blanked(text)


def _blanked(text: str) -> str:
    """:func:`without_chat_phrases` without the shortcut."""
    blanked = _PHRASE.sub(lambda m: " " * len(m.group(0)), text)
    if blanked == text or not any(ch.isalnum() for ch in blanked):
        return text
    return blanked


#: The words that answer a yes-or-no question ("Did you finish the report?" "yes").
_YES_OR_NO = frozenset("yes yeah yea yep yup ya yah no nope nah sure ok okay okey oki k kk".split())

#: What a chat message says when it only reacts: laughter ("haha", "hehe", "lol", "lmao",
#: "xD"), interjections ("wow", "omg", "ugh", "aww", "hmm") and acknowledgements ("ok",
#: "yeah", "nope", "sure", "cool", "thanks"): English chat's closed class of them.
_REACTION_WORD = re.compile(
    r"(?:h+[aeiou]+){2,}h*|(?:[aeiou]h+){2,}|l+o+l+(?:o+l+)*|lmf?ao+|rofl|xd+|lulz"
    r"|o+h+|a+h+|a+w+|wo+w+|who+a+|wo+a+h+|o+m+f?g+|oops|ugh+|yikes|ya+y+|wo+h?o+|wh?e+|h+m+|u+m+|u+h+|meh|phew"
    r"|k+|right|true|exactly|totally|indeed|agreed"
    r"|cool|nice|great|awesome|sweet|lovely|same|wait|what|really|seriously|damn|dang|gosh|jeez|geez|omw"
    r"|thanks|thank|you|u|thx|ty|tysm|np|welcome|congrats|ikr|tbh|so|and|too|"
    + "|".join(sorted(_YES_OR_NO, key=len, reverse=True)),
    re.IGNORECASE,
)
#: A reaction is short: more words than this say something.
_REACTION_WORDS_AT_MOST = 4
#: Pieces between spaces beyond which no text is a reaction, whatever its emoji.
_SPLIT_AT_MOST = 12
_WORD_OF_A_REACTION = re.compile(r"[^\W\d_]+")


def is_reaction(text: str) -> bool:
    """Whether a message only reacts to what was said ("haha", "lol 😂", "omg yes!!",
    "ok thanks", "👍"): no word but laughter, interjections and acknowledgements, four at
    most, and anything else symbols, emoji or punctuation. It holds nothing to recall: a
    search never shows it for the context it borrows from its neighbours. English chat's
    words only; a message of words of another script is no reaction."""
    if len(text.split(None, _SPLIT_AT_MOST)) > _SPLIT_AT_MOST:
        return False  # (most texts: a C-speed look at their spaces)
    words = _WORD_OF_A_REACTION.findall(text)
    if len(words) > _REACTION_WORDS_AT_MOST:
        return False
    if any(ch.isdigit() for ch in text):
        return False
    return all(_REACTION_WORD.fullmatch(word) for word in words)




def answers_yes_or_no(text: str) -> bool:
    """Whether a message holds a word that answers a yes-or-no question ("yes", "nope",
    "ok"): after a question, such a reaction is its answer, and a search shows it."""
    return not _YES_OR_NO.isdisjoint(w.lower() for w in _WORD_OF_A_REACTION.findall(text))
