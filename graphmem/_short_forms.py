"""English words as chat shortens them: "fam" is `family`, "bday" `birthday`, "pic"
`picture`, "mom" `mother`.

People type the short form to each other and ask in the full one: "What did Mel do with her
family?" is answered by "went camping with my fam", "When is her sister's birthday?" by
"happy bday sis!". spaCy's norms know a few such forms ("fav", "cuz", "thx"), its lemma
table none of these, and the related words (:mod:`graphmem._related`) only link words of
its English list, where most short forms are not. So an English word in
:data:`SHORT_FORMS` is read as its full word, in entries and queries alike, lowercase or
capitalised ("Mom", "TV"): an entry saying "fam" holds `family`, and a question asking
"fam" reads `family` too. The stored text keeps what was typed; ``matched_tokens`` shows
the full word.

What is in the table: clipped or pet forms of nouns that stand for one word whatever the
context (family and people, things people share and plan: "pic", "vid", "convo", "vacay",
"uni", "bday"), the family words children use ("mom", "dad", "grandma"), and the plain
forms of a few time and quantity words ("tmrw", "mins", "hrs"). What is never in it:

- a form that is also a common word or name in its own right, or stands for two words:
  "yr" ("yr mom" is "your"), "mo" ("back in a mo"), "sec", "ex", "doc" (doctor or
  document), "vet" (veterinarian or veteran), "comp", "grad", "prob", "probs" ("no
  probs"), "totes" (bags), "def", "kitty", "gran" ("Gran Canaria"), "champ", "fab";
- a form whose full word is a stop word ("rly" is "really", "abt" "about", "thru"
  "through": they carry nothing to match);
- phrases ("omw", "idk", "bff": a token is one word);
- forms spaCy's own norms already read ("fav" is `favorite`, "cuz" a stop word).

English only: German "Uni" and Spanish "mamá" are their own languages' words, and other
languages' pipelines never read this table. Stores written before this table hold the
short forms as typed: re-load them (``graphmem export``, then ``graphmem load
--redecompose``) so that old entries meet new questions.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["SHORT_FORMS", "full_form"]

#: A short form (lowercase) and the full word it is read as; a plural short form gives the
#: plural, which the lemma table then reads as the word ("pics" -> "pictures" -> `picture`).
SHORT_FORMS: Mapping[str, str] = MappingProxyType(
    {
        # family, friends, pets
        "fam": "family", "fams": "families",
        "sis": "sister", "sissy": "sister", "bro": "brother", "bros": "brothers",
        "hubby": "husband", "hubbies": "husbands", "wifey": "wife",
        "bf": "boyfriend", "bfs": "boyfriends", "gf": "girlfriend", "gfs": "girlfriends",
        "mom": "mother", "moms": "mothers", "mommy": "mother", "momma": "mother",
        "mum": "mother", "mums": "mothers", "mummy": "mother",
        "dad": "father", "dads": "fathers", "daddy": "father",
        "grandma": "grandmother", "grandmas": "grandmothers", "granny": "grandmother",
        "grandpa": "grandfather", "grandpas": "grandfathers", "gramps": "grandfather",
        "kiddo": "kid", "kiddos": "kids", "roomie": "roommate", "roomies": "roommates",
        "doggo": "dog", "doggos": "dogs", "doggy": "dog", "doggie": "dog",
        "pup": "puppy", "pups": "puppies",
        # things, events, places
        "bday": "birthday", "bdays": "birthdays", "vacay": "vacation", "vacays": "vacations",
        "convo": "conversation", "convos": "conversations",
        "pic": "picture", "pics": "pictures", "vid": "video", "vids": "videos",
        "info": "information", "congrats": "congratulations", "xmas": "christmas",
        "uni": "university", "prof": "professor", "profs": "professors",
        "pj": "pajamas", "pjs": "pajamas", "jammies": "pajamas",
        "veggie": "vegetable", "veggies": "vegetables", "brekkie": "breakfast", "brekky": "breakfast",
        "choc": "chocolate", "telly": "television", "tv": "television",
        "msg": "message", "msgs": "messages", "appt": "appointment", "appts": "appointments",
        "ppl": "people", "fave": "favorite", "faves": "favorites", "favs": "favorites",
        # time and quantity
        "tmrw": "tomorrow", "tmr": "tomorrow", "tomoz": "tomorrow", "tonite": "tonight",
        "nite": "night", "nites": "nights", "wk": "week", "wks": "weeks",
        "mins": "minutes", "hrs": "hours",
        # manner
        "prolly": "probably", "srsly": "seriously", "obvs": "obviously",
    }
)


def full_form(word: str) -> str | None:
    """The full word of a short form (``word`` lowercase), or ``None``."""
    return SHORT_FORMS.get(word)
