"""The ``MemoryService`` interface: shared logic above a thin set of backend primitives.

The public methods are concrete here. They validate ids and scope, decompose text (in a
worker thread, so the event loop never blocks on spaCy), apply the scorer once, and call
a few primitives that a backend implements: store a session, gather candidate statistics,
fetch entries, delete. A backend never decomposes or scores, so every backend ranks the
same data the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import inspect
import re
import uuid
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from graphmem._answer_types import TYPE_TOKENS, asked_types, type_tokens
from graphmem._asker import asking_speakers, first_person_words
from graphmem._chat_phrases import answers_yes_or_no, is_reaction, without_chat_phrases
from graphmem._collector import collector_paused
from graphmem._decompose import (
    Decomposer,
    Decomposition,
    Entity,
    addressed_names,
    author_tokens,
    clean_text,
    name_starts,
    no_space_script,
    normalise_entity_name,
    speaker_tokens,
    speaker_variant,
)
from graphmem._entities import entity_groups
from graphmem._errors import EntryIdConflictError, ProjectScopingUnsupportedError, UnsupportedOperationError
from graphmem._gathering import (
    FIRST_EXPANSION,
    FULL_GATHERING_ENTRIES,
    SEED_DF_SHARE,
    FirstRead,
    NeighbourhoodRequest,
    ScoreGathering,
    TermPostings,
)
from graphmem._language import ENTRY_LANGUAGES, LATIN_LANGUAGES
from graphmem._models import (
    MAX_POSITION,
    MemoryEntry,
    SearchHit,
    SearchRequest,
    SearchResponse,
    check_author,
    check_query_length,
    check_text_length,
    ensure_unicode,
    is_identifier,
    quote_ids,
    validate_identifier,
    validate_project_id,
)
from graphmem._name_sounds import CrossScriptName, cross_script_names
from graphmem._related import load_related_words, related_words_loaded
from graphmem._scoring import (
    CONTEXT_STEPS,
    CandidateStats,
    CorpusStats,
    Place,
    QueryScores,
    RecencyKey,
    ScoredEntry,
    ScoringWeights,
    TermGroups,
    fold_replies,
    rank,
    reply_runs,
    score_time_alone,
)
from graphmem._spelling import (
    MAX_ENDING_LETTERS,
    MIN_UNCASED_NAME,
    accent_variant,
    fold_accents,
    has_uncased_letters,
    is_accent_candidate,
    is_typo_candidate,
    is_uncased_word,
    max_edits,
    typo_variant,
    uncased_name_variants,
    uncased_word_variant,
)
from graphmem._time import QueryTime, mentioned_ranges, query_time

if TYPE_CHECKING:
    from spacy.language import Language

__all__ = [
    "CypherView",
    "EntityMentions",
    "EntryRecord",
    "MemoryStats",
    "MemoryService",
    "Owner",
    "PreparedEntry",
    "RecentScope",
    "StoredEntry",
    "continued",
    "linked_after",
    "next_pairs",
    "one_call",
    "restored_positions",
]


@dataclass(frozen=True, slots=True)
class Owner:
    """The isolation key of a memory graph: an (app, user) pair, never a joined string."""

    app_name: str
    user_id: str


@dataclass(frozen=True, slots=True)
class RecentScope:
    """Which entries a scoped :meth:`MemoryService.recent_entries` reads: global entries,
    plus ``project_id``'s when it names a project."""

    global_only: bool
    project_id: str | None = None

    def holds(self, entry_project_id: str | None) -> bool:
        return entry_project_id is None or (not self.global_only and entry_project_id == self.project_id)


@dataclass(frozen=True, slots=True)
class SpeakerWords:
    """The words of the owner's speakers' names (``Token.speaker``), and those of them that
    name an author who speaks as the user, in the role ``"user"`` (``Token.user_speaker``)."""

    words: frozenset[str] = frozenset()
    as_user: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class NameUse:
    """How a user's entries use a word (:meth:`MemoryService._name_uses`): how many of the
    entries holding it as a token each author wrote, and the label of the user's
    ``Entity`` of that name (``None``: none)."""

    authors: Mapping[str, int]
    label: str | None


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """An entry as a backend stores and returns it."""

    entry_id: str
    memory: MemoryEntry
    session_id: str | None
    project_id: str | None
    position: int
    #: The language its text was decomposed as (``None``: stored before languages were).
    language: str | None = None
    #: Whether its text refers to a time (its ``time_refs`` property is not empty).
    refers_to_time: bool = False

    @property
    def recency(self) -> RecencyKey:
        """What orders this entry among equal scores (one that refers to a time first, then
        newer first)."""
        return RecencyKey(
            timestamp=self.memory.timestamp,
            position=self.position,
            session_id=self.session_id or "",
            project_id=self.project_id,
            entry_id=self.entry_id,
            refers_to_time=self.refers_to_time,
        )


def _matches_content(cand: CandidateStats, too_little: AbstractSet[str] = frozenset()) -> bool:
    """Whether ``cand`` shares with a query more than the words of its author's name (a
    token of every entry its author said) and the query's ``too_little`` tokens: what a
    delete by query may remove."""
    if cand.matched_entities:
        return True
    own = speaker_tokens(cand.author) if cand.author else frozenset()
    return any(token not in own and token not in too_little for token in cand.matched_tokens)


def _single_characters(tokens: Sequence[str]) -> frozenset[str]:
    """The query's tokens that are one character of a script written without spaces (Han,
    kana, Hangul), when it has longer ones: added for recall (a name written one character
    off still shares the others), they are too little to delete by. "東京タワー" must not
    remove "ラーメン" for its ``ー``; "猫" alone is a word, and deletes what holds it."""
    single = frozenset(t for t in tokens if len(t) == 1 and no_space_script(t))
    return single if len(single) < len(tokens) else frozenset()


def _place(entry: StoredEntry) -> Place:
    """Where ``entry`` sits in its conversation (what folding replies reads)."""
    return Place(entry.session_id, entry.project_id, entry.position, entry.memory.author)


@dataclass(frozen=True, slots=True)
class PreparedEntry:
    """An entry ready to store: its id, place in the session, tokens and entities."""

    stored: StoredEntry
    tokens: tuple[str, ...]
    entities: tuple[Entity, ...]

    @property
    def entry_id(self) -> str:
        return self.stored.entry_id


def continued(entries: Sequence[PreparedEntry], start: int) -> list[PreparedEntry]:
    """``entries`` (prepared at positions 0, 1, ...) moved to positions ``start``, ``start + 1``,
    ...: what a backend stores when it appends them after a session's last entry."""
    return [
        dataclasses.replace(e, stored=dataclasses.replace(e.stored, position=start + i)) for i, e in enumerate(entries)
    ]


@dataclass(frozen=True, slots=True)
class EntryRecord:
    """An entry to restore exactly as it was stored (see :meth:`MemoryService.restore_session`).

    Attributes:
        memory: the message (author, role, text, timestamp).
        entry_id: the id to keep; ``None`` for a new one.
        position: its place in the session; ``None`` in every record of a session numbers
            them 0, 1, 2, ... in order (as ``add_session`` does).
        terms: the tokens and entities (with the label of each entity's node) to store as
            they are; ``None`` to decompose the text as ``add_session`` does.
        language: the language to store with ``terms``; ``None`` detects it from the text
            (as decomposing would). Without ``terms`` the decomposition decides.
    """

    memory: MemoryEntry
    entry_id: str | None = None
    position: int | None = None
    terms: Decomposition | None = None
    language: str | None = None


def _with_lowercase_terms(record: EntryRecord) -> EntryRecord:
    """``record`` with its given terms lowercased, as every stored term is (the decomposer's
    and a query's): a restored "Hello" or entity "Bob" would be stored and never matched."""
    terms = record.terms
    if terms is None or all(t == t.lower() for t in (*terms.tokens, *(e.name for e in terms.entities))):
        return record
    entities: dict[str, Entity] = {}
    for entity in terms.entities:
        entities.setdefault(entity.name.lower(), Entity(entity.name.lower(), entity.label))
    lowered = Decomposition(
        tokens=tuple(dict.fromkeys(token.lower() for token in terms.tokens)),
        entities=tuple(entities.values()),
        language=terms.language,
    )
    return dataclasses.replace(record, terms=lowered)


#: A run of more reactions than this in a row is not linked across (see :func:`next_pairs`):
#: an append reads this many of the session's last entries and one more, and a delete
#: looks this many positions and one more back for a link across the entry it deletes.
MAX_REACTIONS_LINKED_ACROSS = 16


def _only_reacts(entry: StoredEntry, matched: CandidateStats | None) -> bool:
    """Whether a ranked entry is a reaction (:func:`graphmem._chat_phrases.is_reaction`)
    that matches nothing of the query but the words of its author's name, and answers no
    yes-or-no question (rule 12: "haha" is no hit, "yes" may be the answer asked for)."""
    if matched is not None and (
        matched.matched_entities or not speaker_tokens(entry.memory.author).issuperset(matched.matched_tokens)
    ):
        return False
    text = entry.memory.text
    return is_reaction(text) and not answers_yes_or_no(text)


def next_pairs(positions: Sequence[int], reactions: Sequence[bool] | None = None) -> list[tuple[int, int]]:
    """Which entries of a session ``NEXT`` links: the indexes ``(i, i + 1)`` of neighbours
    in the given order whose positions are ``p`` and ``p + 1``; and, with ``reactions``
    (per entry, whether it only reacts: :func:`graphmem._chat_phrases.is_reaction`), each
    entry that is no reaction to the next one that is none when only reactions lie between
    them (at most :data:`MAX_REACTIONS_LINKED_ACROSS`, positions without a gap): "haha"
    between a question and its answer does not part them (rule 12).

    A session numbered 0, 1, 2, ... is one chain. A gap (a turn deleted from the middle,
    kept by an export) stays a gap: deleting a turn never makes its neighbours each
    other's context, and restoring the session does not either.
    """
    pairs = [(i, i + 1) for i in range(len(positions) - 1) if positions[i + 1] == positions[i] + 1]
    if reactions is None or not any(reactions):
        return pairs
    for i in range(len(positions)):
        if reactions[i]:
            continue
        j = i + 1
        while j < len(positions) and reactions[j] and positions[j] == positions[j - 1] + 1:
            j += 1
        if (
            i + 1 < j < len(positions)
            and j - i - 1 <= MAX_REACTIONS_LINKED_ACROSS
            and positions[j] == positions[j - 1] + 1
            and not reactions[j]
        ):
            pairs.append((i, j))
    return sorted(pairs)


def linked_after(
    tail: Sequence[tuple[int, bool]], added: Sequence[tuple[int, bool]]
) -> list[tuple[int, int]]:
    """The ``NEXT`` pairs an append makes: ``tail`` is the session's last entries before it
    (position, whether a reaction; in position order, at least the last
    :data:`MAX_REACTIONS_LINKED_ACROSS` + 1 of them or all), ``added`` the appended ones.
    Pairs of :func:`next_pairs` over both, as indexes: negative into ``tail`` (``-1`` its
    last), from 0 into ``added``; only those that reach an appended entry."""
    both = [*tail, *added]
    return [
        (i - len(tail), j - len(tail))
        for i, j in next_pairs([p for p, _ in both], [r for _, r in both])
        if j >= len(tail)
    ]


@dataclass(frozen=True, slots=True)
class _ScopedReader:
    """One owner's graph in one scope, read through a service's primitives: the
    :class:`~graphmem._gathering.GraphReader` a search walks."""

    service: MemoryService
    owner: Owner
    project_id: str | None

    async def postings(
        self, tokens: Sequence[str], entities: Sequence[str], *, with_times: bool = False
    ) -> TermPostings:
        return await self.service._postings(self.owner, self.project_id, tokens, entities, with_times=with_times)

    async def neighbourhood(self, request: NeighbourhoodRequest) -> list[CandidateStats]:
        return await self.service._neighbourhood(self.owner, self.project_id, request)


@dataclass(frozen=True, slots=True)
class CypherView:
    """What debugging Cypher (``graphmem cypher``) reads on a backend: a networkx ``graph``
    (read with grand-cypher) or a Neo4j ``driver`` and ``database`` (read in a READ
    transaction). Exactly one of ``graph`` and ``driver`` is set."""

    graph: Any = None
    driver: Any = None
    database: str | None = None


@dataclass(frozen=True, slots=True)
class EntityMentions:
    """What :meth:`MemoryService.entity_mentions` found: how many entries of a scope
    mention an entity, and the newest of them."""

    total: int
    entries: list[StoredEntry]


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """Counts of what is stored (for one app and user, or for the whole store)."""

    users: int
    entries: int
    tokens: int
    entities: int
    sessions: int
    projects: int


#: The largest ``limit`` of :meth:`MemoryService.list_recent`: the largest 32-bit integer, so
#: that every backend takes it (a Neo4j ``LIMIT`` travels as a 64-bit integer, and a larger
#: Python int cannot be sent at all), and more than any store holds.
MAX_LIST_LIMIT = 2**31 - 1
#: Rule 7 (replies): how far a search walks along one author's messages, out from a run of
#: them it ranked, looking for another author's message; a run in a longer monologue is
#: not folded. Each read takes ``CONTEXT_STEPS`` messages at a time.
REPLY_WALK_MESSAGES = 16

#: The longest token or entity name stored. Longer "words" are blobs (hex dumps, base64,
#: a key held down), which nobody searches for; and a backend must be able to index every
#: term: Neo4j's index key for (app_name, user_id, value) is limited to about 8 KB.
MAX_TERM_LENGTH = 512
#: How many of a query's words that no entry holds are tried as a misspelling or as a word
#: with other accents (each reads the user's tokens of its first letter: a round trip on
#: Neo4j, and an edit-distance pass over them). A question has a few; a pasted page of
#: 250 unknown words took 12-19 s on a user of 36k tokens, on the event loop.
MAX_RESPELLED_WORDS = 8


_WORD = re.compile(r"[^\W\d_]+")
#: Words (lemmas; for Chinese and Japanese also their characters, which their queries hold
#: too) that, beside a time, ask for nothing but what was said then, by the query's
#: language: "what did we talk about on 3 May?", "what happened yesterday?",
#: "2023年5月8日发生了什么？" (see MemoryService._score_time_alone). Happening, doing and
#: telling, never a topic: "what did she write on 3 May?" asks about writing, so "write" is
#: matched as a word, with the time's lift. The languages whose dates graphmem reads
#: (graphmem._time).
WORDS_ASKING_FOR_A_TIME: Mapping[str, frozenset[str]] = {
    "en": frozenset(
        {"happen", "do", "talk", "discuss", "discussion", "say", "chat", "tell", "mention", "speak",
         "conversation"}
    ),
    "es": frozenset(
        {"pasar", "ocurrir", "suceder", "hacer", "hablar", "charlar", "conversar", "decir", "contar",
         "conversación", "mencionar"}
    ),
    "zh": frozenset(
        {"发生", "发", "生", "什么", "什", "么", "了", "的", "我们", "我", "们", "那天", "那", "天", "聊", "聊天",
         "说", "谈", "讨论", "讨", "论", "做", "干", "事", "事情", "情", "有"}
    ),
    "ja": frozenset({"何", "話す", "話", "言う", "言", "起きる", "起", "ある", "する", "事", "こと"}),
    "hi": frozenset({"बात", "बातचीत", "कहना", "कहा", "हुआ", "किया", "करना"}),
    # French, German, Italian and Portuguese: lemmas and the participles their lemma
    # tables keep as written ("passé", "parlé"). Not Portuguese "falir" ("go bankrupt"),
    # though its table reads "falamos" so: a topic, never an asking word.
    "fr": frozenset(
        {"passer", "passé", "arriver", "arrivé", "faire", "fait", "parler", "parlé", "dire", "dit", "discuter",
         "discuté", "discussion", "raconter", "raconté", "conversation"}
    ),
    "de": frozenset(
        {"passieren", "passiert", "geschehen", "geschah", "machen", "gemacht", "sprechen", "gesprochen", "reden",
         "geredet", "sagen", "gesagt", "erzählen", "erzählt", "unterhalten", "gespräch", "worüber", "los"}
    ),
    "it": frozenset(
        {"succedere", "successo", "accadere", "accaduto", "capitare", "capitato", "fare", "fatto", "parlare",
         "parlato", "dire", "detto", "discutere", "discusso", "raccontare", "raccontato", "conversazione"}
    ),
    "pt": frozenset(
        {"acontecer", "aconteceu", "passar", "passou", "fazer", "fizemos", "falar", "falamos",
         "conversar", "conversamos", "dizer", "disse", "contar", "discutir", "conversa"}
    ),
}
#: The longest time such a question may name: a day, a week, a month or two. A longer one
#: ("in 2023") would take most of a heavy user's entries; its words are matched instead.
MAX_TIME_ALONE_DAYS = 62
#: The same for a time without a year, which is that time in every year: a day or a week
#: ("on 19 May"), not a month ("in May": every May of a heavy user's years).
MAX_YEARLESS_TIME_ALONE_DAYS = 7
#: A word of an entity name as graphmem._entities reads it.
_NAME_WORD = re.compile(r"\w+")
#: A word written with a capital that does not start a sentence: a name ("Pet" in "what did
#: Pet Shop Boys play"), never read through related words.
_NAME_INSIDE_SENTENCE = re.compile(r"(?<![.!?]\s)(?<!^)(?<![.!?\"'])\b([A-Z][^\W\d_]*)")


def _capitalised_words(text: str) -> set[str]:
    """The words of ``text`` that start with a capital (names, or a sentence's first word),
    lowercased."""
    return {word.lower() for word in _WORD.findall(text) if word[0].isupper()}


#: A word written where only a name fits: with a possessive ("Will's"), or as a sentence of
#: its own ("Will?"). Zero-width but for the spaces of the second: every such word of a text
#: is found by one scan, overlapping ones too ("Will? May's").
_NAMED_ONLY = re.compile(r"(?<!\w)(?=(\w+)['’]s(?!\w))|(?:^|(?<=[.!?])\s*)(?=(\w+)\s*(?:[.!?]|$))")


def _named_only(text: str) -> set[str]:
    """The words (lowercase) that ``text`` writes where only a name fits: with a possessive
    ("Will's") or as a sentence of its own ("Will?"). One scan of the text, where one per
    word asked about was quadratic in a long query (5 s of a 300,000-character one)."""
    return {(possessive or alone).lower() for possessive, alone in _NAMED_ONLY.findall(text)}


def _asks_for_a_time_alone(text: str, parts: Decomposition) -> bool:
    """Whether a query's words besides its time (``text``, decomposed as ``parts``) ask
    for nothing but what was said then: stop words and :data:`WORDS_ASKING_FOR_A_TIME` of
    its language, and no kind of answer ("Where did we go on 3 May?" asks for a place:
    its answer type is matched, with the time's lift)."""
    asking = WORDS_ASKING_FOR_A_TIME.get(parts.language or "en", frozenset())
    return set(parts.tokens) <= asking and not asked_types(text)


def entity_name_words(names: Collection[str]) -> frozenset[str]:
    """The words of entity names that a query word may spell another way: alphabetic,
    three letters or more (see :func:`speaker_variant`)."""
    return frozenset(w for name in names for w in name.split() if len(w) >= 3 and w.isalpha())


def _respelled(text: str, variants: Mapping[str, str], names: Sequence[CrossScriptName] = ()) -> str:
    """``text`` with each word in ``variants`` (lowercase) written as its variant, with the
    word's first letter as written (a capitalised name stays a name), and each speaker's
    name in Latin letters written after where ``names`` found it in another script: the
    entries in the question's script that mention the name hold the span, the speaker's
    own entries the name."""
    for name in sorted(names, key=lambda n: n.start, reverse=True):  # the offsets stay true
        text = f"{text[: name.end]} {name.words} {text[name.end :]}"
    for word, variant in variants.items():
        if not any(ch.isupper() or ch.islower() for ch in word):
            # A script without capitals (Han, kana, Devanagari): the span as found.
            text = text.replace(word, variant)
            continue

        def as_written(match: re.Match[str], variant: str = variant) -> str:
            return (variant[:1].upper() if match.group(0)[:1].isupper() else variant[:1]) + variant[1:]

        text = re.sub(rf"(?<!\w){re.escape(word)}(?!\w)", as_written, text, flags=re.IGNORECASE)
    return text


def _without_spans(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` with the given character spans blanked out."""
    out = list(text)
    for start, end in spans:
        out[start:end] = " " * (end - start)
    return "".join(out)


def appended_start(last: int | None, count: int, session_id: str) -> int:
    """The position an append of ``count`` entries starts at, after the session's ``last``
    position (``None``: the session holds nothing).

    Raises:
        ValueError: the entries would pass :data:`MAX_POSITION` (a session restored near
            it): nothing is stored, where storing them would leave an entry no export can
            write.
    """
    start = 0 if last is None else last + 1
    if start + count - 1 > MAX_POSITION:
        raise ValueError(
            f"session {quote_ids(session_id)} ends at position {last}: {count} more entries would pass the "
            f"largest position ({MAX_POSITION}); nothing was stored (store them in a new session)"
        )
    return start


def _distinct_entry_ids(entry_ids: Sequence[str]) -> list[str]:
    """``entry_ids`` each once, in order, every one checked (InvalidIdentifierError; one id
    given as a string, which would be read as its characters: TypeError)."""
    if isinstance(entry_ids, str):
        raise TypeError("entry_ids must be a list of ids, not one string")
    ids = list(dict.fromkeys(entry_ids))
    for entry_id in ids:
        validate_identifier(entry_id, "entry_id")
    return ids


def _appended_entry_ids(entry_ids: Sequence[str], count: int) -> list[str]:
    """The ``entry_ids`` given to an append of ``count`` entries, checked: one per entry,
    each a valid id, none twice."""
    if isinstance(entry_ids, str):
        raise TypeError("entry_ids must be a list of ids, one per entry, not one string")
    ids = list(entry_ids)
    if len(ids) != count:
        raise ValueError(f"entry_ids must give one id per entry: {len(ids)} ids for {count} entries")
    for entry_id in ids:
        validate_identifier(entry_id, "entry_id")
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"entry id {quote_ids(twice)} is given twice")
    return ids


def _entry_at(index: int, session_id: str | None) -> str:
    """Where an entry of a write is, for its error (``entries[3] of session "s1"``: the
    index into the entries given, from 0)."""
    return f"entries[{index}]" + (f" of session {quote_ids(session_id)}" if session_id is not None else "")


def _has_text(entry: MemoryEntry) -> bool:
    """Whether an entry is stored: one with no text (or only spaces) is skipped."""
    return bool(entry.text.strip())


def new_entry_id() -> str:
    """A stable unique entry id, never derived from session id and position."""
    return uuid.uuid4().hex


class _OwnerNames:
    """The owner's ``Entity`` names and speakers' words (:class:`SpeakerWords`), read at most
    once in a search by whichever rule asks first (:meth:`MemoryService._names` gives both
    in one read; a rule needing only the speakers reads those alone)."""

    def __init__(self, service: MemoryService, owner: Owner) -> None:
        self._service, self._owner = service, owner
        self._names: frozenset[str] | None = None
        self._speakers: SpeakerWords | None = None

    async def both(self) -> tuple[frozenset[str], frozenset[str]]:
        if self._names is None:
            self._names, self._speakers = await self._service._names(self._owner)
        assert self._speakers is not None
        return self._names, self._speakers.words

    async def speaker_words(self) -> SpeakerWords:
        if self._speakers is None:
            self._speakers = await self._service._speakers(self._owner)
        return self._speakers


#: The public calls running in this context: per service, what its ``_call_mark()`` was when
#: the outermost of them began (:meth:`MemoryService._mark_of_this_call`). A context variable:
#: the tasks a call starts and ``asyncio.to_thread`` carry it into what the call runs.
_CALL_MARKS: contextvars.ContextVar[tuple[tuple[MemoryService, object], ...]] = contextvars.ContextVar(
    "graphmem_call_marks", default=()
)


def _noting_its_start(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method``, a public coroutine method of a service, noting when it begins what the
    service's ``_call_mark()`` is then (a call made by another call of the same service
    keeps that call's mark: it began with it)."""

    @functools.wraps(method)
    async def call(self: MemoryService, /, *args: Any, **kwargs: Any) -> Any:
        with one_call(self):
            return await method(self, *args, **kwargs)

    return call


@contextlib.contextmanager
def one_call(service: MemoryService) -> Iterator[None]:
    """The public calls of ``service`` made in this block (in this context, and the tasks and
    threads it starts) are one call begun now: each keeps the ``_call_mark()`` noted here.
    For a caller that makes several calls of one operation (the ADK adapter reads, then
    writes): a store closed between them refuses the later ones as calls running when it
    closed, rather than opening again for them. Inside a call of ``service`` already, that
    call's mark is kept."""
    marks = _CALL_MARKS.get()
    mark = None if any(s is service for s, _ in marks) else service._call_mark()
    if mark is None:
        yield
        return
    token = _CALL_MARKS.set((*marks, (service, mark)))
    try:
        yield
    finally:
        _CALL_MARKS.reset(token)


def _note_public_calls(cls: type) -> None:
    """Make each public coroutine method ``cls`` defines note its start (``close()`` aside:
    it is no call on the store)."""
    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and name != "close" and inspect.iscoroutinefunction(value):
            setattr(cls, name, _noting_its_start(value))


class MemoryService(ABC):
    """Long-term memory for agents, stored as a knowledge graph.

    Entries are isolated by (app_name, user_id) and, on backends that support it, by a
    project inside a user. Subclasses implement the storage primitives (the ``_``-prefixed
    methods); the public methods hold the shared logic.

    Args:
        nlp: the spaCy pipeline (a loaded ``Language`` or a pipeline name), ``None`` for
            the default English pipeline (see :mod:`graphmem._decompose`), or a
            ``Decomposer`` (e.g. ``Decomposer(n_process=2)`` for bulk loads,
            ``Decomposer(language="ja")`` for an app in one language). A decomposer
            passed in belongs to the caller: ``close()`` leaves it running, so several
            services can share one; the one a service creates is closed with it.
        weights: the scorer's constants.
        language: the language of every entry and query of this service (``"en"``,
            ``"es"``, ``"fr"``, ``"de"``, ``"it"``, ``"pt"``, ``"hi"``, ``"ja"``, ``"zh"``), or ``"auto"`` to
            detect it per text; ``None`` (the default) leaves it to the decomposer (which
            detects it). Short for ``nlp=Decomposer(nlp, language=...)``: an app whose
            users write one language should set it (short texts are detected less surely).

    Raises:
        ValueError: an unknown ``language``, or one given with a ``Decomposer`` (set it on
            the decomposer instead).
    """

    #: Pruned search: query terms held by more than this share of the user's entries are
    #: not gathered from (the answer stays exact, see ``graphmem._scoring``); ``None``
    #: gathers from every term.
    seed_df_share: float | None = SEED_DF_SHARE
    #: A pruned search first expands at most this many seed holders per result asked for
    #: (those holding the most; ``None``: all of them); the exact answer never depends on it.
    first_expansion: int | None = FIRST_EXPANSION
    #: A user holding at most this many entries is searched without pruning, in one
    #: gathering (cheaper at that size; the answer is the same either way).
    full_gathering_entries: int = FULL_GATHERING_ENTRIES
    #: Whether a search reads ahead what it may need next: with the entries it ranked,
    #: those a deeper round would rank when it can name them already, and the messages
    #: around them that rule 7 (replies) walks. On a server each read is a round trip; in
    #: a process what is read ahead and not used is wasted work. The answer is the same
    #: either way.
    read_ahead: bool = True

    def __init__(
        self,
        nlp: Language | str | Decomposer | None = None,
        *,
        weights: ScoringWeights | None = None,
        language: str | None = None,
    ) -> None:
        if isinstance(nlp, Decomposer) and language is not None:
            raise ValueError(
                f"language={language!r} was given with a Decomposer: set it on the decomposer "
                "instead (Decomposer(language=...)), which decides every text's language"
            )
        self._owns_decomposer = not isinstance(nlp, Decomposer)
        if isinstance(nlp, Decomposer):
            self._decomposer = nlp
        elif language is None:
            self._decomposer = Decomposer(nlp)
        else:
            self._decomposer = Decomposer(nlp, language=language)
        self.weights = weights or ScoringWeights()

    # ------------------------------------------------------------------ capabilities

    def supports_project_scoping(self) -> bool:
        """Whether project-scoped calls work on this backend (default ``False``)."""
        return False

    def cypher_view(self) -> CypherView | None:
        """What the debugging Cypher reads on this backend; ``None`` when it has none."""
        return None

    @property
    def decomposer(self) -> Decomposer:
        """The decomposer that turns this service's texts into tokens and entities."""
        return self._decomposer

    # ------------------------------------------------------------------ writes

    async def add_session(
        self, app_name: str, user_id: str, session_id: str, entries: Sequence[MemoryEntry]
    ) -> None:
        """Store a finished conversation as global memory.

        A session id that already holds entries is replaced, so re-ingesting a growing
        session does not duplicate. Entries with no text are skipped. All or nothing.

        Raises:
            InvalidIdentifierError: a bad app, user or session id.
            DecompositionError: a decomposition worker process failed (nothing stored).
            BackendUnavailableError: the backend cannot be reached.
        """
        owner = self._owner(app_name, user_id)
        validate_identifier(session_id, "session_id")
        prepared = await self._prepare(entries, session_id=session_id, project_id=None)
        await self._replace_session(owner, None, session_id, prepared)

    async def add_sessions(
        self,
        app_name: str,
        user_id: str,
        sessions: Mapping[str, Sequence[MemoryEntry]],
    ) -> None:
        """Store several finished conversations as global memory, decomposing them together.

        The same as ``add_session`` for each item, in order (each session is replaced and
        stored all or nothing), but spaCy sees all their entries in one batch, which lets a
        ``Decomposer(n_process=2)`` spread them over worker processes. Every id is checked
        and every entry decomposed before anything is stored, so a failed decomposition
        stores nothing. Calls for different users may run concurrently: one decomposes
        while another writes. On networkx the whole call is all or nothing; Neo4j writes it
        in transactions of up to 2,000 entries (never splitting a session), and when one
        fails the sessions of those before it stay stored: the error's note
        (``exc.__notes__``) names them.

        Raises:
            InvalidIdentifierError: a bad app, user or session id.
            DecompositionError: a decomposition worker process failed (nothing stored).
            BackendUnavailableError: the backend cannot be reached.
        """
        owner = self._owner(app_name, user_id)
        items = list(sessions.items())
        for session_id, _ in items:
            validate_identifier(session_id, "session_id")
        prepared = await self._prepare_sessions(items, project_id=None)
        await self._replace_sessions(
            owner, None, [(session_id, entries) for (session_id, _), entries in zip(items, prepared, strict=True)]
        )

    async def add_session_to_project(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        project_id: str,
        entries: Sequence[MemoryEntry],
    ) -> None:
        """Store a finished conversation in a project (replacing that session in the project).

        Raises:
            ProjectScopingUnsupportedError: the backend has no project support.
            InvalidProjectIdError: a bad project id.
        """
        self._require_projects("add_session_to_project")
        owner = self._owner(app_name, user_id)
        validate_identifier(session_id, "session_id")
        validate_project_id(project_id)
        prepared = await self._prepare(entries, session_id=session_id, project_id=project_id)
        await self._replace_session(owner, project_id, session_id, prepared)

    async def append_to_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        entries: Sequence[MemoryEntry],
        *,
        entry_ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Add entries to the end of a global session, keeping what it holds.

        Where ``add_session`` replaces a session, this continues it: the new entries take
        the positions after the session's last entry, and ``NEXT`` links that entry to the
        first new one (a session that holds nothing yet starts with them). Concurrent
        appends and replacements of one session are serialised. Entries with no text are
        skipped. All or nothing.

        Args:
            entry_ids: the id to store each entry with, one per entry, in order (the id of
                an entry skipped for having no text is not used); ``None`` for new ids. A
                caller that names its messages can tell later which ones it stored
                (``graphmem.adk`` names an ADK event's entries after the event).

        Returns:
            The ids of the stored entries, in order (empty when none had text).

        Raises:
            InvalidIdentifierError: a bad app, user, session or entry id.
            EntryIdConflictError: one of ``entry_ids`` is already stored, in this session
                too (an append adds entries, it never replaces one); nothing was stored.
            ValueError: ``entry_ids`` not one per entry, or an id given twice.
            DecompositionError: a decomposition worker process failed (nothing stored).
            BackendUnavailableError: the backend cannot be reached.
        """
        owner = self._owner(app_name, user_id)
        validate_identifier(session_id, "session_id")
        return await self._append(owner, None, session_id, entries, entry_ids)

    async def append_to_session_in_project(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        project_id: str,
        entries: Sequence[MemoryEntry],
        *,
        entry_ids: Sequence[str] | None = None,
    ) -> list[str]:
        """``append_to_session`` for a session of a project (``entry_ids`` as there).

        Raises:
            ProjectScopingUnsupportedError: the backend has no project support.
            InvalidProjectIdError: a bad project id.
        """
        self._require_projects("append_to_session_in_project")
        owner = self._owner(app_name, user_id)
        validate_identifier(session_id, "session_id")
        validate_project_id(project_id)
        return await self._append(owner, project_id, session_id, entries, entry_ids)

    async def _append(
        self,
        owner: Owner,
        project_id: str | None,
        session_id: str,
        entries: Sequence[MemoryEntry],
        entry_ids: Sequence[str] | None,
    ) -> list[str]:
        """The work of :meth:`append_to_session` (ids checked) in one scope."""
        entries = list(entries)  # read twice when ids are given: a generator must not come back empty
        ids = None if entry_ids is None else _appended_entry_ids(entry_ids, len(entries))
        earlier = await self._session_authors(owner, project_id, session_id)
        prepared = await self._prepare(entries, session_id=session_id, project_id=project_id, earlier_authors=earlier)
        if not prepared:
            return []
        if ids is None:
            await self._append_to_session(owner, project_id, session_id, prepared)
            return [e.entry_id for e in prepared]
        # _prepare left out the entries without text (as it checks them): their ids go too.
        kept_ids = [entry_id for entry_id, entry in zip(ids, entries, strict=True) if _has_text(entry)]
        prepared = [
            dataclasses.replace(e, stored=dataclasses.replace(e.stored, entry_id=entry_id))
            for e, entry_id in zip(prepared, kept_ids, strict=True)
        ]
        # The check and the write as one, as for restore_session: no other write of these ids between them.
        async with self._claiming_ids(kept_ids):
            held = await self._held_entry_ids(owner, project_id, session_id, kept_ids)
            if held:
                raise EntryIdConflictError(
                    f"entry id {quote_ids(held[0])} is already an entry of this session; nothing was stored: "
                    "an append adds entries and never replaces one (restore_session replaces a session)"
                )
            await self._append_to_session(owner, project_id, session_id, prepared)
        return kept_ids

    async def add_entry(self, app_name: str, user_id: str, entry: MemoryEntry) -> str | None:
        """Store one entry outside any session, as global memory.

        Returns:
            The new entry's id, or ``None`` when the entry has no text (skipped).
        """
        owner = self._owner(app_name, user_id)
        prepared = await self._prepare([entry], session_id=None, project_id=None)
        if not prepared:
            return None
        await self._insert_entry(owner, prepared[0])
        return prepared[0].entry_id

    async def add_entry_to_project(
        self, app_name: str, user_id: str, project_id: str, entry: MemoryEntry
    ) -> str | None:
        """Store one entry outside any session, in a project."""
        self._require_projects("add_entry_to_project")
        owner = self._owner(app_name, user_id)
        validate_project_id(project_id)
        prepared = await self._prepare([entry], session_id=None, project_id=project_id)
        if not prepared:
            return None
        await self._insert_entry(owner, prepared[0])
        return prepared[0].entry_id

    async def restore_session(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None,
        records: Sequence[EntryRecord],
        *,
        project_id: str | None = None,
    ) -> list[str]:
        """Store entries as an export describes them, keeping their ids, positions and terms.

        This is how ``load`` writes fixtures, so that export then load reproduces a store.
        With a session id, the session (in its scope: global, or ``project_id``) is replaced
        all or nothing, as by ``add_session``; its entries keep their positions, and
        ``NEXT`` links only positions ``p`` and ``p + 1`` (:func:`next_pairs`): the gap a
        deleted turn left stays a gap. With ``session_id=None`` every record is an entry
        outside any session (as ``add_entry`` stores it); a record whose id the user
        already holds outside any session, in the same scope, replaces that entry.

        Records without ``terms`` are decomposed as ``add_session`` (or, outside a
        session, ``add_entry``) would; records with ``terms`` are stored with exactly those
        tokens and entities.

        Args:
            session_id: the session to replace, or ``None`` for entries outside any session.
            records: the entries, in session order.
            project_id: ``None`` for global memory, or the project.

        Returns:
            The stored entries' ids, in order (the given ones, and new ones where none was given).

        Raises:
            InvalidIdentifierError: a bad app, user, session or entry id.
            InvalidProjectIdError: a bad project id.
            ProjectScopingUnsupportedError: a project id on a backend without projects.
            EntryIdConflictError: an id is held by another user's entry, or by one of this
                user's entries in another session or scope; nothing was stored.
            ValueError: a blank text; an id given twice; positions given for only some
                records of a session, negative, or not increasing.
        """
        owner = self._owner(app_name, user_id)
        if session_id is not None:
            validate_identifier(session_id, "session_id")
        if project_id is not None:
            self._require_projects("restore_session")
            validate_project_id(project_id)
        records = list(records)
        for record in records:
            if not isinstance(record, EntryRecord):
                raise TypeError(f"records must be EntryRecord objects, got {type(record).__name__}")
            if not isinstance(record.memory, MemoryEntry):
                raise TypeError(f"EntryRecord.memory must be a MemoryEntry, got {type(record.memory).__name__}")
            if not record.memory.text.strip():
                raise ValueError("an entry to restore has no text (blank entries are never stored)")
            check_text_length(record.memory.text)
            check_author(record.memory.author)
            if record.language is not None and record.language not in ENTRY_LANGUAGES:
                raise ValueError(
                    f"EntryRecord.language must be one of {', '.join(ENTRY_LANGUAGES)}, got {record.language!r:.40}"
                )
            if record.terms is not None:
                names = (*record.terms.tokens, *(e.name for e in record.terms.entities))
                for term in (*names, *(e.label for e in record.terms.entities)):
                    if not isinstance(term, str):
                        raise TypeError(f"EntryRecord.terms must hold strings, got {type(term).__name__}")
                    ensure_unicode(term, "a term of EntryRecord.terms")
                if any(not name.strip() for name in names):
                    # As a fixture refuses it: stored, it would make the user's export fail.
                    raise ValueError("EntryRecord.terms must not hold a blank token or entity name")
        records = [_with_lowercase_terms(record) for record in records]
        positions = restored_positions([r.position for r in records], in_session=session_id is not None)
        ids = [r.entry_id for r in records if r.entry_id is not None]
        for entry_id in ids:
            validate_identifier(entry_id, "entry_id")
        if len(set(ids)) != len(ids):
            twice = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"entry id {quote_ids(twice)} is given twice")
        prepared = await self._prepare_records(records, positions, session_id=session_id, project_id=project_id)
        # The check and the write as one: no other restore may store one of these ids
        # between them (it would be held twice, by two users or two sessions).
        async with self._claiming_ids(ids):
            held = await self._held_entry_ids(owner, project_id, session_id, ids)
            if session_id is not None:
                await self._replace_session(owner, project_id, session_id, prepared)
            else:
                await self._restore_loose_entries(owner, held, prepared)
        return [p.entry_id for p in prepared]

    async def check_entry_ids(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None,
        entry_ids: Sequence[str],
        *,
        project_id: str | None = None,
    ) -> None:
        """Check, without writing, that :meth:`restore_session` may store entries with these
        ids in this place (``load`` checks every line before it stores the first).

        Raises:
            EntryIdConflictError: an id is held by another user's entry, or by one of this
                user's entries in another session or scope.
            ProjectScopingUnsupportedError: a project id on a backend without projects.
        """
        owner = self._owner(app_name, user_id)
        if project_id is not None:
            self._require_projects("check_entry_ids")
            validate_project_id(project_id)
        await self._held_entry_ids(owner, project_id, session_id, entry_ids)

    async def entry_terms(self, app_name: str, user_id: str, entry_ids: Sequence[str]) -> dict[str, Decomposition]:
        """The tokens and entities stored for some of a user's entries (what export writes).

        Tokens and entities come sorted; each entity carries the label of its ``Entity``
        node (the label of the first mention the store saw), so that restoring every entry
        with these terms gives the same nodes.

        Returns:
            Per entry id the user holds, its terms; ids the user does not hold are left out.
        """
        owner = self._owner(app_name, user_id)
        found = await self._entry_terms(owner, list(entry_ids)) if entry_ids else {}
        return {
            entry_id: Decomposition(
                tokens=tuple(sorted(terms.tokens)),
                entities=tuple(sorted(terms.entities, key=lambda e: e.name)),
            )
            for entry_id, terms in found.items()
        }

    # ------------------------------------------------------------------ reads

    async def entity_groups(self, app_name: str, user_id: str) -> list[tuple[str, ...]]:
        """The user's entity names that name one thing, as search groups them (see
        :mod:`graphmem._entities` for what links and what never does). Groups are not
        stored: they are computed from the user's names, so they follow every write and
        delete, and ``Entity`` nodes stay one per name.

        Returns:
            Each group of two or more names, sorted, in sorted order.
        """
        owner = self._owner(app_name, user_id)
        names, speakers = await self._names(owner)
        return [tuple(sorted(g)) for g in entity_groups(names, speakers.words).groups]

    async def search(self, request: SearchRequest) -> SearchResponse:
        """Recall the entries that best match ``request.query``.

        ``project_id=None`` searches global entries only; ``project_id=P`` global entries
        plus P's. An empty or stop-word-only query returns no results.

        Raises:
            ProjectScopingUnsupportedError: a project id on a backend without projects.
            InvalidIdentifierError: a bad app or user id.
            pydantic.ValidationError: a request whose fields were changed without
                validation (``request.model_copy(update={"limit": 0})``), or that is no
                :class:`SearchRequest`.
        """
        request = request.validated() if isinstance(request, SearchRequest) else SearchRequest.model_validate(request)
        # The collector is paused while a search runs (graphmem._collector): the answer is
        # the same, the slowest searches are not.
        with collector_paused():
            return await self._search(request)

    async def _search(self, request: SearchRequest) -> SearchResponse:
        """:meth:`search`, with the collector paused."""
        owner = self._owner(request.app_name, request.user_id)
        if request.project_id is not None:
            self._require_projects("search")
            validate_project_id(request.project_id)
        limit = request.effective_limit
        as_of = request.as_of or datetime.now(UTC)
        read_as: dict[str, str] = {}
        related: dict[str, str] = {}
        # ``limit`` counts what is shown: entries inside the ``since``/``until`` window, and
        # with replies folded (rule 7 of graphmem._scoring) replies. When the first ``depth`` entries of the
        # ranking hold fewer, the gathering ranks deeper (each depth exactly, so what is
        # shown is the full ranking's beginning). Chats that alternate authors and
        # searches without a window take one round.
        windowed = request.since is not None or request.until is not None
        floor = 0.0 if request.min_score is None else request.min_score
        depth = limit
        replies: list[tuple[ScoredEntry, list[ScoredEntry]]]
        gathering: ScoreGathering | None = None
        scores: QueryScores | None = None
        fetched: dict[str, StoredEntry] = {}  # entries read at any depth (they never change)
        around: dict[str, CandidateStats] = {}  # what the walks of rule 7 read, at any depth
        walked: set[str] = set()
        scored: dict[str, ScoredEntry] = {}  # the scores' explanations, made once an entry
        while True:
            if scores is None:
                first = await self._score(
                    owner, request.project_id, request.query, depth, as_of=as_of, read_as=read_as, related=related
                )
                if first is None:
                    return SearchResponse()
                scores, gathering = first
            elif not scores.decides(depth):  # (a full gathering decides any depth)
                assert gathering is not None  # scores without one (a time alone) decide any depth
                scores = await gathering.scores(depth)  # reads on from where it stopped
                scored = {}
            # Every contender: all the entries scoring at least the depth-th best, ties
            # included, so their order (ties broken by recency) is the full ranking's
            # beginning; ties often bring what is missing without ranking deeper.
            contenders = scores.contenders(depth, request.min_score)
            # A second round reads again, so when what it would rank is decided already,
            # its entries come with this round's: on Neo4j a read is a round trip (about
            # half the searches of a chat fold a reply and rank deeper).
            ahead = min(MAX_LIST_LIMIT, 2 * depth)
            deeper = self.read_ahead and ahead > depth and scores.decides(ahead)
            prefetch = scores.contenders(ahead, request.min_score) if deeper else ()
            walks = (around, walked) if self.read_ahead and request.fold_replies else None
            stored = await self._fetch_entries_once(owner, request.project_id, contenders, fetched, prefetch, walks)
            visible = {i: e for i, e in stored.items() if request.in_window(e.memory.timestamp)} if windowed else stored
            # A message that only reacts ("haha", "lol", "👍") holds nothing to recall: it is no
            # hit for the context it borrows from its neighbours (the answer beside it is),
            # nor for its author's name, which every entry of theirs holds.
            reactions = [i for i in visible if _only_reacts(visible[i], scores.candidates.get(i))]
            if reactions:
                visible = {i: e for i, e in visible.items() if i not in reactions}
            for i in visible.keys() - scored.keys():  # an id missing was deleted meanwhile
                scored[i] = scores.scored(i)
            ranked = rank(
                {i: scored[i] for i in visible},
                {i: e.recency for i, e in visible.items()},
                limit=len(visible),
                min_score=request.min_score,
            )
            if request.fold_replies:
                runs = reply_runs(ranked, {s.entry_id: _place(visible[s.entry_id]) for s in ranked})
                if runs:
                    # What the gathering read of each entry (its author and neighbours) is
                    # what the walk reads: it asks the backend only beyond it.
                    runs = await self._replies(
                        owner, request.project_id, runs, visible, around, scores.candidates, walked
                    )
                replies = fold_replies(ranked, runs)
            else:
                replies = [(s, []) for s in ranked]
            if len(replies) >= limit or depth >= MAX_LIST_LIMIT:
                break
            # Every entry that scores at all was ranked: a full gathering's scores are all
            # there are, and the contenders were all of them.
            if scores.exact_above <= 0.0 and len(contenders) >= sum(
                1 for score in scores.final.values() if score > 0.0 and score >= floor
            ):
                break
            # Outside a window about as many entries fold as are added: twice the replies
            # missing; a window may leave out most, so twice as deep.
            grown = 2 * depth if windowed else depth + 2 * (limit - len(replies))
            depth = min(MAX_LIST_LIMIT, grown)
        replies = replies[:limit]
        shown = [s for hit, folded in replies for s in (hit, *folded)]
        lenders = scores.context_lenders(s.entry_id for s in shown if s.context > 0.0)

        # Not recursive (a folded message folds nothing): a closure that calls itself is a
        # reference cycle, which would keep this search's entries alive until the cyclic
        # collector ran, and make it run (graphmem._collector).
        def as_hit(s: ScoredEntry, folded: list[SearchHit]) -> SearchHit:
            entry = stored[s.entry_id]
            return SearchHit(
                entry_id=s.entry_id,
                score=s.score,
                memory=entry.memory,
                matched_tokens=list(s.matched_tokens),
                matched_entities=list(s.matched_entities),
                session_id=entry.session_id,
                project_id=entry.project_id,
                context_score=s.context,
                context_from=lenders.get(s.entry_id) if s.context > 0.0 else None,
                matched_time=s.time_match,
                time_score=s.time_score,
                by_named_speaker=s.by_named_speaker,
                # (A name in another script may stand for several words: "li na".)
                read_as={
                    word: token
                    for word, token in read_as.items()
                    if any(t in s.matched_tokens for t in token.split())
                },
                related_to={token: related[token] for token in s.matched_tokens if token in related},
                position=entry.position if entry.session_id is not None else None,
                folded=folded,
            )

        hits = [as_hit(hit, [as_hit(f, []) for f in folded]) for hit, folded in replies]
        return SearchResponse(memories=[h.memory for h in hits], hits=hits)

    async def get_entry(self, app_name: str, user_id: str, entry_id: str) -> StoredEntry | None:
        """The user's entry with this id (in any scope), or ``None`` when the user has none.

        An id of another app or user is ``None`` too: ids never cross users.

        Raises:
            InvalidIdentifierError: a bad app, user or entry id.
        """
        owner = self._owner(app_name, user_id)
        validate_identifier(entry_id, "entry_id")
        found = await self._fetch_entries(owner, [entry_id])
        return found[0] if found else None

    async def get_entries(self, app_name: str, user_id: str, entry_ids: Sequence[str]) -> list[StoredEntry]:
        """The user's entries with these ids (in any scope), in the order given, each once;
        ids the user does not hold are left out (ids never cross users). One read for all
        of them: what :meth:`get_entry` reads for one.

        Raises:
            InvalidIdentifierError: a bad app, user or entry id.
        """
        return await self._fetched_in_order(self._owner(app_name, user_id), _distinct_entry_ids(entry_ids))

    async def entity_mentions(
        self, app_name: str, user_id: str, name: str, *, project_id: str | None = None, limit: int = 10
    ) -> EntityMentions:
        """The user's newest ``limit`` entries mentioning the entity ``name`` (read as stored
        names are: lowercased, without a leading article or a possessive, see
        :func:`~graphmem._decompose.normalise_entity_name`: "Rex", "rex" and "Rex's" are one),
        and how many mention it, in the scope a search sees: global entries, plus
        ``project_id``'s when given. Newest as :meth:`recent_entries` orders them.

        Reads the entity's mentions only (from its node), never the user's other entries.

        Raises:
            TypeError: ``name`` is not a string.
            ValueError: ``limit`` is not an integer from 1 to 2**31 - 1.
            ProjectScopingUnsupportedError: ``project_id`` on a backend without projects.
        """
        owner = self._owner(app_name, user_id)
        if not isinstance(name, str):
            raise TypeError(f"name must be an entity name (a string), got {type(name).__name__}")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIST_LIMIT:
            raise ValueError(f"limit must be an integer from 1 to {MAX_LIST_LIMIT}, got {limit!r}")
        if project_id is not None:
            self._require_projects("entity_mentions")
            validate_project_id(project_id)
        scope = RecentScope(global_only=project_id is None, project_id=project_id)
        total, ids = await self._entity_mentions(owner, normalise_entity_name(name), scope, limit)
        return EntityMentions(total=total, entries=await self._fetched_in_order(owner, ids))

    async def next_links(self, app_name: str, user_id: str, entry_ids: Sequence[str]) -> list[tuple[str, str]]:
        """The ``NEXT`` links between the user's entries with these ids: ``(entry id, id of
        the following entry of its session)`` for each link whose two ends are both among
        ``entry_ids``, sorted. Reads those entries' links only.

        Raises:
            InvalidIdentifierError: a bad app, user or entry id.
        """
        owner = self._owner(app_name, user_id)
        ids = _distinct_entry_ids(entry_ids)
        return sorted(set(await self._next_links(owner, ids))) if ids else []

    async def _fetched_in_order(self, owner: Owner, ids: Sequence[str]) -> list[StoredEntry]:
        """The owner's entries with these ids, in this order (one deleted meanwhile, or
        another user's, left out), in one read."""
        found = {e.entry_id: e for e in await self._fetch_entries(owner, ids)} if ids else {}
        return [found[i] for i in ids if i in found]

    async def list_recent(
        self, app_name: str, user_id: str, limit: int = 10, *, project_id: str | None = None, global_only: bool = False
    ) -> list[MemoryEntry]:
        """The user's newest entries first, global and project entries alike (or a scope of
        them: see :meth:`recent_entries`).

        Args:
            limit: how many at most, from 1 to 2**31 - 1.

        Raises:
            ValueError: ``limit`` is not an integer in that range.
        """
        if project_id is not None:
            self._require_projects("list_recent")  # (named as called, not as recent_entries)
        entries = await self.recent_entries(app_name, user_id, limit, project_id=project_id, global_only=global_only)
        return [e.memory for e in entries]

    async def recent_entries(
        self, app_name: str, user_id: str, limit: int = 10, *, project_id: str | None = None, global_only: bool = False
    ) -> list[StoredEntry]:
        """:meth:`list_recent` with each entry's id, session and project (to forget one by id).

        The newest ``limit`` entries of a scope, cut after the scope is applied (so a full
        page whenever the scope holds that many):

        - neither argument: every entry of the user, global and in any project;
        - ``project_id``: global entries and that project's, what a search in the project sees;
        - ``global_only``: global entries only.

        Raises:
            ValueError: ``limit`` is not an integer from 1 to 2**31 - 1, or both a
                ``project_id`` and ``global_only`` are given.
            ProjectScopingUnsupportedError: ``project_id`` on a backend without projects.
        """
        owner = self._owner(app_name, user_id)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIST_LIMIT:
            raise ValueError(f"limit must be an integer from 1 to {MAX_LIST_LIMIT}, got {limit!r}")
        if project_id is not None:
            if global_only:
                raise ValueError("give a project_id or global_only=True, not both")
            self._require_projects("recent_entries")
            validate_project_id(project_id)
            return await self._list_recent(owner, limit, RecentScope(global_only=False, project_id=project_id))
        if global_only:
            return await self._list_recent(owner, limit, RecentScope(global_only=True))
        return await self._list_recent(owner, limit, None)

    async def list_entries(
        self, app_name: str, user_id: str, project_id: str | None = None, *, all_projects: bool = False
    ) -> list[StoredEntry]:
        """Every stored entry of a scope, ordered by session and position (for export).

        Args:
            project_id: ``None`` for global entries, or a project's entries only.
            all_projects: every entry of the user, global and in any project.

        Raises:
            ValueError: both a ``project_id`` and ``all_projects=True`` (which would list
                other projects' entries to a caller asking for one).
            ProjectScopingUnsupportedError: ``project_id`` on a backend without projects.
        """
        owner = self._owner(app_name, user_id)
        if project_id is not None:
            if all_projects:
                raise ValueError("give a project_id or all_projects=True, not both")
            self._require_projects("list_entries")
            validate_project_id(project_id)
        entries = [
            e for e in await self._all_entries(owner) if all_projects or e.project_id == project_id
        ]
        entries.sort(
            key=lambda e: (
                e.project_id or "", e.session_id is None, e.session_id or "", e.position, e.memory.timestamp, e.entry_id
            )
        )
        return entries

    async def session_entries(
        self, app_name: str, user_id: str, session_id: str, project_id: str | None = None
    ) -> list[StoredEntry]:
        """The entries of one session in one scope, in position order.

        Args:
            project_id: ``None`` for the global session, or the project's session of that id
                (the two are different sessions, as for ``add_session_to_project``).

        Returns:
            The session's entries (empty when it holds none), each with its id and position.

        Raises:
            InvalidIdentifierError: a bad app, user or session id.
            InvalidProjectIdError: a bad project id.
            ProjectScopingUnsupportedError: ``project_id`` on a backend without projects.
        """
        owner = self._owner(app_name, user_id)
        validate_identifier(session_id, "session_id")
        if project_id is not None:
            self._require_projects("session_entries")
            validate_project_id(project_id)
        return await self._session_entries(owner, project_id, session_id)

    async def stats(self, app_name: str | None = None, user_id: str | None = None) -> MemoryStats:
        """Counts of users, entries, tokens, entities, sessions and projects.

        With ``app_name`` and ``user_id`` the counts are for that user; without, for the store.
        """
        if (app_name is None) != (user_id is None):
            raise ValueError("give both app_name and user_id, or neither")
        owner = None if app_name is None or user_id is None else self._owner(app_name, user_id)
        return await self._stats(owner)

    async def scope_stats(self, app_name: str, user_id: str, project_id: str | None = None) -> MemoryStats:
        """Counts of what a search of one scope sees: the user's global entries, and with
        ``project_id`` that project's too, and the tokens and entities those entries hold.
        Nothing of another project is counted (``stats`` counts the whole user): what a
        server for one project, such as the MCP server, may report.

        Raises:
            ProjectScopingUnsupportedError: ``project_id`` on a backend without projects.
        """
        owner = self._owner(app_name, user_id)
        if project_id is not None:
            self._require_projects("scope_stats")
            validate_project_id(project_id)
        return await self._scope_stats(owner, project_id)

    async def ensure_schema(self) -> int | None:
        """Set up what the backend needs before its first write (indexes, constraints).

        Idempotent; :func:`graphmem.open_memory` calls it, so a store it opens is ready.
        The default does nothing and returns ``None`` (the backend has no schema).

        Returns:
            The schema version now in place, or ``None`` for a backend without a schema.

        Raises:
            BackendUnavailableError: the backend cannot be reached.
        """
        return None

    async def health_check(self) -> None:
        """Check that the backend can be reached.

        Raises:
            BackendUnavailableError: it cannot.
        """
        await self._ping()

    # ------------------------------------------------------------------ deletes

    async def delete_entries(self, app_name: str, user_id: str, query: str) -> int:
        """Delete the global entries that match ``query``; returns how many.

        An entry matches when it shares a token or entity with the query (a search would
        recall it with a score above 0 from its own content), the words of its author's
        name aside: they are tokens of every entry that author said, so "the user's dog"
        deletes what mentions a dog, not everything "user" said. The query is read as a
        search reads it: a time it names is a time, not words ("on 3 May 2023" matches no
        entry for its "3"), and a query that is nothing but a time ("on 3 May 2023",
        "yesterday") deletes nothing. Nor is the time a filter: "the dentist on 3 May 2023"
        deletes every entry that mentions the dentist, whatever its date (to delete only
        some, search with the time and pass the hits' ids to :meth:`delete_entries_by_id`).
        One character of a script without spaces is too little when the query has longer
        words. Entries recalled only as conversation context of a match are not deleted.
        """
        owner = self._owner(app_name, user_id)
        return await self._delete_matches(owner, None, query, only_project=None)

    async def delete_entries_in_project(
        self, app_name: str, user_id: str, project_id: str, query: str
    ) -> int:
        """Delete the entries of one project that match ``query``; returns how many."""
        self._require_projects("delete_entries_in_project")
        owner = self._owner(app_name, user_id)
        validate_project_id(project_id)
        return await self._delete_matches(owner, project_id, query, only_project=project_id)

    async def delete_entry(self, app_name: str, user_id: str, entry_id: str) -> int:
        """Delete the user's entry with this id (in any scope); returns 1, or 0 when the user
        has no such entry (an id of another app or user deletes nothing).

        The id is a hit's ``entry_id`` (or a ``StoredEntry``'s). Its session's other turns
        stay, and stay linked as before (a gap is left where it was).

        Raises:
            InvalidIdentifierError: a bad app, user or entry id.
        """
        validate_identifier(entry_id, "entry_id")
        return await self.delete_entries_by_id(app_name, user_id, [entry_id])

    async def delete_entries_by_id(self, app_name: str, user_id: str, entry_ids: Sequence[str]) -> int:
        """Delete the user's entries with these ids (in any scope); returns how many.

        An id that is not one of this user's entries (unknown, already deleted, another
        user's) is skipped: only the owner's own entries can be deleted this way.

        Raises:
            TypeError: an id that is not a string.
        """
        owner = self._owner(app_name, user_id)
        if isinstance(entry_ids, str):
            raise TypeError("entry_ids must be a list of ids, not one string")
        ids = list(dict.fromkeys(entry_ids))
        for entry_id in ids:
            if not isinstance(entry_id, str):
                raise TypeError(f"entry ids must be strings, got {type(entry_id).__name__}")
        # A string that is no valid id (empty, too long, a control character, a lone
        # surrogate) names no entry: skipped like an unknown one, on every backend (Bolt
        # cannot even carry a lone surrogate).
        ids = [entry_id for entry_id in ids if is_identifier(entry_id)]
        return await self._delete_entries(owner, ids) if ids else 0

    async def delete_session(self, app_name: str, user_id: str, session_id: str) -> int:
        """Delete a session's entries (in every scope); returns how many."""
        owner = self._owner(app_name, user_id)
        validate_identifier(session_id, "session_id")
        return await self._delete_session(owner, session_id)

    async def delete_project(self, app_name: str, user_id: str, project_id: str) -> int:
        """Delete every entry of a project; returns how many."""
        self._require_projects("delete_project")
        owner = self._owner(app_name, user_id)
        validate_project_id(project_id)
        return await self._delete_project(owner, project_id)

    async def delete_user(self, app_name: str, user_id: str) -> int:
        """Erase everything of one app and user, in every project; returns entries removed.

        Token and entity nodes of that user go too: nothing of the user is left.
        """
        owner = self._owner(app_name, user_id)
        return await self._delete_user(owner)

    @contextlib.asynccontextmanager
    async def bulk_writes(self) -> AsyncIterator[None]:
        """A block of many writes (a fixture load) that may leave work common to them to its
        end, done before the block is left, even when it fails: on networkx, erasing the
        text that replaced sessions removed (its segment's rewrite) once per user instead of
        once per write. Writes from other tasks are not affected. By default nothing waits."""
        yield

    # ------------------------------------------------------------------ lifecycle

    async def close(self) -> None:
        """Release resources (connections, files, the decomposer's worker processes if this
        service created the decomposer). Idempotent. A call still running when the service
        closes may raise ``BackendUnavailableError`` (each backend's ``close()`` says when)."""
        if self._owns_decomposer:
            # Joining worker processes can wait for a chunk in progress: not on the loop.
            await asyncio.to_thread(self._decomposer.close)

    async def __aenter__(self) -> MemoryService:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _note_public_calls(cls)  # a backend's own public calls, and those it overrides

    def _call_mark(self) -> object | None:
        """What each public call of this service notes when it begins (a backend's state, for
        its primitives to compare with :meth:`_mark_of_this_call`); ``None``, the default:
        nothing is noted."""
        return None

    def _mark_of_this_call(self) -> object | None:
        """What :meth:`_call_mark` was when the public call of this service running here
        began (``None`` outside one, or when nothing was noted)."""
        for service, mark in _CALL_MARKS.get():
            if service is self:
                return mark
        return None

    # ------------------------------------------------------------------ shared helpers

    def _owner(self, app_name: str, user_id: str) -> Owner:
        return Owner(validate_identifier(app_name, "app_name"), validate_identifier(user_id, "user_id"))

    def _require_projects(self, method: str) -> None:
        if not self.supports_project_scoping():
            raise ProjectScopingUnsupportedError(method, type(self).__name__)

    async def decompose_many(
        self, texts: Sequence[str], languages: Sequence[str | None] | None = None
    ) -> list[Decomposition]:
        """Decompose texts off the event loop (one batch at a time through the pipeline);
        ``languages``: per text, the language to decompose it as (``None``: detected, or
        as the decomposer is set)."""
        if not texts:
            return []
        if languages is None or not any(languages):
            return await asyncio.to_thread(self._decomposer.decompose_many, texts)
        return await asyncio.to_thread(self._decomposer.decompose_many, texts, languages)

    async def decompose_query(self, query: str) -> Decomposition:
        """Decompose a query; an empty query decomposes to nothing.

        A short query on a loaded, idle pipeline is decomposed right here (the tokenizer
        alone, less time than a hop to a worker thread); anything that could block — the
        first load of the pipeline, a long query, a batch being decomposed — runs in a
        worker thread, so the event loop never waits on spaCy.
        """
        if not query.strip():
            return Decomposition(tokens=(), entities=())
        ready = self._decomposer.decompose_query_now(query)
        if ready is not None:
            return ready
        return await asyncio.to_thread(self._decomposer.decompose_query, query)

    async def _prepare(
        self,
        entries: Sequence[MemoryEntry],
        *,
        session_id: str | None,
        project_id: str | None,
        earlier_authors: Collection[str] = (),
    ) -> list[PreparedEntry]:
        """``earlier_authors``: who already speaks in the session (an append continues it)."""
        prepared = await self._prepare_sessions(
            [(session_id, entries)], project_id=project_id, earlier_authors=earlier_authors
        )
        return prepared[0]

    async def _prepare_sessions(
        self,
        sessions: Sequence[tuple[str | None, Sequence[MemoryEntry]]],
        *,
        project_id: str | None,
        earlier_authors: Collection[str] = (),
    ) -> list[list[PreparedEntry]]:
        """Check and decompose the entries of several sessions in one pipeline batch."""
        kept_per_session: list[list[MemoryEntry]] = []
        for session_id, entries in sessions:
            entries = list(entries)  # iterated twice below: a generator must not come back empty
            for index, entry in enumerate(entries):
                if not isinstance(entry, MemoryEntry):
                    raise TypeError(
                        f"{_entry_at(index, session_id)}: entries must be MemoryEntry objects, "
                        f"got {type(entry).__name__}; nothing was stored"
                    )
                try:
                    check_text_length(entry.text)
                    check_author(entry.author)
                except ValueError as exc:
                    # Deep in a bulk load, which entry it is matters more than its length.
                    raise ValueError(f"{_entry_at(index, session_id)}: {exc}; nothing was stored") from None
            kept_per_session.append([e for e in entries if _has_text(e)])
        decomposed = iter(await self.decompose_many([e.text for kept in kept_per_session for e in kept]))
        names = await self._name_tokens([e for kept in kept_per_session for e in kept])
        result: list[list[PreparedEntry]] = []
        for (session_id, _), kept in zip(sessions, kept_per_session, strict=True):
            parts_list = [next(decomposed) for _ in kept]
            result.append(
                self._prepared(
                    kept,
                    parts_list,
                    names,
                    session_id=session_id,
                    project_id=project_id,
                    earlier_authors=earlier_authors,
                )
            )
        return result

    async def _name_tokens(self, entries: Sequence[MemoryEntry]) -> dict[str, tuple[str, ...]]:
        """The Han and kana tokens of each author's name (:meth:`Decomposer.name_tokens`),
        for the authors whose name has any: English names cost one ``isascii`` each."""
        names = {e.author for e in entries if not e.author.isascii()}
        if not names:
            return {}
        decomposer = self._decomposer
        found = await asyncio.to_thread(lambda: {name: decomposer.name_tokens(name) for name in names})
        return {name: tokens for name, tokens in found.items() if tokens}

    def _prepared(
        self,
        kept: Sequence[MemoryEntry],
        decomposed: Sequence[Decomposition],
        names: Mapping[str, tuple[str, ...]],
        *,
        session_id: str | None,
        project_id: str | None,
        earlier_authors: Collection[str] = (),
    ) -> list[PreparedEntry]:
        participants = _participants(kept) | {t for author in earlier_authors for t in author_tokens(author)}
        return [
            _prepared_entry(
                StoredEntry(
                    entry_id=new_entry_id(),
                    memory=entry,
                    session_id=session_id,
                    project_id=project_id,
                    position=position,
                    language=parts.language,
                ),
                _own_terms(entry, parts, participants, names.get(entry.author, ())),
            )
            for position, (entry, parts) in enumerate(zip(kept, decomposed, strict=True))
        ]

    async def _prepare_records(
        self,
        records: Sequence[EntryRecord],
        positions: Sequence[int],
        *,
        session_id: str | None,
        project_id: str | None,
    ) -> list[PreparedEntry]:
        """PreparedEntry objects for :meth:`restore_session`: given ids, positions and
        terms kept; the records without terms decomposed as a session (or, outside a
        session, each entry alone, as ``add_entry`` does)."""
        to_decompose = [r.memory for r in records if r.terms is None]
        # A record's own language decides how its text is decomposed (Spanish without
        # accents reads as English to detection).
        decomposed = iter(
            await self.decompose_many(
                [m.text for m in to_decompose], [r.language for r in records if r.terms is None]
            )
        )
        names = await self._name_tokens(to_decompose)
        participants = _participants([r.memory for r in records]) if session_id is not None else None
        prepared: list[PreparedEntry] = []
        for record, position in zip(records, positions, strict=True):
            if record.terms is not None:
                terms = record.terms
                language = record.language or record.terms.language
                if language is None:
                    language = await asyncio.to_thread(self._decomposer.language_of, record.memory.text)
            else:
                parts = next(decomposed)
                own = _participants([record.memory]) if participants is None else participants
                terms = _own_terms(record.memory, parts, own, names.get(record.memory.author, ()))
                language = parts.language
            stored = StoredEntry(
                entry_id=record.entry_id or new_entry_id(),
                memory=record.memory,
                session_id=session_id,
                project_id=project_id,
                position=position,
                language=language,
            )
            prepared.append(_prepared_entry(stored, terms))
        return prepared

    async def _held_entry_ids(
        self, owner: Owner, project_id: str | None, session_id: str | None, entry_ids: Sequence[str]
    ) -> list[str]:
        """Refuse ids held anywhere but where the restored entries go; returns the ids
        the owner holds there (the entries being replaced)."""
        if not entry_ids:
            return []
        found = await self._locate_entries(entry_ids)
        elsewhere = [
            (o, e) for o, e in found if o != owner or (e.project_id, e.session_id) != (project_id, session_id)
        ]
        if elsewhere:
            other_owner, entry = elsewhere[0]
            if other_owner != owner:
                where = "another user's entry"  # whose, is none of this caller's business
            else:
                session = (
                    "outside any session" if entry.session_id is None else f"of session {quote_ids(entry.session_id)}"
                )
                scope = "global memory" if entry.project_id is None else f"project {quote_ids(entry.project_id)}"
                where = f"this user's entry {session} in {scope}"
            more = ""
            if len(elsewhere) > 1:
                more = f" (and {len(elsewhere) - 1} more id{'s' if len(elsewhere) > 2 else ''})"
            raise EntryIdConflictError(
                f"entry id {quote_ids(entry.entry_id)} is already {where}{more}; nothing was stored: "
                "load into a store that does not hold those entries, or leave the ids out to get new ones"
            )
        return [e.entry_id for _, e in found]

    async def _replies(
        self,
        owner: Owner,
        project_id: str | None,
        runs: Sequence[tuple[str, ...]],
        stored: Mapping[str, StoredEntry],
        known: dict[str, CandidateStats],
        gathered: Mapping[str, CandidateStats],
        read: set[str],
    ) -> list[tuple[str, ...]]:
        """The ``runs`` (of :func:`~graphmem._scoring.reply_runs`) that are replies (rule 7):
        walking out from each end along the author's own messages, the first message met is
        another author's. One author's entries that no one answers (notes, a journal) are
        not folded, nor is a run whose walk passes :data:`REPLY_WALK_MESSAGES` messages.
        ``known`` and ``read``: what earlier walks of the search read (added to);
        ``gathered``: the candidates the scores were computed from, whose authors and
        neighbours are what a walk would read (it asks the backend only beyond them)."""

        def stats(entry_id: str) -> CandidateStats | None:
            found = known.get(entry_id)
            return gathered.get(entry_id) if found is None else found

        # Per run and side: the last of the author's messages the walk reached, and every
        # message it passed (the run's too); a settled side is removed.
        sides = {(k, side): (run[-side], set(run)) for k, run in enumerate(runs) for side in (0, 1)}
        answered: set[int] = set()
        # Walk on what is known; a side that reaches an entry not known (or one whose next
        # neighbour is not) asks the backend for the messages around it and walks on. Each
        # read brings ``CONTEXT_STEPS`` messages, so the walk's own limit comes first.
        for walk in range(REPLY_WALK_MESSAGES + 1):
            for (k, side), (edge, passed) in list(sides.items()):
                author = stored[runs[k][0]].memory.author
                settled = True
                while k not in answered:
                    cand = stats(edge)
                    if cand is None:
                        settled = edge in read  # read already: it is out of scope (or gone)
                        break
                    beyond = [near for near in cand.neighbour_ids if near not in passed]
                    if not beyond or len(passed) - len(runs[k]) > REPLY_WALK_MESSAGES:
                        break  # the session (or its scope) ends here, or the walk is long enough
                    near = stats(beyond[0])
                    if near is None:
                        settled = edge in read  # read already: the neighbour is out of scope
                        break
                    if near.author != author:
                        answered.add(k)
                    else:
                        passed.add(near.entry_id)
                        edge = near.entry_id
                if settled or k in answered:
                    del sides[(k, side)]
                else:
                    sides[(k, side)] = (edge, passed)
            if not sides or walk == REPLY_WALK_MESSAGES:
                break
            edges = sorted({edge for edge, _ in sides.values()})
            around = await self._entries_around(owner, project_id, edges, CONTEXT_STEPS)
            known.update((c.entry_id, c) for c in around)
            read.update(edges)
        return [run for k, run in enumerate(runs) if k in answered]

    async def _fetch_entries_once(
        self,
        owner: Owner,
        project_id: str | None,
        entry_ids: Sequence[str],
        known: dict[str, StoredEntry],
        ahead: Sequence[str] = (),
        walks: tuple[dict[str, CandidateStats], set[str]] | None = None,
    ) -> dict[str, StoredEntry]:
        """The owner's entries with these ids, by id (one deleted meanwhile is missing),
        read from the backend unless ``known`` holds them already (entries never change:
        a search reads each once, at any depth); ``known`` is added to. When a read is
        needed, the entries of ``ahead`` not known come with it (into ``known`` only), and
        with ``walks`` (what :meth:`_replies` knows and has read, added to) the messages
        around those read (:meth:`_entries_around`) too."""
        missing = [i for i in entry_ids if i not in known]
        if missing and ahead:
            asked = set(missing)
            missing += [i for i in ahead if i not in known and i not in asked]
        if missing and walks is not None:
            around, walked = walks
            entries, near = await self._fetch_entries_around(owner, project_id, missing, CONTEXT_STEPS)
            around.update((c.entry_id, c) for c in near)
            walked.update(missing)
            known.update((e.entry_id, e) for e in entries)
        elif missing:
            known.update((e.entry_id, e) for e in await self._fetch_entries(owner, missing))
        return {i: known[i] for i in entry_ids if i in known}

    async def _query_words(
        self, query: str, as_of: datetime | None, *, words_of_a_time_alone: bool = True, asked: bool = False
    ) -> tuple[QueryTime | None, str, Decomposition]:
        """The time a query names (``None``: none), its text without it, and that text's
        terms: a time is matched as a time, not as words. A query that is nothing but a time
        ("tomorrow", "May 2023") is matched by its words instead (no time, the whole text),
        unless ``words_of_a_time_alone`` is off (a delete: then it has no terms). ``asked``:
        the query is a question put to the assistant (a search), read without its
        greetings, thanks and requests to recall (:mod:`graphmem._chat_phrases`).

        The text is the query as the pipeline reads it (``clean_text``: a soft hyphen inside
        a word deleted, full-width letters as ASCII), so that the rules reading the text
        (names, misspellings respelled in it) see the words its tokens came from."""
        query = clean_text(query)
        if asked:
            query = without_chat_phrases(query)
        when = query_time(query, as_of)
        text = _without_spans(query, when.spans) if when is not None else query
        parts = await self.decompose_query(text)
        if parts.is_empty and when is not None and words_of_a_time_alone:
            when, text = None, query
            parts = await self.decompose_query(text)
        return when, text, parts

    async def _score(
        self,
        owner: Owner,
        project_id: str | None,
        query: str,
        limit: int,
        *,
        as_of: datetime | None = None,
        read_as: dict[str, str] | None = None,
        related: dict[str, str] | None = None,
    ) -> tuple[QueryScores, ScoreGathering | None] | None:
        """Score the query's candidates (``None``: nothing to match), and the gathering that
        scores them deeper when asked (``ScoreGathering.scores``; ``None`` when the scores
        decide any depth). ``read_as`` receives the query words read as other tokens
        (misspellings, names spelled another way), ``related`` the user's tokens read as
        related to a query word, and that word."""
        # A time named in the query is matched against the entries' times, not as words:
        # its words ("May", "2023") are left out of the tokens.
        when, text, parts = await self._query_words(query, as_of, words_of_a_time_alone=False, asked=True)
        parts = await self._names_as_written(owner, text, parts)  # "Will?" is a name, or nothing
        if when is not None and _asks_for_a_time_alone(text, parts):
            alone = await self._score_time_alone(owner, project_id, when)
            if alone is not None:
                return alone, None
        if parts.is_empty and (when is None or not asked_types(text)):
            if when is not None:  # no entry matches the time: its words are matched instead
                when, text, parts = await self._query_words(query, as_of, asked=True)
                parts = await self._names_as_written(owner, text, parts)
            if parts.is_empty:
                return None
        # (A time and the kind of answer asked for, "where did we go on 3 May?": the type's
        # token is the query's one term, and the time lifts the entries of then.)
        entity_names = tuple(e.name for e in parts.entities)
        # The kind of thing the question asks for ("where" -> a place) is one more term:
        # entries naming such a thing hold its type token (graphmem._answer_types).
        tokens = tuple(dict.fromkeys((*parts.tokens, *asked_types(text))))
        # Words related to the query's nouns and adjectives (graphmem._vectors) are read with
        # its terms, so that the first read tells which of them the user holds.
        near = await self._related_candidates(text, tokens, parts.language)
        owner_names = _OwnerNames(self, owner)  # read at most once, by the rules below that need them
        # A question in the first person asks about what the user said (graphmem._asker):
        # the author's word is read with the query's terms, and kept below unless the query
        # names a speaker.
        first_person, asker = await self._first_person(text, tokens, parts.language, owner_names)
        # A small user (or pruning off) is gathered in full, with the statistics when the
        # backend can (one round trip on Neo4j); a larger one only reads the statistics here.
        full_at_most = self.full_gathering_entries if self.seed_df_share is not None else MAX_LIST_LIMIT
        first = await self._term_stats_or_gather(
            owner,
            project_id,
            (*tokens, *asker, *_forms_of(near, tokens)),
            entity_names,
            full_at_most=full_at_most,
            with_times=when is not None,
            prefetch_df_share=self.seed_df_share,
        )
        corpus = first.corpus
        # A name spelled another way in the query ("Katharine" for "Katherine", a speaker's
        # or one an entry names) is read as that name, and a misspelt word as the word:
        # only words no entry holds are tried. The query is then decomposed as if it were
        # written that way, so its entity spans link too.
        variants, across = await self._name_variants(owner, text, tokens, corpus, parts.language, owner_names)
        if variants or across:
            if read_as is not None:  # a name only written in lowercase was read as written
                read_as.update((w, v) for w, v in variants.items() if v.lower() != w)
                read_as.update((name.span, name.words) for name in across)
            text = _respelled(text, variants, across)
            parts = await self._names_as_written(owner, text, await self.decompose_query(text))
            entity_names = tuple(e.name for e in parts.entities)
            tokens = tuple(dict.fromkeys((*parts.tokens, *asked_types(text))))
            near = await self._related_candidates(text, tokens, parts.language)
            corpus = await self._term_stats(owner, (*tokens, *asker, *_forms_of(near, tokens)), entity_names)
            first = FirstRead(corpus)  # what was gathered was for other words
        # A linked name stands for its group, the names of the same thing (graphmem._entities).
        groups = await self._term_groups(owner, tokens, entity_names, corpus, owner_names)
        if groups is not None:
            tokens = tuple(dict.fromkeys((*tokens, *groups.tokens)))
            entity_names = tuple(dict.fromkeys((*entity_names, *groups.entities)))
            corpus = await self._term_stats(owner, (*tokens, *asker, *_forms_of(near, tokens)), entity_names)
            first = FirstRead(corpus)  # gathered without the group's other names
        if asker:
            if corpus.speaker_tokens.isdisjoint(tokens):
                corpus = dataclasses.replace(corpus, asked_about=frozenset(asker))
                tokens = (*tokens, *asker)
                if read_as is not None:
                    read_as.update(dict.fromkeys(first_person, " ".join(asker)))
            else:  # "what did Kate tell me?" asks about Kate: what was read for the author is not the query's
                corpus = _only(corpus, [t for t in corpus.token_df if t not in asker])
                first = FirstRead(corpus)
        # The related words the user holds join the query as weaker members of their word's
        # group (graphmem._scoring, rule "Related words"); the others leave the statistics.
        found = related_tokens(near, tokens, corpus, groups)
        if found:
            if related is not None:
                related.update((form, word) for form, (word, _) in found.items())
            tokens = (*tokens, *found)
            keys = {word: word for word, _ in found.values()} | {form: word for form, (word, _) in found.items()}
            groups = TermGroups(
                {**(groups.tokens if groups is not None else {}), **keys},
                groups.entities if groups is not None else {},
                {form: similarity for form, (_, similarity) in found.items()},
            )
        if near:
            corpus = _only(corpus, tokens)
        # First from the rarer terms only, expanding the seed holders that hold the most,
        # until what was read decides the first `limit` exactly (graphmem._gathering).
        gathering = ScoreGathering(
            _ScopedReader(self, owner, project_id),
            tokens,
            entity_names,
            corpus,
            weights=self.weights,
            when=when,
            seed_df_share=self.seed_df_share,
            first_expansion=self.first_expansion,
            full_at_most=full_at_most,
            full=first.full,
            prefetched=first.postings,
            groups=groups,
        )
        scores = await gathering.scores(limit)
        return (scores, gathering) if scores.final else None

    async def _first_person(
        self, text: str, tokens: Sequence[str], language: str | None, owner_names: _OwnerNames
    ) -> tuple[list[str], tuple[str, ...]]:
        """The query's first-person words and the speaker words they ask about
        (:mod:`graphmem._asker`): the author ``user``'s when the user's entries have that
        author and another one; else the words of the authors who speak as the user (role
        ``"user"``) when some other author does not. Neither when the query names the
        speaker itself, or the user's entries have no such speaker (then everything is the
        user's, or the user is not told apart from the others)."""
        words = first_person_words(text, language)
        if not words:
            return [], ()
        speakers = await owner_names.speaker_words()
        asker = asking_speakers(speakers.words, speakers.as_user)
        if not asker or not set(asker).isdisjoint(tokens):
            return [], ()
        return words, asker

    async def _score_time_alone(self, owner: Owner, project_id: str | None, when: QueryTime) -> QueryScores | None:
        """The scores of a question that asks for a time and nothing else (its words, besides
        the time, are stop words or :data:`WORDS_ASKING_FOR_A_TIME` of its language): every in-scope entry
        said then or referring to then (:func:`~graphmem._scoring.score_time_alone`);
        ``None`` when none does or the time is longer than :data:`MAX_TIME_ALONE_DAYS`
        (:data:`MAX_YEARLESS_TIME_ALONE_DAYS` without a year)."""
        if when.longest_days() > (MAX_YEARLESS_TIME_ALONE_DAYS if when.yearless else MAX_TIME_ALONE_DAYS):
            return None
        scores = score_time_alone(await self._entry_days(owner, project_id, when), when, self.weights)
        return scores if scores.final else None

    async def _related_candidates(
        self, text: str, tokens: Sequence[str], language: str | None
    ) -> dict[str, tuple[tuple[str, float], ...]]:
        """The query tokens read through related words, each with the words related to it
        (the table of :mod:`graphmem._related`): none when related words are off
        (``ScoringWeights.related_words``) or weigh nothing, or the query is not English.
        A token is read so when the table says it is mostly a noun or an adjective and the
        query does not write it as a name (capitalised inside a sentence). The related words
        are candidates: the search keeps those the user holds (:func:`related_tokens`)."""
        weights = self.weights
        if not weights.related_words or weights.related_word_weight <= 0.0 or language != "en" or not tokens:
            return {}
        table = load_related_words() if related_words_loaded() else await asyncio.to_thread(load_related_words)
        if table is None:
            return {}
        names = {m.group(1).lower() for m in _NAME_INSIDE_SENTENCE.finditer(text)}
        near: dict[str, tuple[tuple[str, float], ...]] = {}
        for token in tokens:
            if token not in near and token not in names and table.reads_related(token):
                if found := table.related(token):
                    near[token] = found
        return near

    async def _term_groups(
        self,
        owner: Owner,
        tokens: Sequence[str],
        entity_names: Sequence[str],
        corpus: CorpusStats,
        owner_names: _OwnerNames,
    ) -> TermGroups | None:
        """The groups the query's linked names stand for (``None``: none links another
        name): each group's names, and the words a linked name is spelled as in the names
        of its group ("katharine" for "katherine"), keyed by the query's own term (the
        first in sorted order, so that the keys never depend on the query's word order)."""
        linked = sorted(e for e in entity_names if corpus.entity_df.get(e))
        if all(corpus.speaker_tokens.issuperset(_NAME_WORD.findall(e)) for e in linked):
            return None  # nothing, or speakers' names only: those are never grouped

        names, speakers = await owner_names.both()
        groups = entity_groups(names, speakers)
        entity_key: dict[str, str] = {}
        words: set[str] = set()
        for name in linked:
            group = groups.names_like(name)
            if len(group) > 1:
                key = next((entity_key[n] for n in group if n in entity_key), name)
                entity_key.update(dict.fromkeys(group, key))
                words.update(w for n in group for w in n.split())
        token_key: dict[str, str] = {}
        for token in sorted(set(tokens)):
            spelled = {v for v in groups.variant_words.get(token, ()) if v in words}
            if spelled and token in words:
                members = {token, *spelled}
                key = next((token_key[t] for t in sorted(members) if t in token_key), token)
                token_key.update(dict.fromkeys(members, key))
        if not entity_key:
            return None
        return TermGroups(token_key, entity_key)

    async def _names(self, owner: Owner) -> tuple[frozenset[str], SpeakerWords]:
        """The names of the owner's ``Entity`` nodes and its speakers' words: what
        :func:`graphmem._entities.entity_groups` groups by. By default
        :meth:`_entity_names` and :meth:`_speakers`; a backend may read both at once."""
        return await self._entity_names(owner), await self._speakers(owner)

    async def _name_variants(
        self,
        owner: Owner,
        text: str,
        tokens: Sequence[str],
        corpus: CorpusStats,
        language: str | None,
        read: _OwnerNames,
    ) -> tuple[dict[str, str], list[CrossScriptName]]:
        """Query tokens that no entry holds, written capitalised in the query, and the name
        each spells another way (see :func:`speaker_variant` for the rule): a speaker's
        name first; else a word of a name the user's entries mention (an ``Entity``). And
        where the query writes a speaker's name kept in Latin letters in its own script
        (:func:`graphmem._name_sounds.cross_script_names`: 卡罗琳 for Caroline)."""
        found: dict[str, str] = {}
        across: list[CrossScriptName] = []
        unknown = [t for t in tokens if not corpus.token_df.get(t)]
        # Only the first few are read through the user's tokens (a question has a few).
        tried = unknown[:MAX_RESPELLED_WORDS]
        if not text.isascii() and has_uncased_letters(text):
            # Han, kana, Devanagari, ...: no capitals tell a name, so the names are looked
            # for in the text (see graphmem._spelling.uncased_name_variants). A speaker
            # named in Latin letters first: a tagger marked the span as a person's name.
            entity_names, speakers = await read.both()
            across = cross_script_names(text, speakers)
            names = speakers | {w for name in entity_names for w in name.split()}
            found.update(
                (span, variant)
                for span, variant in uncased_name_variants(text, names).items()
                if not any(span in name.span or name.span in span for name in across)
            )
            for word in tried:
                if word not in found and (variant := await self._uncased_word_variant(owner, word)):
                    found[word] = variant
        capitalised = _capitalised_words(text)
        found.update(await self._names_others_call_speakers(tokens, corpus, capitalised, read, owner))
        if not unknown:
            return found, across
        found.update(await self._names_in_lowercase(owner, text, unknown, capitalised))
        found.update(await self._typo_variants(owner, [t for t in tried if t not in capitalised], language))
        found.update(await self._accent_variants(owner, [t for t in tried if t not in found]))
        unknown = [t for t in unknown if t in capitalised and t not in found]
        if not unknown:
            return found, across
        said = await read.speaker_words()
        speakers = said.words
        found.update(
            (t, variant)
            for t in unknown
            if (variant := speaker_variant(t, speakers, handles=said.as_user)) is not None
        )
        unknown = [t for t in unknown if t not in found]
        if unknown:
            # A speaker's name is linked by the speaker rule alone: a near miss of it
            # must not turn into some other name an entry happens to mention.
            words = entity_name_words((await read.both())[0]) - speakers
            found.update((t, variant) for t in unknown if (variant := speaker_variant(t, words)) is not None)
        unknown = [t for t in unknown if t not in found][:MAX_RESPELLED_WORDS]
        if unknown and language in LATIN_LANGUAGES:
            # Spanish, French, German, Italian, Portuguese: no entity recogniser here, so a
            # name an entry mentions is only a token ("Jennifer"). A capitalised word read
            # against the user's tokens, as a name is ("Yénifer"), never by a short form.
            found.update(await self._names_among_tokens(owner, unknown, speakers))
        return found, across

    async def _names_others_call_speakers(
        self, tokens: Sequence[str], corpus: CorpusStats, capitalised: AbstractSet[str], read: _OwnerNames, owner: Owner
    ) -> dict[str, str]:
        """Query words written as names (among ``capitalised``, the query's words written
        with a capital; the owner's names read through ``read``) that the user's entries
        hold but that are no word of a speaker's name, each read as the speaker's name it
        spells another way (:func:`speaker_variant`): a speaker shown as "Mel", whom the
        others call Melanie, asked about as Melanie. Only in a query that names no speaker as written, and only
        where the entries tell it is that speaker's name: an ``Entity`` of that name, if
        there is one, is a person ("Melbourne" is no "Mel"), and the others write the word
        more often than the speaker does (one's own entries naming a "Melanie" tell of
        someone else; one stray turn, a slip or a quote, does not)."""
        if not corpus.speaker_tokens.isdisjoint(tokens):
            return {}
        held = [t for t in tokens if t in capitalised and corpus.token_df.get(t)][:MAX_RESPELLED_WORDS]
        if not held:
            return {}
        # A word naming an Entity: the names will be read to group it anyway (_term_groups).
        if any(corpus.entity_df.get(t) for t in held):
            await read.both()
        said = await read.speaker_words()
        variants = {
            t: name
            for t in held
            if t not in said.words and (name := speaker_variant(t, said.words, handles=said.as_user)) is not None
        }
        if not variants:
            return {}
        uses = await self._name_uses(owner, sorted(variants))
        return {
            word: name
            for word, name in variants.items()
            if (use := uses.get(word)) is not None
            and use.label in (None, "PERSON")
            and 2 * sum(n for author, n in use.authors.items() if name in speaker_tokens(author))
            < sum(use.authors.values())
        }

    async def _names_among_tokens(
        self, owner: Owner, words: Sequence[str], speakers: AbstractSet[str]
    ) -> dict[str, str]:
        """The capitalised query words (held by no entry, no near miss of a speaker's name)
        that spell one of the owner's tokens another way as names are (:func:`speaker_variant`
        without short forms), and that token: for languages whose pipeline recognises no
        names, where a name an entry mentions is a token only."""
        found: dict[str, str] = {}
        for word in words:
            if len(word) < 3 or speaker_variant(word, speakers) is not None:
                continue
            bare = fold_accents(word)
            tokens: set[str] = set()
            for first in dict.fromkeys((word[0], *name_starts(word))):
                tokens.update(await self._tokens_like(owner, first, len(bare) - 2, len(word) + 2))
            if (variant := speaker_variant(word, tokens - speakers, short_forms=False)) is not None:
                found[word] = variant
        return found

    async def _names_in_lowercase(
        self, owner: Owner, text: str, unknown: Sequence[str], capitalised: set[str]
    ) -> dict[str, str]:
        """Query words written in lowercase that are words of a speaker's name or of a
        name an entry mentions, but that the pipeline read as a word form no entry holds
        ("what did maria say": the lemma "mare"), each with its name spelling ("Maria"): a
        query has no NER, so only a capital tells a name from a word. Words read as
        themselves ("melanie", "rose" when some entry holds "rise") are left as they are."""
        unheld = set(unknown)
        suspects = set()
        for word in {w for w in _WORD.findall(text) if w.islower() and w not in capitalised and w not in unheld}:
            if unheld.intersection((await self.decompose_query(word)).tokens):
                suspects.add(word)
        if not suspects:
            return {}
        names = await self._name_words_among(owner, suspects)
        return {w: w[:1].upper() + w[1:] for w in suspects if w in names}

    async def _name_words_among(self, owner: Owner, words: AbstractSet[str]) -> AbstractSet[str]:
        """The words of the user's names (a speaker's, or one an entry mentions) among
        ``words``; the entity names are read only when the speakers' do not cover them."""
        names = (await self._speakers(owner)).words
        if not words <= names:
            names = names | entity_name_words(await self._entity_names(owner))
        return words & names

    async def _names_as_written(self, owner: Owner, text: str, parts: Decomposition) -> Decomposition:
        """``parts`` with each word of the user's names that opens a sentence of ``text``
        read as the name: a query has no NER, so a capital at a sentence's start tells
        nothing, and the lemma table reads "Maria" as "mare" and "Rose" as "rise". A word
        of a speaker's name or of a name an entry mentions is the name there; the lemma
        stays too when another word of the query gives it.

        A stop word ("Will", "May") opens questions as often as it names someone ("Will
        she come?"): it is read as the name only where nothing else can be meant, written
        possessive ("Will's dog?") or alone ("Will?")."""
        lemma_of: dict[str, str | None] = {}
        named_only: set[str] | None = None  # read once, when a stop word asks
        held = set(parts.tokens)  # (a tuple's every member compared, for each word of a long query)
        for word in _capitalised_words(text):
            if word in held:
                continue  # read as written already (inside a sentence)
            lone = (await self.decompose_query(word)).tokens
            if len(lone) == 1 and lone[0] != word and lone[0] in held:
                lemma_of[word] = lone[0]
            elif not lone:
                named_only = _named_only(text) if named_only is None else named_only
                if word in named_only:
                    lemma_of[word] = None  # a stop word: no token at all unless it is the name
        if not lemma_of:
            return parts
        names = await self._name_words_among(owner, set(lemma_of))
        lemma_of = {word: lemma for word, lemma in lemma_of.items() if word in names}
        if not lemma_of:
            return parts
        rest = re.sub(
            "|".join(rf"(?<!\w){re.escape(word)}(?!\w)" for word in lemma_of), " ", text, flags=re.IGNORECASE
        )
        also = set((await self.decompose_query(rest)).tokens)
        as_name = {lemma: word for word, lemma in lemma_of.items() if lemma is not None and lemma not in also}
        tokens = [as_name.get(t, t) for t in parts.tokens]
        tokens += [word for word, lemma in lemma_of.items() if lemma is None or lemma in also]
        return dataclasses.replace(parts, tokens=tuple(dict.fromkeys(tokens)))

    async def _delete_matches(self, owner: Owner, scope: str | None, query: str, *, only_project: str | None) -> int:
        """Delete the entries of ``scope`` in ``only_project`` (``None``: the global ones)
        that match ``query``; returns how many. Which entries match is decided in the delete's
        own write (:meth:`_delete_matching`), not by a read before it: a restore that keeps an
        entry's id with other text, committing between the two, would lose its new entry."""
        matcher = await self._delete_matcher(owner, query, only_project=only_project)
        if matcher is None:
            return 0
        return await self._delete_matching(owner, scope, *matcher)

    async def _delete_matcher(
        self, owner: Owner, query: str, *, only_project: str | None
    ) -> tuple[NeighbourhoodRequest, Callable[[CandidateStats], bool]] | None:
        """What a delete by ``query`` reads (every entry holding one of its terms) and which
        of those it deletes; ``None``: it deletes nothing."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        ensure_unicode(query, "query")
        check_query_length(query)
        # The query's words as a search reads them: a time it names ("on 3 May 2023") is
        # no words to match ("May", "2023", "3" would take every entry saying them), even
        # when it is all the query says (a search then matches its words: a ranking can
        # afford that fallback, a delete cannot).
        when, text, parts = await self._query_words(query, datetime.now(UTC), words_of_a_time_alone=False)
        parts = await self._names_as_written(owner, text, parts)  # "Rose" never takes "rise"
        if parts.is_empty or (when is not None and _asks_for_a_time_alone(text, parts)):
            # Nothing but a time, or a time and words asking for what was said then ("what
            # did we talk about on 3 May?"): a search returns that day, a delete nothing.
            return None
        too_little = _single_characters(parts.tokens)

        def matches(c: CandidateStats) -> bool:
            return c.project_id == only_project and _matches_content(c, too_little)

        return NeighbourhoodRequest(tuple(parts.tokens), tuple(e.name for e in parts.entities)), matches

    # ------------------------------------------------------------------ backend primitives

    @abstractmethod
    async def _replace_session(
        self,
        owner: Owner,
        project_id: str | None,
        session_id: str,
        entries: Sequence[PreparedEntry],
    ) -> None:
        """Atomically replace the entries of (owner, project_id, session_id) with ``entries``
        (given in position order), linking with ``NEXT`` the pairs :func:`next_pairs` names:
        positions ``p`` and ``p + 1`` only."""

    async def _replace_sessions(
        self,
        owner: Owner,
        project_id: str | None,
        sessions: Sequence[tuple[str, Sequence[PreparedEntry]]],
    ) -> None:
        """:meth:`_replace_session` for each session, in order. A backend may write several
        sessions per transaction (fewer round trips); each session stays all or nothing."""
        for session_id, entries in sessions:
            await self._replace_session(owner, project_id, session_id, entries)

    @abstractmethod
    async def _postings(
        self,
        owner: Owner,
        project_id: str | None,
        tokens: Sequence[str],
        entities: Sequence[str],
        *,
        with_times: bool = False,
    ) -> TermPostings:
        """For each of ``tokens`` and ``entities``, the in-scope entries (global, or global
        plus ``project_id``) holding it, as keys of the backend's own that
        :meth:`_neighbourhood` accepts in ``NeighbourhoodRequest.around``; ``with_times``:
        and each holder's day and ``time_refs`` as ordinals (``TermPostings.days``)."""

    @abstractmethod
    async def _neighbourhood(
        self, owner: Owner, project_id: str | None, request: NeighbourhoodRequest
    ) -> list[CandidateStats]:
        """The bounded neighbourhood ``request`` names, in scope: the entries ``around``
        (``None``: every in-scope entry holding a request term) and every entry within
        ``reach`` ``NEXT`` steps of one, each once, with the request terms it holds
        (possibly none), its project, the ids of its neighbours one and two steps away, its
        author, its position and (``with_times``) its day and ``time_refs``. Keys naming no
        entry of the owner (any more) are skipped. No rule of the search lives here
        (:mod:`graphmem._gathering` decides what to read)."""

    @contextlib.asynccontextmanager
    async def _claiming_ids(self, entry_ids: Sequence[str]) -> AsyncIterator[None]:
        """Hold ``entry_ids`` while a restore checks that no entry holds them and stores its
        entries: a second restore of one of them meanwhile raises
        :class:`EntryIdConflictError`. This default holds nothing, for a backend whose store
        refuses a second entry with an id when it commits (Neo4j's uniqueness constraint)."""
        yield

    async def _session_authors(self, owner: Owner, project_id: str | None, session_id: str) -> set[str]:
        """The authors of a session's entries in one scope (what an append reads to tell a
        name addressed from a name told of). Optional: without it (this default), an append
        judges by its own entries' authors only."""
        return set()

    async def _session_entries(self, owner: Owner, project_id: str | None, session_id: str) -> list[StoredEntry]:
        """The entries of (owner, project_id, session_id), in position order. This default
        reads every entry of the owner (:meth:`_all_entries`); a backend should read its
        session index instead."""
        entries = [
            e for e in await self._all_entries(owner) if e.session_id == session_id and e.project_id == project_id
        ]
        return sorted(entries, key=lambda e: e.position)

    async def _entries_around(
        self, owner: Owner, project_id: str | None, entry_ids: Sequence[str], reach: int
    ) -> list[CandidateStats]:
        """The owner's entries with these ids (in scope: global, plus ``project_id``'s) and
        every entry within ``reach`` ``NEXT`` steps of one, each with its author, its
        position and its neighbours one step away, nothing matched: what rule 7 (replies)
        walks. Unlike
        :meth:`_neighbourhood`, keyed by entry id, which a search knows of what it ranked.
        Optional: this default reads nothing, so a backend without it folds no reply (no
        run is known to be answered) and ranks as with ``fold_replies=False``."""
        return []

    async def _fetch_entries_around(
        self, owner: Owner, project_id: str | None, entry_ids: Sequence[str], reach: int
    ) -> tuple[list[StoredEntry], list[CandidateStats]]:
        """:meth:`_fetch_entries` and :meth:`_entries_around` of the same ids: a server
        answers both in one round trip."""
        return await self._fetch_entries(owner, entry_ids), await self._entries_around(
            owner, project_id, entry_ids, reach
        )

    @abstractmethod
    async def _term_stats(self, owner: Owner, tokens: Sequence[str], entities: Sequence[str]) -> CorpusStats:
        """The owner's entry count, the degrees of the query's term nodes (every project),
        and which query tokens are words of a speaker's name."""

    async def _term_stats_or_gather(
        self,
        owner: Owner,
        project_id: str | None,
        tokens: Sequence[str],
        entities: Sequence[str],
        *,
        full_at_most: int,
        with_times: bool = False,
        prefetch_df_share: float | None = None,
    ) -> FirstRead:
        """:meth:`_term_stats`, and optionally more of what the search will read next: when
        the owner holds at most ``full_at_most`` entries, the full gathering
        (:meth:`_neighbourhood` of every holder, ``reach`` 0); else the :meth:`_postings`
        of the terms held by at most ``prefetch_df_share`` of its entries (``None``: none).
        A backend whose every read is a round trip answers them at once; by default only
        the statistics are read (the search reads the rest when it needs it)."""
        return FirstRead(await self._term_stats(owner, tokens, entities))

    async def _typo_variants(self, owner: Owner, words: Sequence[str], language: str | None) -> dict[str, str]:
        """The query words (lowercase, held by no entry) that misspell one of the owner's
        tokens, and that token (see :mod:`graphmem._spelling`); a word of the query's
        ``language`` is no typo, by its lemma table when it has one."""
        found: dict[str, str] = {}
        # Loaded already: the query was decomposed by it.
        pipeline = None if language is None else self._decomposer.pipeline_for(language)
        lemmas = None if pipeline is None else pipeline.lemmas
        for word in words:
            if not is_typo_candidate(word, language, lemmas):
                continue
            limit = max_edits(word)
            # A token may be shorter by an ending too: the word may misspell one of its forms.
            similar = await self._tokens_like(
                owner, word[0], len(word) - limit - MAX_ENDING_LETTERS, len(word) + limit
            )
            variant = typo_variant(word, similar)
            if variant is not None:
                found[word] = variant
        return found

    async def _accent_variants(self, owner: Owner, words: Sequence[str]) -> dict[str, str]:
        """The query words (held by no entry) that the owner's entries hold with other
        accents, and that token (see :func:`graphmem._spelling.accent_variant`). Tokens are
        read by first letter, as written and without its accent ("École" reads those that
        start with "é" and "e"); one written with an accent on the first letter is not found
        from a word without it ("ecole" does not read "école")."""
        found: dict[str, str] = {}
        for word in words:
            if not is_accent_candidate(word):
                continue
            key = fold_accents(word)
            similar: list[str] = []
            for first in dict.fromkeys((word[0], key[0])):
                # A token as long as the word without its accents, or longer by combining marks.
                similar += await self._tokens_like(owner, first, len(key), len(word) + len(key))
            if (variant := accent_variant(word, similar)) is not None:
                found[word] = variant
        return found

    async def _uncased_word_variant(self, owner: Owner, word: str) -> str | None:
        """The owner's token that a query word in a script without capitals spells another
        way (see :func:`graphmem._spelling.uncased_word_variant`), or ``None``."""
        if len(word) < MIN_UNCASED_NAME or not is_uncased_word(word):
            return None
        return uncased_word_variant(word, await self._tokens_like(owner, word[0], len(word) - 1, len(word) + 1))

    async def _tokens_like(self, owner: Owner, first: str, min_length: int, max_length: int) -> list[str]:
        """The owner's token values that start with ``first`` and have ``min_length`` to
        ``max_length`` characters. By default read through :meth:`_entry_terms` of every
        entry; a backend may read its token nodes directly."""
        entries = await self._all_entries(owner)
        terms = await self._entry_terms(owner, [e.entry_id for e in entries])
        return sorted(
            {
                t
                for parts in terms.values()
                for t in parts.tokens
                if t.startswith(first) and min_length <= len(t) <= max_length
            }
        )

    async def _entity_names(self, owner: Owner) -> frozenset[str]:
        """The names of the owner's ``Entity`` nodes. By default read through
        :meth:`_entry_terms` of every entry; a backend may read its entity nodes directly."""
        entries = await self._all_entries(owner)
        terms = await self._entry_terms(owner, [e.entry_id for e in entries])
        return frozenset(e.name for parts in terms.values() for e in parts.entities)

    async def _speakers(self, owner: Owner) -> SpeakerWords:
        """The owner's tokens that are words of a speaker's name (``Token.speaker``), and
        those of them naming an author in the role ``"user"`` (``Token.user_speaker``). By
        default read through :meth:`_all_entries`; a backend may read its token nodes."""
        said = {(e.memory.author, e.memory.content.role) for e in await self._all_entries(owner)}
        return SpeakerWords(
            frozenset().union(*(speaker_tokens(author) for author, _ in said)),
            frozenset().union(*(speaker_tokens(author) for author, role in said if role == "user")),
        )

    async def _name_uses(self, owner: Owner, words: Sequence[str]) -> dict[str, NameUse]:
        """For each of ``words`` that the owner's entries hold as a token, how they use it
        (:class:`NameUse`); a word no entry holds is left out. By default read through
        :meth:`_entry_terms` of every entry; a backend may read its nodes directly."""
        wanted = set(words)
        entries = await self._all_entries(owner)
        terms = await self._entry_terms(owner, [e.entry_id for e in entries])
        authors: dict[str, Counter[str]] = {}
        labels: dict[str, str] = {}
        for entry in entries:
            parts = terms.get(entry.entry_id)
            if parts is None:
                continue
            for token in wanted.intersection(parts.tokens):
                authors.setdefault(token, Counter())[entry.memory.author] += 1
            for entity in parts.entities:
                if entity.name in wanted:
                    labels.setdefault(entity.name, entity.label)
        return {t: NameUse(found, labels.get(t)) for t, found in authors.items()}

    @abstractmethod
    async def _fetch_entries(self, owner: Owner, entry_ids: Sequence[str]) -> list[StoredEntry]:
        """Return the owner's entries with these ids (missing ids are skipped)."""

    async def _append_to_session(
        self,
        owner: Owner,
        project_id: str | None,
        session_id: str,
        entries: Sequence[PreparedEntry],
    ) -> None:
        """Atomically add ``entries`` (prepared at positions 0, 1, ...) after the last entry of
        (owner, project_id, session_id): moved by :func:`continued` to the positions after
        it and linked to it with ``NEXT``, under the lock that serialises writes of that
        session. Not abstract, so that a backend of another package keeps working."""
        raise UnsupportedOperationError(f"{type(self).__name__} does not support append_to_session()")

    async def _locate_entries(self, entry_ids: Sequence[str]) -> list[tuple[Owner, StoredEntry]]:
        """The entries with these ids, of any owner, each with its owner (ids not stored
        are skipped)."""
        raise UnsupportedOperationError(f"{type(self).__name__} does not support restore_session()")

    async def _entry_terms(self, owner: Owner, entry_ids: Sequence[str]) -> dict[str, Decomposition]:
        """The tokens and entities (with their nodes' labels) linked to these entries of
        the owner, in any order (ids the owner does not hold are skipped)."""
        raise UnsupportedOperationError(f"{type(self).__name__} does not support entry_terms()")

    async def _insert_entry(self, owner: Owner, entry: PreparedEntry) -> None:
        raise UnsupportedOperationError(f"{type(self).__name__} does not support add_entry()")

    async def _restore_loose_entries(self, owner: Owner, held: Sequence[str], entries: Sequence[PreparedEntry]) -> None:
        """Replace the owner's entries ``held`` (ids ``entries`` reuse) by ``entries``, outside
        any session. A backend that can should do it as one write, so that a failure stores
        none of it (Neo4j does); this default deletes, then inserts one by one."""
        if held:  # replaced: the store allows one entry per id
            await self._delete_entries(owner, held)
        for entry in entries:
            await self._insert_entry(owner, entry)

    async def _list_recent(self, owner: Owner, limit: int, scope: RecentScope | None) -> list[StoredEntry]:
        """The owner's newest ``limit`` entries, newest first (``scope``: only the entries it
        holds; ``None``: every entry)."""
        raise UnsupportedOperationError(f"{type(self).__name__} does not support list_recent()")

    async def _entity_mentions(
        self, owner: Owner, name: str, scope: RecentScope, limit: int
    ) -> tuple[int, list[str]]:
        """How many of the owner's entries in ``scope`` mention the entity ``name``, and the
        ids of the newest ``limit`` of them, newest first (ordered as :meth:`_list_recent`)."""
        raise UnsupportedOperationError(f"{type(self).__name__} does not support entity_mentions()")

    async def _next_links(self, owner: Owner, entry_ids: Sequence[str]) -> list[tuple[str, str]]:
        """The ``NEXT`` links (earlier id, later id) from an owner's entry among ``entry_ids``
        to another among them."""
        raise UnsupportedOperationError(f"{type(self).__name__} does not support next_links()")

    async def _delete_entries(self, owner: Owner, entry_ids: Sequence[str]) -> int:
        raise UnsupportedOperationError(f"{type(self).__name__} does not support delete_entries()")

    async def _delete_matching(
        self,
        owner: Owner,
        scope: str | None,
        request: NeighbourhoodRequest,
        matches: Callable[[CandidateStats], bool],
    ) -> int:
        """Delete the entries of :meth:`_neighbourhood` ``(owner, scope, request)`` that
        ``matches`` accepts; returns how many. A backend should read them and delete them in
        one write holding the user's lock (both backends do), so that an entry rewritten
        meanwhile (a restore keeping its id, with other text) is judged as it is when
        deleted. This default reads, then deletes, so a backend of another package keeps
        working."""
        ids = [c.entry_id for c in await self._neighbourhood(owner, scope, request) if matches(c)]
        return await self._delete_entries(owner, ids) if ids else 0

    async def _delete_session(self, owner: Owner, session_id: str) -> int:
        raise UnsupportedOperationError(f"{type(self).__name__} does not support delete_session()")

    async def _delete_project(self, owner: Owner, project_id: str) -> int:
        raise UnsupportedOperationError(f"{type(self).__name__} does not support delete_project()")

    async def _delete_user(self, owner: Owner) -> int:
        raise UnsupportedOperationError(f"{type(self).__name__} does not support delete_user()")

    async def _entry_days(
        self, owner: Owner, project_id: str | None, when: QueryTime
    ) -> list[tuple[str, int, tuple[tuple[int, int], ...]]]:
        """The id, the day said and the day ranges referred to (ordinals) of every in-scope
        entry that may match ``when`` (at least those that do; which do is the scorer's
        rule, :func:`~graphmem._scoring.score_time_alone`), for a question that names a time
        and nothing else. This default reads every entry of the owner
        (:meth:`_all_entries`) and resolves its text's times."""
        return [
            (
                e.entry_id,
                e.memory.timestamp.date().toordinal(),
                tuple(r.ordinals for r in mentioned_ranges(e.memory.text, e.memory.timestamp)),
            )
            for e in await self._all_entries(owner)
            if e.project_id is None or e.project_id == project_id
        ]

    async def _all_entries(self, owner: Owner) -> list[StoredEntry]:
        raise UnsupportedOperationError(f"{type(self).__name__} does not support list_entries()")

    async def _stats(self, owner: Owner | None) -> MemoryStats:
        raise UnsupportedOperationError(f"{type(self).__name__} does not support stats()")

    async def _scope_stats(self, owner: Owner, project_id: str | None) -> MemoryStats:
        raise UnsupportedOperationError(f"{type(self).__name__} does not support scope_stats()")

    async def _ping(self) -> None:  # noqa: B027 - optional hook: by default reachable
        """Raise ``BackendUnavailableError`` when the backend cannot be reached."""


_note_public_calls(MemoryService)


def _forms_of(near: Mapping[str, Sequence[tuple[str, float]]], tokens: Sequence[str]) -> tuple[str, ...]:
    """The candidate related forms that are no query tokens, each once, in order."""
    query = set(tokens)
    return tuple(dict.fromkeys(form for found in near.values() for form, _ in found if form not in query))


def related_tokens(
    near: Mapping[str, Sequence[tuple[str, float]]],
    tokens: Sequence[str],
    corpus: CorpusStats,
    groups: TermGroups | None,
) -> dict[str, tuple[str, float]]:
    """The user's tokens related to a query word (rule "Related words" of
    :mod:`graphmem._scoring`), each with that word and their similarity: a candidate of
    ``near`` that an entry holds, that is no query term, no speaker's name and in no group,
    for a query word that is no speaker's name and in no group. A token related to two
    query words is read through the more similar one (then the first in sorted order)."""
    query = set(tokens)
    grouped = groups.tokens if groups is not None else {}
    speakers = corpus.speaker_tokens
    found: dict[str, tuple[str, float]] = {}
    for word in sorted(near):
        if word not in query or word in speakers or word in grouped:
            continue
        for form, similarity in near[word]:
            if form in query or form in grouped or form in speakers or not corpus.token_df.get(form):
                continue
            if form not in found or similarity > found[form][1]:
                found[form] = (word, similarity)
    return found


def _only(corpus: CorpusStats, tokens: Sequence[str]) -> CorpusStats:
    """``corpus`` restricted to ``tokens`` (and its entities): the statistics of the query."""
    keep = set(tokens)
    return CorpusStats(
        corpus.entry_count,
        {t: df for t, df in corpus.token_df.items() if t in keep},
        corpus.entity_df,
        corpus.speaker_tokens & keep,
        corpus.asked_about,
    )


def _participants(entries: Sequence[MemoryEntry]) -> set[str]:
    """Everyone who speaks in a conversation: a turn that merely addresses one of the
    others by name does not take the name as content (see graphmem._decompose)."""
    return {t for e in entries for t in author_tokens(e.author)}


def _own_terms(
    entry: MemoryEntry, parts: Decomposition, participants: set[str], name_tokens: Sequence[str]
) -> Decomposition:
    """An entry's terms: its text's, less the names it only addresses, plus its author's
    (the words of the name, and ``name_tokens``: the Han and kana tokens a text saying it
    gives), plus the type tokens of the entities it names (see :mod:`graphmem._answer_types`).
    Only the words are the speaker's (``speaker_tokens``): a character of the name is no
    name of the speaker ("美" is also in "由美")."""
    own = author_tokens(entry.author)
    addressed = addressed_names(entry.text, participants.difference(own))
    # A word written like a type token ("@place") is no claim that the entry names a place.
    tokens = dict.fromkeys(t for t in parts.tokens if t not in addressed and t not in TYPE_TOKENS)
    tokens.update(dict.fromkeys(own))
    tokens.update(dict.fromkeys(name_tokens))
    entities = tuple(e for e in parts.entities if e.name not in addressed)
    tokens.update(dict.fromkeys(type_tokens(entities)))
    return Decomposition(tokens=tuple(tokens), entities=entities, language=parts.language)


def _prepared_entry(stored: StoredEntry, terms: Decomposition) -> PreparedEntry:
    # Longer "words" are blobs nobody searches for, and too long for Neo4j's term index.
    return PreparedEntry(
        stored=stored,
        tokens=tuple(t for t in terms.tokens if len(t) <= MAX_TERM_LENGTH),
        entities=tuple(e for e in terms.entities if len(e.name) <= MAX_TERM_LENGTH),
    )


def restored_positions(positions: Sequence[int | None], *, in_session: bool) -> list[int]:
    """The positions of restored entries: as given, or 0, 1, 2, ... for a session whose
    entries give none (0 for an entry outside any session, as ``add_entry`` stores it).

    Raises:
        ValueError: a position that is no integer from 0 to :data:`MAX_POSITION` (2**62);
            a session with positions on some entries only, or positions that do not increase.
    """
    given = [p for p in positions if p is not None]
    for position in given:
        if not isinstance(position, int) or isinstance(position, bool) or not 0 <= position <= MAX_POSITION:
            raise ValueError(f"a position must be an integer from 0 to 2**62, got {position!r}")
    if not in_session:
        return [0 if p is None else p for p in positions]
    if not given:
        return list(range(len(positions)))
    if len(given) != len(positions):
        raise ValueError("give every entry of a session a position, or none (they are then numbered 0, 1, 2, ...)")
    if any(later <= earlier for earlier, later in zip(given, given[1:], strict=False)):
        raise ValueError(f"the positions of a session's entries must increase, got {given}")
    return given
