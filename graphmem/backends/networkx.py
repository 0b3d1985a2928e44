"""``GraphMemoryService``: the memory graph in a networkx ``DiGraph`` inside the process.

Node keys are tuples — ``("Entry", app, user, id)``, ``("Token", app, user, value)``,
``("Entity", app, user, name)`` — so two users' graphs can never share a node and no
joined string can collide. Nodes carry the same labels (``__labels__``, the attribute
grand-cypher reads) and properties as the Neo4j backend.

Search touches only the postings of the query's token and entity nodes (their incoming
``HAS_TOKEN`` / ``MENTIONS`` edges), never every entry.

Memory (benchmarks/README.md measures it): the graph's dicts are written directly, every
edge of a type shares one attribute dict, every node key and name is one interned object,
and an entry keeps no pydantic models (see ``_Entry``).

With ``path=...`` every write is first appended to the user's segment of the journal
(see :mod:`graphmem.backends._journal`) and ``fsync``-ed, then applied in memory; the
store reloads from the journal on first use (from each user's snapshot and the segment's
lines after it, where a snapshot is valid; a writer snapshots users with a long tail when it
opens and closes the store). A writable service holds the store's writer lock from its
first call until ``close()``; ``read_only=True`` takes no lock and never writes. A write's
file I/O (its fsync, the compaction after a removal, a snapshot) holds only that user's
lock; the lock guarding the in-memory graph is held for in-memory work only.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import contextvars
import logging
import operator
import os
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime
from itertools import chain
from typing import TYPE_CHECKING, Any, TypeVar

import networkx as nx

from graphmem._chat_phrases import is_reaction
from graphmem._collector import collector_paused
from graphmem._decompose import Decomposer, Decomposition, Entity, speaker_tokens
from graphmem._errors import (
    BackendUnavailableError,
    EntryIdConflictError,
    JournalCompactionError,
    JournalCorruptError,
    ReadOnlyStoreError,
)
from graphmem._gathering import IN_PROCESS_FULL_GATHERING_ENTRIES, Days, NeighbourhoodRequest, TermPostings
from graphmem._models import MAX_POSITION, Content, MemoryEntry, Part, as_utc, ensure_unicode, quote_ids
from graphmem._scoring import CandidateStats, CorpusStats, ScoringWeights, matching_days
from graphmem._service import (
    MAX_REACTIONS_LINKED_ACROSS,
    CypherView,
    MemoryService,
    MemoryStats,
    NameUse,
    Owner,
    PreparedEntry,
    RecentScope,
    SpeakerWords,
    StoredEntry,
    appended_start,
    linked_after,
)
from graphmem.backends._graph_model import (
    ENTITY,
    ENTRY,
    HAS_TOKEN,
    MENTIONS,
    NEXT,
    TOKEN,
    entry_times,
    time_refs,
)
from graphmem.backends._journal import Journal, StoreContents, segment_name

if TYPE_CHECKING:
    from spacy.language import Language

    from graphmem._time import QueryTime

__all__ = ["GraphMemoryService"]

logger = logging.getLogger("graphmem")
#: What a function run in a worker thread returns.
_T = TypeVar("_T")

#: A journal record, or what makes one at the time of its write (see ``_write``).
_Record = dict[str, Any] | Callable[[], dict[str, Any]]


def _made(records: Sequence[_Record]) -> list[dict[str, Any]]:
    return [record() if callable(record) else record for record in records]

# One shared label set per label: a fresh set on every edge cost ~2.7 KB per entry. A plain
# set, not a frozenset: grand-cypher's type() only unwraps a `set`. Never mutate these.
_LABELS = {label: {label} for label in (ENTRY, TOKEN, ENTITY, HAS_TOKEN, MENTIONS, NEXT)}
# And one attribute dict per relationship type, shared by all its edges (a dict per edge
# was the largest part of an entry's memory): edges carry nothing but their type. Never
# mutate these either.
_EDGE = {rel: {"__labels__": _LABELS[rel]} for rel in (HAS_TOKEN, MENTIONS, NEXT)}

#: The ``time_refs`` of every entry whose text refers to no time (most): one list. Never
#: mutate it.
_NO_TIME_REFS: list[str] = []

NodeKey = tuple[str, str, str, str]
SessionKey = tuple[str | None, str]  # (project_id, session_id) inside one owner
_Term = tuple[NodeKey, dict[NodeKey, Any]]  # a term node's key and its incoming edges
_NO_TERMS: frozenset[str] = frozenset()
#: A user's cache of term holders (``_holder_ids``) holds at most this many ids per entry of
#: the user: ~50 bytes an id (set tables; the strings are the entries' own), so at most
#: ~20 MB at 100k entries, against the ~265 MB the entries hold.
_HOLDER_CACHE_SHARE = 4


class _HolderCache:
    """One owner's cached term holders: the ids by term node key, least recently read
    first, and how many ids they hold in all (kept as they come and go: summing the sets
    on every miss cost a heavy user's search a pass over the whole cache). Also the
    owner's tokens by first character (``_tokens_like``), built when first asked."""

    __slots__ = ("by_first", "held", "ids")

    def __init__(self) -> None:
        self.ids: dict[NodeKey, frozenset[str]] = {}
        self.held = 0
        self.by_first: dict[str, list[str]] | None = None


class _Entry:
    """An entry as this store keeps it: the fields a search reads, beside its node's
    properties (``props``, the very dict the graph holds, which has the rest).

    No pydantic models are kept (the three of an entry cost more than its text):
    :meth:`stored` builds the :class:`StoredEntry` when one is asked for.
    """

    __slots__ = ("key", "entry_id", "project_id", "session_id", "position", "author", "timestamp", "props", "_days")

    def __init__(
        self,
        key: NodeKey,
        project_id: str | None,
        session_id: str | None,
        position: int,
        author: str,
        timestamp: datetime,
        props: dict[str, Any],
    ) -> None:
        self.key = key  # the node's key tuple; ``key[3]`` is the id
        self.entry_id = key[3]
        self.project_id = project_id
        self.session_id = session_id
        self.position = position
        self.author = author
        self.timestamp = timestamp
        self.props = props
        self._days: Days | None = None

    def stored(self) -> StoredEntry:
        # Every field was validated when the entry was stored or loaded (ensure_unicode,
        # as_utc): construct without validating again.
        props = self.props
        memory = MemoryEntry.model_construct(
            content=Content.model_construct(role=props["role"], parts=[Part.model_construct(text=props["text"])]),
            author=self.author,
            timestamp=self.timestamp,
        )
        return StoredEntry(
            self.entry_id,
            memory,
            self.session_id,
            self.project_id,
            self.position,
            language=props.get("language"),
            refers_to_time=bool(self.time_refs()),
        )

    def is_reaction(self) -> bool:
        """Whether its text only reacts (:func:`graphmem._chat_phrases.is_reaction`)."""
        return is_reaction(self.props["text"])

    def time_refs(self) -> list[str]:
        """The ``time_refs`` property, computed on first use (parsing every text's time
        expressions made up most of the time a reload took) and then kept in ``props``."""
        props = self.props
        refs: list[str] | None = props.get("time_refs")
        if refs is None:
            refs = props["time_refs"] = time_refs(props["text"], self.timestamp)
        return refs

    def days(self) -> Days:
        """The day it was said and the day ranges it refers to, as ordinals (see
        ``entry_times``), computed on first use: a search with a time reads them for every
        holder of its seed terms."""
        days = self._days
        if days is None:
            days = self._days = entry_times(self.timestamp, self.time_refs())
        return days

    def known_days(self) -> Days | None:
        """:meth:`days` if its ``time_refs`` were computed already, else ``None`` (without
        parsing the text)."""
        if self._days is None and self.props.get("time_refs") is not None:
            return self.days()
        return self._days


class _KnownDays(Mapping[Hashable, "Days"]):
    """The days (:meth:`_Entry.known_days`) of one owner's entries by holder key, read
    when asked; an entry deleted since is missing (a search then takes it as possibly
    matching any time)."""

    __slots__ = ("_own",)

    def __init__(self, own: Mapping[str, _Entry]) -> None:
        self._own = own

    def get(self, key: Hashable, default: Any = None) -> Any:
        entry = self._own.get(key)  # type: ignore[call-overload]  # (holder keys are entry ids)
        if entry is None:
            return default
        known = entry._days  # once computed, read without a call (this runs per holder)
        if known is None and (known := entry.known_days()) is None:
            return default
        return known

    def __getitem__(self, key: Hashable) -> Days:
        known = self.get(key)
        if known is None:
            raise KeyError(key)
        return known  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[Hashable]:
        return (entry.entry_id for entry in self._own.values() if entry.known_days() is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _DaysOfEntries:
    """One owner's entry ids by the UTC day they were said (``date.toordinal()``) and by
    the day ranges their ``time_refs`` name, and the ids of those whose references are not
    read yet (records written before they were kept): in step with every write, so that a
    search with a time in its query finds the holders that may match it by set operations
    (``graphmem._gathering.DayIndex``), not by reading each holder's entry. Ids are kept
    in lists, not sets: a set per day took 2 KB (9 MB at 100k entries said on 4,400 days),
    a list a tenth of it; removals rebuild each list they touch once."""

    __slots__ = ("by_day", "by_ref", "unread", "_days", "_refs", "_span")

    def __init__(self) -> None:
        self.by_day: dict[int, list[str]] = {}
        self.by_ref: dict[tuple[int, int], list[str]] = {}
        self.unread: set[str] = set()
        # The keys of by_day and by_ref in order, and the span of both, made when first
        # read after a change.
        self._days: list[int] | None = None
        self._refs: list[tuple[int, int]] | None = None
        self._span: tuple[int, int] | None = None

    def add(self, entries: Iterable[_Dated]) -> None:
        """Entries ``(entry_id, day, refs)``: said on ``day``, referring to the ranges
        ``refs`` (``None``: references not read). One loop for a whole snapshot's entries
        (opening a 100k store runs it 100k times)."""
        by_day, by_ref, unread = self.by_day, self.by_ref, self.unread
        days_before, refs_before = len(by_day), len(by_ref)
        for entry_id, day, refs in entries:
            by_day.setdefault(day, []).append(entry_id)
            if refs is None:
                unread.add(entry_id)
            else:
                for ref in refs:
                    by_ref.setdefault(ref, []).append(entry_id)
        # Only a new key changes the orders (adding never removes one).
        if len(by_day) != days_before:
            self._days = self._span = None
        if len(by_ref) != refs_before:
            self._refs = self._span = None

    def remove(self, gone: Iterable[_Dated]) -> None:
        """Entries as :meth:`add` was told of them: ``(entry_id, day, refs)``."""
        days_gone: dict[int, set[str]] = {}
        refs_gone: dict[tuple[int, int], set[str]] = {}
        for entry_id, day, refs in gone:
            days_gone.setdefault(day, set()).add(entry_id)
            if refs is None:
                self.unread.discard(entry_id)
            else:
                for ref in refs:
                    refs_gone.setdefault(ref, set()).add(entry_id)
        if _remove_from(self.by_day, days_gone):
            self._days = self._span = None
        if _remove_from(self.by_ref, refs_gone):
            self._refs = self._span = None

    def days(self) -> list[int]:
        days = self._days
        if days is None:
            days = self._days = sorted(self.by_day)
        return days

    def refs(self) -> list[tuple[int, int]]:
        refs = self._refs
        if refs is None:
            refs = self._refs = sorted(self.by_ref)
        return refs

    def span(self) -> tuple[int, int] | None:
        """The first and last day an entry was said on or refers to (``None``: none)."""
        span = self._span
        if span is None:
            days, refs = self.days(), self.refs()
            if not days:
                return None
            # References are ordered by their first day; any may end last.
            span = self._span = (
                min(days[0], refs[0][0]) if refs else days[0],
                max(days[-1], max((hi for _, hi in refs), default=days[-1])),
            )
        return span


def _remove_from(index: dict[Any, list[str]], gone: Mapping[Any, set[str]]) -> bool:
    """Remove the ids ``gone`` names from under each key; whether a key went with them."""
    emptied = False
    for key, ids in gone.items():
        kept = [i for i in index.get(key, ()) if i not in ids]
        if kept:
            index[key] = kept
        elif index.pop(key, None) is not None:
            emptied = True
    return emptied


class _DayIndexView:
    """An owner's :class:`_DaysOfEntries` as a search reads it (``graphmem._gathering.DayIndex``),
    under the service's lock: a write in another thread may change it meanwhile."""

    __slots__ = ("_index", "_lock")

    def __init__(self, index: _DaysOfEntries, lock: threading.RLock) -> None:
        self._index = index
        self._lock = lock

    def span(self) -> tuple[int, int] | None:
        with self._lock:
            return self._index.span()

    def said_in(self, ranges: Sequence[tuple[int, int]]) -> frozenset[Hashable]:
        with self._lock:
            days, by_day = self._index.days(), self._index.by_day
            found: set[Hashable] = set()
            for lo, hi in ranges:
                for day in days[bisect.bisect_left(days, lo) : bisect.bisect_right(days, hi)]:
                    found.update(by_day[day])
            return frozenset(found)

    def referring_to(self, ranges: Sequence[tuple[int, int]], max_days: int) -> frozenset[Hashable]:
        with self._lock:
            refs, by_ref = self._index.refs(), self._index.by_ref
            found: set[Hashable] = set()
            for lo, hi in ranges:
                # A reference of at most max_days days sharing a day with lo..hi starts
                # from max_days - 1 days before lo to hi.
                first = bisect.bisect_left(refs, (lo - max_days + 1,))
                for start, end in refs[first : bisect.bisect_right(refs, (hi, sys.maxsize))]:
                    if end >= lo and end - start + 1 <= max_days:
                        found.update(by_ref[(start, end)])
            return frozenset(found)

    def unread_among(self, keys: Iterable[Hashable]) -> AbstractSet[Hashable]:
        with self._lock:
            unread = self._index.unread
            return unread.intersection(keys) if unread else frozenset()


class _DeferredCompaction:
    """The users whose segment writes inside a :meth:`GraphMemoryService.bulk_writes`
    block left to compact at its end. A task started inside the block copies the context,
    and with it this object: its write may land after the block ended, and then compacts
    at once (the block's end closes it first, under its lock, so no user is added after
    the block read them)."""

    def __init__(self) -> None:
        self._owners: set[Owner] = set()
        self._open = True
        self._lock = threading.Lock()

    @property
    def open(self) -> bool:
        return self._open

    def defer(self, owner: Owner) -> bool:
        """Leave ``owner``'s compaction to the block's end; ``False`` once it has ended."""
        with self._lock:
            if self._open:
                self._owners.add(owner)
            return self._open

    def close(self) -> set[Owner]:
        """End the block: the users left to compact."""
        with self._lock:
            self._open = False
            return set(self._owners)


#: Inside :meth:`GraphMemoryService.bulk_writes`: what a write of this task leaves to the
#: block's end (a context variable: ``asyncio.to_thread`` carries it into the write's
#: thread, and other tasks' writes never see it).
_DEFERRED_COMPACTION: contextvars.ContextVar[_DeferredCompaction | None] = contextvars.ContextVar(
    "graphmem_deferred_compaction", default=None
)


def _recency(entry: _Entry) -> tuple[datetime, int, str, str]:
    """The order of ``list_recent`` and ``entity_mentions``, oldest first (they sort it
    reversed): time, then position, session and id (as cypher/list_recent.cypher orders)."""
    return (entry.timestamp, entry.position, entry.session_id or "", entry.entry_id)


class _OwnerIndex:
    """Who holds each entry id. Ids are unique in a store (a restore refuses one another
    user holds), so an id maps to its one owner; a journal written otherwise (by hand, or
    before that check) still reads whole: an id held twice maps to the set of holders."""

    def __init__(self, pairs: Iterable[tuple[str, Owner]]) -> None:
        self._of: dict[str, Owner | frozenset[Owner]] = {}
        for entry_id, owner in pairs:
            self.add(entry_id, owner)

    def add(self, entry_id: str, owner: Owner) -> None:
        held = self._of.get(entry_id)
        if held is None or held == owner:
            self._of[entry_id] = owner
        else:
            self._of[entry_id] = (held if isinstance(held, frozenset) else frozenset((held,))) | {owner}

    def remove(self, entry_id: str, owner: Owner) -> None:
        held = self._of.get(entry_id)
        if held == owner:
            del self._of[entry_id]
        elif isinstance(held, frozenset):
            rest = held - {owner}
            self._of[entry_id] = next(iter(rest)) if len(rest) == 1 else rest

    def holders(self, entry_id: str) -> tuple[Owner, ...]:
        held = self._of.get(entry_id)
        if held is None:
            return ()
        return tuple(held) if isinstance(held, frozenset) else (held,)


async def _in_thread_to_its_end(func: Callable[..., _T], /, *args: Any) -> _T:
    """``func(*args)`` in a worker thread, awaited to its end even when the awaiting task is
    cancelled (a timeout, a client gone): the cancellation is raised once the thread is done.

    A thread cannot be stopped, so a write cancelled halfway still lands. Returning at the
    cancellation released what the caller holds around the write while it ran on: the
    entry ids an append with ids had claimed, so a retry of those ids passed its check and
    stored them a second time, replacing the first in the graph and listing both in the
    session."""
    future = asyncio.ensure_future(asyncio.to_thread(func, *args))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        while not future.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([future])
        if not future.cancelled() and future.exception() is not None:
            logger.debug("a write whose caller was cancelled failed: %r", future.exception())
        raise


class GraphMemoryService(MemoryService):
    """Memory in a networkx graph; optionally persisted to an fsync-ed journal.

    Has no project support: every project call raises ``ProjectScopingUnsupportedError``
    and changes nothing. Safe under concurrent asyncio tasks and threads (one lock guards
    the graph).

    A store (a journal file) has one writer at a time: a writable service takes the
    store's lock (an ``flock`` on ``PATH.lock``) on its first call, before it reads the
    journal, and keeps it until ``close()``; another writer, in any process, gets
    ``StoreLockedError`` naming the holder. Any number of ``read_only=True`` services can
    read meanwhile: each loads a consistent snapshot of the journal on its first call (it
    does not see later writes; open a new one for that), takes no lock and writes nothing.

    A call that removes entries (a delete, or ``add_session`` replacing a session that
    held entries) returns only once the user's segment has been compacted (rewritten
    from memory; ``delete_user`` deletes it), so the removed text is in no file of the
    store; if compacting fails it raises ``JournalCompactionError``. Only that user's
    data is rewritten, and only that user's writes wait for it.

    Args:
        nlp: spaCy pipeline, pipeline name, or ``None`` for the default.
        path: a journal file to persist to; ``None`` keeps memory in this process only.
        weights: the scorer's constants.
        read_only: with ``path``: read the store without locking or writing it; every
            write raises ``ReadOnlyStoreError``.
        language: every text's language, ``"auto"`` or ``None`` (see :class:`MemoryService`).

    Raises:
        ValueError: ``read_only`` without a ``path``; an unknown ``language``, or one given
            with a ``Decomposer``.
    """

    #: Pruned steps read memory here, no round trip: they pay off in smaller users than on a
    #: server (graphmem._gathering).
    full_gathering_entries: int = IN_PROCESS_FULL_GATHERING_ENTRIES
    #: A read is no round trip here: reading again costs less than reading ahead.
    read_ahead: bool = False

    def __init__(
        self,
        nlp: Language | str | Decomposer | None = None,
        path: str | os.PathLike[str] | None = None,
        *,
        weights: ScoringWeights | None = None,
        read_only: bool = False,
        language: str | None = None,
    ) -> None:
        if read_only and path is None:
            raise ValueError("read_only=True needs a path: a store only in memory has nothing to read")
        super().__init__(nlp, weights=weights, language=language)
        self._graph: nx.DiGraph[Any] = nx.DiGraph()
        self._lock = threading.RLock()
        self._journal = Journal(path, read_only=read_only) if path is not None else None
        self._loaded = self._journal is None
        # Indexes kept beside the graph so a search never scans it.
        self._entries: dict[Owner, dict[str, _Entry]] = defaultdict(dict)
        self._sessions: dict[Owner, dict[SessionKey, list[str]]] = defaultdict(dict)
        self._neighbours: dict[str, tuple[str, ...]] = {}
        #: Per owner, the values of its Token nodes with ``speaker`` true, and of those with
        #: ``user_speaker`` true (indexes of them).
        self._speaker_values: dict[Owner, set[str]] = defaultdict(set)
        self._user_speaker_values: dict[Owner, set[str]] = defaultdict(set)
        #: Who holds each entry id (``_locate_entries``: a restore checks its ids against
        #: every user). Built by the first such call and kept from then on; ``None`` before,
        #: so that a store that only stores and searches never pays its memory.
        self._owner_of: _OwnerIndex | None = None
        #: A reader's users loaded one by one (``_ensure_loaded(owner)``); a writer, or a
        #: reader once asked about everyone, has ``_loaded`` instead.
        self._loaded_owners: set[Owner] = set()
        #: Users whose segment holds text removed from memory: their next write compacts it.
        self._needs_compaction: set[Owner] = set()
        #: One lock per user around its segment's I/O: a user's write (its fsync, its
        #: compaction) never waits for another user's. ``_lock`` guards the in-memory
        #: graph only, and is never held while waiting for a user's lock.
        self._owner_locks: dict[Owner, threading.Lock] = {}
        #: A close is waiting for the writes halfway through (see ``_close_journal``).
        self._closing = False
        #: How many times the journal was closed: a write that loaded the store before a
        #: close must not go on after it (see ``_write_durably``).
        self._closes = 0
        #: Entry ids a restore is checking and storing now (guarded by ``_lock``): entry ids
        #: are unique in the whole store, and two restores of one id must not both pass
        #: their check before either writes (see ``_claiming_ids``).
        self._claimed_ids: set[str] = set()
        #: Per owner, its Token and Entity nodes by value / name: the node's one key tuple
        #: (every edge reuses it, not a copy each) and its incoming edges (its postings).
        self._terms: dict[Owner, tuple[dict[str, _Term], dict[str, _Term]]] = {}
        #: Per owner, the holder ids of terms a search read the postings of, by term node key:
        #: a frozenset is what a search's seed shares intersect, built once and not per search
        #: (at 100k entries freezing 4-tuple keys was a fifth of a search's CPU). Dropped on
        #: any write to the owner; bounded (:data:`_HOLDER_CACHE_SHARE`).
        self._holder_ids: dict[Owner, _HolderCache] = {}
        #: Per owner, its entries by the day they were said (what a query's time matches).
        self._said_days: dict[Owner, _DaysOfEntries] = {}

    # ------------------------------------------------------------------ public extras

    @property
    def path(self) -> str | None:
        """The journal's path (``None``: in memory only)."""
        return None if self._journal is None else str(self._journal.path)

    @property
    def read_only(self) -> bool:
        """Whether this service only reads its store (``read_only=True``)."""
        return self._journal is not None and self._journal.read_only

    @property
    def graph(self) -> nx.DiGraph[Any]:
        """The live graph (read it, do not change it): what ``graphmem cypher`` queries.

        Reading it is a call on the store: after ``close()`` it loads the store again (a
        writer takes its lock again, until the next ``close()``), as any call made after
        ``close()`` does. A graph (or ``cypher_view()``) obtained before ``close()`` is the
        store as it was then: reading it never opens the store again."""
        with self._lock:
            self._ensure_loaded()
            # ``time_refs`` is computed on first use: a query may read any entry's.
            for own in self._entries.values():
                for entry in own.values():
                    entry.time_refs()
            return self._graph

    def cypher_view(self) -> CypherView:
        return CypherView(graph=self.graph)

    async def close(self) -> None:
        """Close the journal and release the store's writer lock (see the base class).

        The service can be used again: a call made after ``close()`` returned reloads the
        store (taking the lock again). A call that was already running when the store was
        closed (awaiting a thread, or between two awaits) does not: at its next read or
        write of the store it raises ``BackendUnavailableError``, having stored nothing, so
        the lock stays free once ``close()`` has returned.
        """
        if self._journal is not None:
            if self._loaded and not self._journal.read_only:
                await asyncio.to_thread(self._snapshot_stale)
            await asyncio.to_thread(self._close_journal)
        await super().close()

    def _close_journal(self) -> None:
        """Close the journal once no write is halfway (between its journal record and its
        change in memory): a close landing there left the record to be replayed by the
        next write's reload on top of its own application (an append applied twice, the
        session's positions shifted, then compacted to disk). Writes that reach their
        user's lock meanwhile are refused; after it, a write reopens the store."""
        with self._lock:
            assert self._journal is not None
            self._closing = True
            locks = list(self._owner_locks.values())
        try:
            for lock in locks:  # never with self._lock held: a writer takes its user's lock first
                lock.acquire()
            try:
                with self._lock:
                    self._journal.close()
                    self._forget()
                    self._closes += 1
            finally:
                for lock in locks:
                    lock.release()
        finally:
            with self._lock:
                self._closing = False

    # ------------------------------------------------------------------ writes

    async def _replace_session(
        self,
        owner: Owner,
        project_id: str | None,
        session_id: str,
        entries: Sequence[PreparedEntry],
    ) -> None:
        record = {
            "op": "replace_session",
            "app_name": owner.app_name,
            "user_id": owner.user_id,
            "project_id": project_id,
            "session_id": session_id,
            "entries": [_entry_record(e) for e in entries],
        }
        await self._write(owner, record)

    async def _append_to_session(
        self,
        owner: Owner,
        project_id: str | None,
        session_id: str,
        entries: Sequence[PreparedEntry],
    ) -> None:
        # The record keeps the positions 0, 1, ...: applying it (now, or on a reload, in the
        # same order) continues from the session's last entry at that point.
        with self._lock:
            self._ensure_loaded(owner)
            kept = self._sessions.get(owner, {}).get((project_id, session_id), ())
            last = self._entries[owner][kept[-1]].position if kept else None
        appended_start(last, len(entries), session_id)
        await self._write(
            owner,
            {
                "op": "append_session",
                "app_name": owner.app_name,
                "user_id": owner.user_id,
                "project_id": project_id,
                "session_id": session_id,
                "entries": [_entry_record(e) for e in entries],
            },
        )

    @contextlib.asynccontextmanager
    async def _claiming_ids(self, entry_ids: Sequence[str]) -> AsyncIterator[None]:
        claimed = set(entry_ids)
        with self._lock:
            taken = sorted(claimed & self._claimed_ids)
            if taken:
                raise EntryIdConflictError(
                    f"entry id {quote_ids(taken[0])} is being stored by another call right now; nothing was "
                    "stored: load each entry id once"
                )
            self._claimed_ids |= claimed
        try:
            yield
        finally:
            with self._lock:
                self._claimed_ids -= claimed

    async def _restore_loose_entries(self, owner: Owner, held: Sequence[str], entries: Sequence[PreparedEntry]) -> None:
        if not held and not entries:
            return
        # One record: the entries it replaces and the new ones go together or not at all.
        await self._write(
            owner,
            {
                "op": "restore_entries",
                "app_name": owner.app_name,
                "user_id": owner.user_id,
                "project_id": entries[0].stored.project_id if entries else None,
                "ids": list(held),
                "entries": [_entry_record(e) for e in entries],
            },
        )

    async def _insert_entry(self, owner: Owner, entry: PreparedEntry) -> None:
        await self._write(
            owner,
            {
                "op": "insert_entry",
                "app_name": owner.app_name,
                "user_id": owner.user_id,
                "project_id": entry.stored.project_id,
                "entry": _entry_record(entry),
            }
        )

    async def _delete_entries(self, owner: Owner, entry_ids: Sequence[str]) -> int:
        return await self._write(
            owner,
            {"op": "delete_entries", "app_name": owner.app_name, "user_id": owner.user_id, "ids": list(entry_ids)},
        )

    async def _delete_matching(
        self,
        owner: Owner,
        scope: str | None,
        request: NeighbourhoodRequest,
        matches: Callable[[CandidateStats], bool],
    ) -> int:
        # The ids are chosen inside the write, under the user's lock (see _write): chosen
        # before it, an entry that a restore rewrote meanwhile under the same id (other
        # text, no match) was deleted by the id listed. The record names the ids, as any
        # delete_entries record does, so a reload replays exactly what was deleted.
        def record() -> dict[str, Any]:
            ids = [c.entry_id for c in self._neighbourhood_now(owner, scope, request) if matches(c)]
            return {"op": "delete_entries", "app_name": owner.app_name, "user_id": owner.user_id, "ids": ids}

        return await self._write(owner, record)

    async def _delete_session(self, owner: Owner, session_id: str) -> int:
        return await self._write(
            owner,
            {"op": "delete_session", "app_name": owner.app_name, "user_id": owner.user_id, "session_id": session_id},
        )

    async def _delete_project(self, owner: Owner, project_id: str) -> int:
        return await self._write(
            owner,
            {"op": "delete_project", "app_name": owner.app_name, "user_id": owner.user_id, "project_id": project_id},
        )

    async def _delete_user(self, owner: Owner) -> int:
        return await self._write(owner, {"op": "delete_user", "app_name": owner.app_name, "user_id": owner.user_id})

    async def _replace_sessions(
        self,
        owner: Owner,
        project_id: str | None,
        sessions: Sequence[tuple[str, Sequence[PreparedEntry]]],
    ) -> None:
        # One record per session, all in one append (all or nothing), and at most one compaction.
        await self._write(
            owner,
            *(
                {
                    "op": "replace_session",
                    "app_name": owner.app_name,
                    "user_id": owner.user_id,
                    "project_id": project_id,
                    "session_id": session_id,
                    "entries": [_entry_record(e) for e in entries],
                }
                for session_id, entries in sessions
            )
        )

    async def _write(self, owner: Owner, *records: _Record) -> int:
        """Apply and journal ``records``; a callable among them makes its record at the
        time of the write, holding the graph lock and (with a journal) the user's lock, so
        that what it reads cannot change before the record is applied."""
        if not records:
            return 0
        if self._journal is None:
            with self._lock:
                return sum(self._apply(record) for record in _made(records))
        if self._journal.read_only:
            raise ReadOnlyStoreError(
                f"{self._journal.path} was opened read-only (read_only=True): open it without "
                "read_only to write (one writer at a time)"
            )
        # fsync can take milliseconds: keep it off the event loop.
        return await _in_thread_to_its_end(self._write_durably, owner, records)

    def _write_durably(self, owner: Owner, records: Sequence[_Record]) -> int:
        journal = self._journal
        assert journal is not None
        closes = self._closes
        # Erasing a user needs none of its records: its segment goes whole, read or not.
        erasing = isinstance(records[0], dict) and records[0]["op"] == "delete_user"
        self._ensure_loaded(owner, unreadable_ok=erasing)
        key = (owner.app_name, owner.user_id)
        with self._owner_lock(owner):
            # A close between the load and here, and a reopen since (by another call), may
            # be reading the segment now: this record appended meanwhile would be applied
            # by that reload and again below. Refused, as during the close.
            if self._closing or self._closes != closes:
                raise BackendUnavailableError(
                    f"{journal.path}: the store was closed while this write was running; nothing of it was stored "
                    "(open the store again to write)"
                )
            changed = 0
            with self._lock:
                made = _made(records)
            if made[0]["op"] == "delete_user":  # (always written alone)
                journal.remove(key)  # the whole segment: nothing of the user is left
                self._needs_compaction.discard(owner)
                with self._lock:
                    return self._apply(made[0])
            # A record that would change nothing is not written: on disk its ids and names
            # would outlive delete_user of the user they belong to, and a user holding
            # nothing would get a segment back (an ADK session without text, a retried
            # delete, another user's ids).
            with self._lock:
                made = [record for record in made if not self._changes_nothing(owner, record)]
            if not made:
                return 0
            # Durable before visible, and all or nothing: one append of every record.
            journal.append_many(key, made)
            for record in made:
                with self._lock:
                    removed = self._apply(record)
                changed += removed
                if removed:
                    self._needs_compaction.add(owner)
            if owner in self._needs_compaction:
                deferred = _DEFERRED_COMPACTION.get()
                if deferred is None or not deferred.defer(owner):  # else the block's end compacts it
                    self._compact(owner)
            return changed

    @contextlib.asynccontextmanager
    async def bulk_writes(self) -> AsyncIterator[None]:
        """The writes of this task inside the block leave the rewrite of a user's segment
        (which erases the text they removed) to the block's end, once per user: reloading
        an export over the sessions it holds rewrote the user's segment for every session,
        quadratic in the user's size. Left even by an error, the block compacts before it
        returns (or raises ``JournalCompactionError``)."""
        if self._journal is None or ((outer := _DEFERRED_COMPACTION.get()) is not None and outer.open):
            yield
            return
        deferred = _DeferredCompaction()
        token = _DEFERRED_COMPACTION.set(deferred)
        try:
            yield
        finally:
            _DEFERRED_COMPACTION.reset(token)
            if owners := deferred.close():
                await asyncio.to_thread(self._compact_deferred, owners)

    def _compact_deferred(self, owners: set[Owner]) -> None:
        for owner in owners:
            with self._owner_lock(owner):
                if owner in self._needs_compaction:
                    self._compact(owner)

    def _changes_nothing(self, owner: Owner, record: dict[str, Any]) -> bool:
        """Whether applying ``record`` now would change nothing of ``owner``'s: it stores
        no entry and removes none (call with the graph lock and the owner's lock held)."""
        op: str = record["op"]
        if _adds_entries(record):
            return False
        own = self._entries.get(owner, {})
        if op == "replace_session":
            return (record["project_id"], record["session_id"]) not in self._sessions.get(owner, {})
        if op in ("delete_entries", "restore_entries"):
            return not any(i in own for i in record["ids"])
        if op == "append_session":
            return True
        if op == "delete_session":
            return not any(e.session_id == record["session_id"] for e in own.values())
        if op == "delete_project":
            return not any(e.project_id == record["project_id"] for e in own.values())
        return False

    def _owner_lock(self, owner: Owner) -> threading.Lock:
        with self._lock:
            return self._owner_locks.setdefault(owner, threading.Lock())

    def _compact(self, owner: Owner) -> None:
        """Rewrite the user's segment from memory so that removed text leaves the disk.

        Call with the user's lock held (or while loading).

        Raises:
            JournalCompactionError: the rewrite failed; the segment still holds the text
                (and every record, so nothing is lost or comes back), and the user's next
                write or the next writable open compacts again.
        """
        journal = self._journal
        assert journal is not None
        # Without the graph lock: only this user's writes change this user's entries, nodes
        # and sessions, and they wait for the user's lock, which the caller holds. Other
        # users' writes only add and remove other keys of the shared dicts (each such
        # change is atomic), so searches and other users' writes go on meanwhile.
        records = list(self._snapshot_records(owner))
        try:
            journal.rewrite((owner.app_name, owner.user_id), records)
        except OSError as exc:
            raise JournalCompactionError(
                f"the change took effect, but its removed text is still in "
                f"{journal.segment_path((owner.app_name, owner.user_id))}: compacting it failed "
                f"({exc.strerror or exc}); free space or fix the directory's permissions: the "
                "user's next write, or opening the store again, erases it"
            ) from exc
        self._needs_compaction.discard(owner)

    # ------------------------------------------------------------------ reads

    async def _term_stats(self, owner: Owner, tokens: Sequence[str], entities: Sequence[str]) -> CorpusStats:
        with self._lock:
            self._ensure_loaded(owner)
            return self._corpus(owner, *self._term_edges(owner, tokens, entities))

    def _term_edges(
        self, owner: Owner, tokens: Sequence[str], entities: Sequence[str]
    ) -> tuple[dict[str, Mapping[NodeKey, Any]], dict[str, Mapping[NodeKey, Any]]]:
        """Each term node's incoming edges, keyed by entry node (live views: read them
        under the lock)."""
        pred = self._graph._pred  # adjacency dicts: postings without copying
        app, user = owner.app_name, owner.user_id
        return (
            {t: pred.get((TOKEN, app, user, t)) or {} for t in dict.fromkeys(tokens)},
            {e: pred.get((ENTITY, app, user, e)) or {} for e in dict.fromkeys(entities)},
        )

    def _corpus(
        self,
        owner: Owner,
        token_postings: Mapping[str, Mapping[NodeKey, Any]],
        entity_postings: Mapping[str, Mapping[NodeKey, Any]],
    ) -> CorpusStats:
        nodes = self._graph.nodes
        app, user = owner.app_name, owner.user_id
        return CorpusStats(
            len(self._entries.get(owner, {})),
            {t: len(p) for t, p in token_postings.items()},
            {e: len(p) for e, p in entity_postings.items()},
            frozenset(t for t, p in token_postings.items() if p and nodes[(TOKEN, app, user, t)].get("speaker")),
        )

    async def _postings(
        self,
        owner: Owner,
        project_id: str | None,
        tokens: Sequence[str],
        entities: Sequence[str],
        *,
        with_times: bool = False,
    ) -> TermPostings:
        # Holder keys are entry ids (strings: their hash is cached, where a node key's 4-tuple
        # is hashed again by every set operation); ``_neighbourhood`` reads them in this
        # owner's entries only. No scope filter: this backend stores no project entries
        # (every holder is global). Frozen copies: the views change with the graph.
        with self._lock:
            self._ensure_loaded(owner)
            holders_of = self._holders_of(owner)
            app, user = owner.app_name, owner.user_id
            token_holders = {t: holders_of((TOKEN, app, user, t)) for t in dict.fromkeys(tokens)}
            entity_holders = {e: holders_of((ENTITY, app, user, e)) for e in dict.fromkeys(entities)}
            days: Mapping[Hashable, Days] = {}
            if with_times:
                # Read when asked: a search asks about the holders it may expand, not about
                # every holder of its seeds. Only days already known: parsing the text of an
                # entry would cost more than the search; a holder whose days are unknown may
                # match the time, which only makes the search read more (its answer is the same).
                days = _KnownDays(self._entries.get(owner, {}))
                said = self._said_days.get(owner)
                if said is not None:
                    return TermPostings(token_holders, entity_holders, days, _DayIndexView(said, self._lock))
            return TermPostings(token_holders, entity_holders, days)

    def _holders_of(self, owner: Owner) -> Callable[[NodeKey], frozenset[str]]:
        """The ids of the entries holding a term node (none: an empty set), from the cache
        of ``owner`` (read under the lock). The cache holds at most
        :data:`_HOLDER_CACHE_SHARE` times the owner's entry count of ids; when a term would
        pass that, the terms read least recently leave it first."""
        room = _HOLDER_CACHE_SHARE * len(self._entries.get(owner, ()))
        cache = self._owner_cache(owner)
        ids = cache.ids
        pred = self._graph._pred
        value_of = operator.itemgetter(3)  # an entry node's key ends with its id

        def holders(term: NodeKey) -> frozenset[str]:
            found = ids.pop(term, None)
            if found is None:
                edges = pred.get(term)
                if not edges:
                    return _NO_TERMS
                found = frozenset(map(value_of, edges))
                # Least recently read first out (a dict keeps the order terms were put back
                # in), until this one fits: emptying the whole cache made a heavy user's
                # searches freeze again the seeds they share (the benchmark's 320 questions
                # read ~115k ids of seeds in all).
                cache.held += len(found)
                while ids and cache.held > room:
                    cache.held -= len(ids.pop(next(iter(ids))))
            ids[term] = found
            return found

        return holders

    async def _neighbourhood(
        self, owner: Owner, project_id: str | None, request: NeighbourhoodRequest
    ) -> list[CandidateStats]:
        return self._neighbourhood_now(owner, project_id, request)

    def _neighbourhood_now(
        self, owner: Owner, project_id: str | None, request: NeighbourhoodRequest
    ) -> list[CandidateStats]:
        with self._lock:
            self._ensure_loaded(owner)
            own = self._entries.get(owner, {})
            token_edges, entity_edges = self._term_edges(owner, request.tokens, request.entities)
            times = self._times_of(owner) if request.with_times else None
            if request.around is None:
                return self._candidates_holding(own, project_id, token_edges, entity_edges, times)
            # A key is an entry id, read in this owner's entries only: so a search never
            # reaches another owner's entry, and one deleted since names nothing.
            reached = self._reached([k for k in request.around if isinstance(k, str) and k in own], request.reach)
            among = set(reached)
            held_tokens = self._held_among(owner, TOKEN, token_edges, among)
            held_entities = self._held_among(owner, ENTITY, entity_edges, among)
            # Terms held by more entries than were reached, and not cached: asked per entry.
            wide = [*held_tokens[1], *held_entities[1]]
            tokens_of, entities_of = held_tokens[0], held_entities[0]
            found: list[CandidateStats] = []
            holding_only = request.holding_only
            for entry_id in reached:
                if holding_only and not wide and entry_id not in tokens_of and entry_id not in entities_of:
                    continue  # holds no query term (most reached entries)
                entry = own[entry_id]
                if entry.project_id is not None and entry.project_id != project_id:
                    continue  # a neighbour is in its holder's session: only a holder can be out of scope
                if wide:
                    node = entry.key
                    for holders, value, into in wide:
                        if node in holders:
                            into.setdefault(entry_id, []).append(value)
                matched_tokens = tokens_of.get(entry_id)
                matched_entities = entities_of.get(entry_id)
                if holding_only and not matched_tokens and not matched_entities:
                    continue
                found.append(
                    self._candidate(
                        entry_id,
                        entry.project_id,
                        frozenset(matched_tokens) if matched_tokens else _NO_TERMS,
                        frozenset(matched_entities) if matched_entities else _NO_TERMS,
                        entry,
                        times,
                    )
                )
            return found

    def _reached(self, start: Iterable[str], reach: int) -> dict[str, None]:
        """``start`` and every entry within ``reach`` ``NEXT`` steps of one, in the order
        reached (call with the lock held)."""
        neighbours_of = self._neighbours
        reached = dict.fromkeys(start)
        frontier = list(reached)
        for _ in range(reach):
            # Only the entries the last step added: the others' neighbours are in already.
            before = len(reached)
            for entry_id in frontier:
                for near in neighbours_of.get(entry_id, ()):
                    reached[near] = None
            frontier = list(reached)[before:]
        return reached

    async def _session_authors(self, owner: Owner, project_id: str | None, session_id: str) -> set[str]:
        with self._lock:
            self._ensure_loaded(owner)
            own = self._entries.get(owner, {})
            return {own[i].author for i in self._sessions.get(owner, {}).get((project_id, session_id), ()) if i in own}

    async def _session_entries(self, owner: Owner, project_id: str | None, session_id: str) -> list[StoredEntry]:
        with self._lock:
            self._ensure_loaded(owner)
            own = self._entries.get(owner, {})
            # The session index keeps its ids in position order.
            ids = self._sessions.get(owner, {}).get((project_id, session_id), ())
            return [own[i].stored() for i in ids if i in own]

    async def _entry_days(
        self, owner: Owner, project_id: str | None, when: QueryTime
    ) -> list[tuple[str, int, tuple[tuple[int, int], ...]]]:
        # The index of days names the entries that may match (and those whose references
        # are not read yet): a heavy user's other entries are never looked at.
        with self._lock:
            self._ensure_loaded(owner)
            entries = self._entries.get(owner, {})
            index = self._said_days.get(owner)
            span = index.span() if index is not None else None
            if index is None or span is None:
                return []
            view = _DayIndexView(index, self._lock)
            days = matching_days(when, self.weights, *span)
            ids = view.said_in(days.said) | view.referring_to(days.referred, days.longest_reference) | index.unread
            # (No project entries here: every entry is in scope.)
            return [(entry.entry_id, *entry.days()) for i in ids if (entry := entries.get(str(i))) is not None]

    async def _entries_around(
        self, owner: Owner, project_id: str | None, entry_ids: Sequence[str], reach: int
    ) -> list[CandidateStats]:
        with self._lock:
            self._ensure_loaded(owner)
            own = self._entries.get(owner, {})
            start = [i for i in entry_ids if i in own and own[i].project_id in (None, project_id)]
            return [
                CandidateStats(
                    entry_id,
                    _NO_TERMS,
                    _NO_TERMS,
                    self._neighbours.get(entry_id, ()),
                    (),
                    own[entry_id].project_id,
                    author=own[entry_id].author,
                    position=own[entry_id].position,
                )
                for entry_id in self._reached(start, reach)
                if entry_id in own
            ]

    def _held_among(
        self, owner: Owner, kind: str, postings: Mapping[str, Mapping[NodeKey, Any]], among: AbstractSet[str]
    ) -> tuple[dict[str, list[str]], list[tuple[Mapping[NodeKey, Any], str, dict[str, list[str]]]]]:
        """Which of the entry ids ``among`` (those reached) hold each term of ``postings`` (its values, by
        entry id), read from the holder cache (ids: strings, whose hash is cached) or the
        term's postings when it has no more holders than were reached; and the other terms'
        postings, to be asked per entry (with their value and the dict their holders go into)."""
        cache = self._holder_ids.get(owner)
        cached = cache.ids if cache is not None else {}
        app, user = owner.app_name, owner.user_id
        held: dict[str, list[str]] = {}
        wide: list[tuple[Mapping[NodeKey, Any], str, dict[str, list[str]]]] = []
        for value, edges in postings.items():
            if not edges:
                continue
            key: NodeKey = (kind, app, user, value)
            ids = cached.get(key)
            if ids is not None:
                for entry_id in ids & among:
                    held.setdefault(entry_id, []).append(value)
            elif len(edges) <= len(among):
                for node in edges:
                    if node[3] in among:
                        held.setdefault(node[3], []).append(value)
            else:
                wide.append((edges, value, held))
        return held, wide

    def _candidates_holding(
        self,
        own: Mapping[str, _Entry],
        project_id: str | None,
        token_postings: Mapping[str, Mapping[NodeKey, Any]],
        entity_postings: Mapping[str, Mapping[NodeKey, Any]],
        times: Callable[[str], tuple[int, tuple[tuple[int, int], ...]]] | None,
    ) -> list[CandidateStats]:
        """Every in-scope entry holding a query term, with the terms it holds."""
        matched_tokens: dict[str, list[str]] = defaultdict(list)
        matched_entities: dict[str, list[str]] = defaultdict(list)
        for value, postings in token_postings.items():
            for node in postings:
                matched_tokens[node[3]].append(value)
        for name, postings in entity_postings.items():
            for node in postings:
                matched_entities[node[3]].append(name)
        found: list[CandidateStats] = []
        for entry_id in matched_tokens.keys() | matched_entities.keys():
            entry_project = own[entry_id].project_id
            if entry_project is not None and entry_project != project_id:
                continue
            found.append(
                self._candidate(
                    entry_id,
                    entry_project,
                    frozenset(matched_tokens.get(entry_id, ())),
                    frozenset(matched_entities.get(entry_id, ())),
                    own[entry_id],
                    times,
                )
            )
        return found

    def _candidate(
        self,
        entry_id: str,
        project_id: str | None,
        matched_tokens: frozenset[str],
        matched_entities: frozenset[str],
        own: _Entry,
        times: Callable[[str], tuple[int, tuple[tuple[int, int], ...]]] | None = None,
    ) -> CandidateStats:
        neighbours_of = self._neighbours
        neighbours = neighbours_of.get(entry_id, ())
        # Loops, not a generator: this runs for every candidate (half the cost of a tuple
        # built from a generator's frame; an entry has two neighbours at most).
        second: tuple[str, ...] = ()
        for near in neighbours:
            for far in neighbours_of.get(near, ()):
                if far != entry_id and far not in neighbours:
                    second += (far,)
        if times is None:
            return CandidateStats(
                entry_id, matched_tokens, matched_entities, neighbours, second, project_id, None, (), own.author,
                own.position,
            )
        day, refs = times(entry_id)
        return CandidateStats(
            entry_id, matched_tokens, matched_entities, neighbours, second, project_id, day, refs, own.author,
            own.position,
        )

    def _times_of(self, owner: Owner) -> Callable[[str], tuple[int, tuple[tuple[int, int], ...]]]:
        """Reads an entry's day and time references (see ``entry_times``)."""
        own = self._entries.get(owner, {})

        def times(entry_id: str) -> tuple[int, tuple[tuple[int, int], ...]]:
            return own[entry_id].days()

        return times

    async def _speakers(self, owner: Owner) -> SpeakerWords:
        with self._lock:
            self._ensure_loaded(owner)
            return SpeakerWords(
                frozenset(self._speaker_values.get(owner, ())), frozenset(self._user_speaker_values.get(owner, ()))
            )

    async def _name_uses(self, owner: Owner, words: Sequence[str]) -> dict[str, NameUse]:
        with self._lock:
            self._ensure_loaded(owner)
            own = self._entries.get(owner, {})
            tokens, entities = self._terms.get(owner, ({}, {}))
            nodes = self._graph._node
            found: dict[str, NameUse] = {}
            for word in words:
                term = tokens.get(word)
                authors = Counter(own[node[3]].author for node in term[1] if node[3] in own) if term else None
                if authors:
                    entity = entities.get(word)
                    found[word] = NameUse(authors, None if entity is None else nodes[entity[0]]["label"])
            return found

    async def _entity_names(self, owner: Owner) -> frozenset[str]:
        with self._lock:
            self._ensure_loaded(owner)
            return frozenset(self._terms.get(owner, ({}, {}))[1])

    async def _tokens_like(self, owner: Owner, first: str, min_length: int, max_length: int) -> list[str]:
        with self._lock:
            self._ensure_loaded(owner)
            # By first character, grouped once per write to the owner (the cache is dropped
            # on every write): a query reads the tokens of a few of its words' first letters,
            # and passing over every token each time cost a user of 1,000 entries 0.8 ms a word.
            cache = self._owner_cache(owner)
            if cache.by_first is None:
                by_first: dict[str, list[str]] = {}
                for token in self._terms.get(owner, ({}, {}))[0]:
                    by_first.setdefault(token[:1], []).append(token)
                cache.by_first = by_first
            tokens = cache.by_first.get(first[:1], ()) if first else [t for g in cache.by_first.values() for t in g]
            return sorted(t for t in tokens if t.startswith(first) and min_length <= len(t) <= max_length)

    def _owner_cache(self, owner: Owner) -> _HolderCache:
        """The owner's cache of what a search reads (call with the lock held); dropped on
        every write to the owner. A user with no entries keeps none: a search leaves no
        trace of it."""
        cache = self._holder_ids.get(owner)
        if cache is None:
            cache = _HolderCache()
            if self._entries.get(owner):
                self._holder_ids[owner] = cache
        return cache

    async def _fetch_entries(self, owner: Owner, entry_ids: Sequence[str]) -> list[StoredEntry]:
        with self._lock:
            self._ensure_loaded(owner)
            own = self._entries.get(owner, {})
            return [own[i].stored() for i in entry_ids if i in own]

    async def _list_recent(self, owner: Owner, limit: int, scope: RecentScope | None) -> list[StoredEntry]:
        with self._lock:
            self._ensure_loaded(owner)
            own = [e for e in self._entries.get(owner, {}).values() if scope is None or scope.holds(e.project_id)]
        own.sort(key=_recency, reverse=True)
        return [e.stored() for e in own[:limit]]

    async def _entity_mentions(
        self, owner: Owner, name: str, scope: RecentScope, limit: int
    ) -> tuple[int, list[str]]:
        # From the entity's node: its MENTIONS links come from the owner's entries only.
        with self._lock:
            self._ensure_loaded(owner)
            own = self._entries.get(owner, {})
            holders = self._graph._pred.get((ENTITY, owner.app_name, owner.user_id, name), {})
            found = [own[key[3]] for key in holders if key[3] in own and scope.holds(own[key[3]].project_id)]
        found.sort(key=_recency, reverse=True)
        return len(found), [e.entry_id for e in found[:limit]]

    async def _next_links(self, owner: Owner, entry_ids: Sequence[str]) -> list[tuple[str, str]]:
        with self._lock:
            self._ensure_loaded(owner)
            own = self._entries.get(owner, {})
            wanted = {own[i].key for i in entry_ids if i in own}
            succ = self._graph._succ
            return [
                (a[3], b[3])
                for a in wanted
                for b, edge in succ[a].items()
                if b in wanted and NEXT in edge.get("__labels__", ())
            ]

    async def _all_entries(self, owner: Owner) -> list[StoredEntry]:
        with self._lock:
            self._ensure_loaded(owner)
            return [e.stored() for e in self._entries.get(owner, {}).values()]

    async def _locate_entries(self, entry_ids: Sequence[str]) -> list[tuple[Owner, StoredEntry]]:
        with self._lock:
            self._ensure_loaded()
            if self._owner_of is None:
                self._owner_of = _OwnerIndex((i, owner) for owner, own in self._entries.items() for i in own)
            entries = self._entries
            return [(owner, entries[owner][i].stored()) for i in entry_ids for owner in self._owner_of.holders(i)]

    async def _entry_terms(self, owner: Owner, entry_ids: Sequence[str]) -> dict[str, Decomposition]:
        with self._lock:
            self._ensure_loaded(owner)
            own = self._entries.get(owner, {})
            graph = self._graph
            terms: dict[str, Decomposition] = {}
            for entry_id in entry_ids:
                if entry_id in own:
                    linked = list(graph._succ[own[entry_id].key])
                    terms[entry_id] = Decomposition(
                        tokens=tuple(n[3] for n in linked if n[0] == TOKEN),
                        entities=tuple(Entity(n[3], graph.nodes[n]["label"]) for n in linked if n[0] == ENTITY),
                    )
            return terms

    async def _stats(self, owner: Owner | None) -> MemoryStats:
        with self._lock:
            self._ensure_loaded(owner)
            owners = [o for o, e in self._entries.items() if e and (owner is None or o == owner)]
            entries = [e for o in owners for e in self._entries[o].values()]
            if owner is None:
                tokens = sum(1 for n in self._graph if n[0] == TOKEN)
                entities = sum(1 for n in self._graph if n[0] == ENTITY)
            else:
                nodes = {n for e in entries for n in self._graph._succ[e.key]}
                tokens = sum(1 for n in nodes if n[0] == TOKEN)
                entities = sum(1 for n in nodes if n[0] == ENTITY)
            return MemoryStats(
                users=len(owners),
                entries=len(entries),
                tokens=tokens,
                entities=entities,
                sessions=len(
                    {
                        (o, e.project_id, e.session_id)
                        for o in owners
                        for e in self._entries[o].values()
                        if e.session_id is not None
                    }
                ),
                projects=len(
                    {(o, e.project_id) for o in owners for e in self._entries[o].values() if e.project_id is not None}
                ),
            )

    async def _scope_stats(self, owner: Owner, project_id: str | None) -> MemoryStats:
        assert project_id is None  # (refused before: no projects here)
        return await self._stats(owner)  # every entry is global: the user's counts

    async def _ping(self) -> None:
        journal = self._journal
        if journal is not None and journal.read_only and not self._loaded:
            self._refuse_a_call_the_store_was_closed_under()
            journal.read(())  # a reader loads users when asked: check that the store is one
            return
        with self._lock:
            # As a reader's: the store is one, whether or not each segment reads.
            self._ensure_loaded(unreadable_ok=True)

    # ------------------------------------------------------------------ applying records

    def _call_mark(self) -> int | None:
        # The closes so far: a call must not open the store again after a close that came
        # while it ran (see _ensure_loaded). A store only in memory never closes.
        return None if self._journal is None else self._closes

    def _refuse_a_call_the_store_was_closed_under(self) -> None:
        """Raise ``BackendUnavailableError`` in a public call that began before the store's
        last close: reloading the store for it would take the writer lock again after
        ``close()`` returned (a call made after the close reloads it)."""
        began = self._mark_of_this_call()
        if began is not None and began != self._closes:
            assert self._journal is not None
            raise BackendUnavailableError(
                f"{self._journal.path}: the store was closed while this call was running; it was not "
                "opened again for it, and nothing of the call was stored (call again to open the store again)"
            )

    def _ensure_loaded(self, owner: Owner | None = None, *, unreadable_ok: bool = False) -> None:
        """Load the store (a writer, or a call about every user), or, for a reader asked
        about one user, that user's segment alone: a command about one user of thousands
        reads one file (the CLI opens the store read-only on every command).

        A writer loads every segment it can read; a call about a user whose segment it
        could not read, or about every user, raises that segment's ``JournalCorruptError``
        (as a reader's read of it does), unless ``unreadable_ok`` (erasing the user,
        checking the store is one).

        A public call that began before a close is refused, loaded or not (see ``close()``).
        """
        self._load_store(owner)
        journal = self._journal
        if journal is not None and journal.unreadable and not unreadable_ok:
            self._refuse_unreadable(journal, owner)

    def _refuse_unreadable(self, journal: Journal, owner: Owner | None) -> None:
        """Raise the error of the segment this writer could not read, for a call about its
        user (or about everyone), saying what still works."""
        if owner is None:
            # Sorted, not min(): an erasure in another thread may empty the dict meanwhile.
            unreadable = sorted(journal.unreadable.items())
            if not unreadable:
                return
            exc = unreadable[0][1]
            hint = "a call about every user reads every segment"
        else:
            found = journal.unreadable.get(segment_name(owner.app_name, owner.user_id))
            if found is None:
                return
            exc = found
            hint = "delete_user of this user erases the segment without reading it"
        raise JournalCorruptError(f"{exc} ({hint}; the store's other users can be read and written)")

    def _load_store(self, owner: Owner | None) -> None:
        self._refuse_a_call_the_store_was_closed_under()
        if self._loaded or (owner is not None and owner in self._loaded_owners):
            return
        with self._lock:
            # Again under the lock, which a close holds while it closes the journal: a load
            # that passes here comes before that close, which then closes what it opened.
            self._refuse_a_call_the_store_was_closed_under()
            if self._loaded or (owner is not None and owner in self._loaded_owners):
                return
            journal = self._journal
            assert journal is not None
            if owner is not None and journal.read_only:
                try:
                    with collector_paused(long=True):
                        contents = journal.read([(owner.app_name, owner.user_id)])
                        if not contents.partial:  # a version 1 journal: read whole
                            self._forget()
                        self._load(contents)
                except BaseException:
                    self._forget()  # a user half applied
                    raise
                if contents.partial:
                    self._loaded_owners.add(owner)
                else:
                    self._loaded = True
                return
            if self._loaded_owners:
                self._forget()  # a reader asked about everyone: loaded again, whole
            try:
                if not journal.read_only:
                    journal.check()  # never create a lock file beside a foreign file
                    journal.acquire()  # before reading: no other writer can change it after
                with collector_paused(long=True):
                    # A writer skips the segments it cannot read: refused to the calls about
                    # their users (above), never written, but the other users go on.
                    contents = journal.read(skip_unreadable=not journal.read_only)
                    removed_by = self._load(contents)
                if not journal.read_only:
                    journal.open_for_writing(
                        contents,
                        (
                            ((owner.app_name, owner.user_id), list(self._snapshot_records(owner)))
                            for owner, entries in self._entries.items()
                            if entries
                        ),
                    )
                    if contents.version != 1:  # a migration writes live records only
                        self._finish_compactions(removed_by)
                    self._snapshot_stale(loading=True)
            except BaseException:
                journal.close()
                self._forget()
                raise
            # Only now: a writer that found the store loaded must not append to a segment
            # that is still being compacted (it would not wait for the user's lock).
            self._loaded = True

    def _finish_compactions(self, owners: set[Owner]) -> None:
        """Compact the segments whose records removed text: a crash or a failure
        interrupted their compaction. A failure is logged; the next write retries."""
        for owner in owners:
            self._needs_compaction.add(owner)
            try:
                self._compact(owner)
            except JournalCompactionError as exc:
                logger.warning("graphmem: %s", exc)

    def _snapshot_stale(self, *, loading: bool = False) -> None:
        """Snapshot the users with a long segment tail in no snapshot (see the journal's
        ``write_snapshot``); a failure is logged (the journal alone still has everything).

        Takes each user's lock, unless ``loading`` (no write can run then, and the graph's
        lock, held while loading, must not wait for a user's).
        """
        journal = self._journal
        assert journal is not None
        for key in journal.stale_snapshots():
            owner = Owner(*key)
            with contextlib.nullcontext() if loading else self._owner_lock(owner):
                if owner in self._needs_compaction:
                    continue  # its segment still holds removed text: no snapshot of it
                try:
                    journal.write_snapshot(key, self._dump(owner))
                except OSError as exc:
                    logger.warning(
                        "graphmem: could not snapshot %s (%s); the store opens from its journal alone",
                        journal.segment_path(key),
                        exc.strerror or exc,
                    )

    def _load(self, contents: StoreContents) -> set[Owner]:
        """Apply the store's records; returns the users whose records removed entries."""
        journal = self._journal
        assert journal is not None
        removed_by: set[Owner] = set()
        for file in contents.files:
            if file.snapshot is not None:
                assert file.owner is not None
                try:
                    self._load_dump(Owner(*file.owner), file.snapshot)
                except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
                    raise JournalCorruptError(
                        f"{journal.snapshot_path(file.owner)}: a record is not valid ({exc}); delete "
                        "the file to open the store from its journal alone"
                    ) from exc
            for line_no, record in file.records:
                try:
                    removed = self._apply(record)
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    raise JournalCorruptError(f"{file.path}: line {line_no} is not a valid record: {exc}") from exc
                if removed:
                    removed_by.add(Owner(record["app_name"], record["user_id"]))
        return removed_by

    def _forget(self) -> None:
        """Drop everything loaded, so that the next call reloads from the journal."""
        self._graph = nx.DiGraph()
        self._entries = defaultdict(dict)
        self._sessions = defaultdict(dict)
        self._neighbours = {}
        self._speaker_values = defaultdict(set)
        self._user_speaker_values = defaultdict(set)
        self._owner_of = None
        self._loaded_owners = set()
        self._needs_compaction = set()
        self._terms = {}
        self._holder_ids = {}
        self._said_days = {}
        self._loaded = self._journal is None

    def _apply(self, record: dict[str, Any]) -> int:
        """Apply one journal record to the in-memory graph; returns entries removed."""
        # Interned: every entry, node key and index of the user points at one copy.
        owner = Owner(sys.intern(record["app_name"]), sys.intern(record["user_id"]))
        op = record["op"]
        if op in ("replace_session", "append_session"):
            project_id = _intern_opt(record["project_id"])
            session_id = sys.intern(record["session_id"])
            key: SessionKey = (project_id, session_id)
            entries = record["entries"]
            kept: list[str] = []
            if op == "replace_session":
                removed = self._remove_entries(owner, list(self._sessions[owner].get(key, ())))
            else:
                # After the session's last entry (the one with the highest position: ids
                # are kept in position order), linked to it.
                removed = 0
                kept = list(self._sessions[owner].get(key, ()))
                start = self._entries[owner][kept[-1]].position + 1 if kept else 0
                if entries and start + entries[-1]["position"] > MAX_POSITION:
                    # What the append itself refuses (appended_start): no export could write it.
                    raise ValueError(
                        f"appended after position {start - 1}, its entries pass the largest position, 2**62"
                    )
                entries = [{**e, "position": start + e["position"]} for e in entries]
            added = [self._add_entry(owner, project_id, session_id, e) for e in entries]
            neighbours = self._neighbours
            for entry in added:
                neighbours[entry.entry_id] = ()
            # Link only turns that were adjacent: a compacted or restored session keeps the
            # gaps its deleted turns left, so a reload does not make new neighbours.
            # (An append links after the session's last entries; a replacement has none.)
            own = self._entries[owner]
            tail = [own[i] for i in kept[-(MAX_REACTIONS_LINKED_ACROSS + 1) :]]
            linked = [
                (tail[i] if i < 0 else added[i], added[j])
                for i, j in linked_after(
                    [(e.position, e.is_reaction()) for e in tail], [(e.position, e.is_reaction()) for e in added]
                )
            ]
            succ, pred = self._graph._succ, self._graph._pred
            for earlier, later in linked:
                succ[earlier.key][later.key] = pred[later.key][earlier.key] = _EDGE[NEXT]
                neighbours[earlier.entry_id] += (later.entry_id,)
                neighbours[later.entry_id] = (earlier.entry_id, *neighbours[later.entry_id])
            ids = kept + [entry.entry_id for entry in added]
            if ids:
                self._sessions[owner][key] = ids
            _clear_cache(self._graph)
            return removed
        if op == "insert_entry":
            self._add_entry(owner, _intern_opt(record["project_id"]), None, record["entry"])
            _clear_cache(self._graph)
            return 0
        if op == "restore_entries":
            removed = self._remove_entries(owner, record["ids"])
            project_id = _intern_opt(record["project_id"])
            for rec in record["entries"]:
                self._add_entry(owner, project_id, None, rec)
            _clear_cache(self._graph)
            return removed
        if op == "delete_entries":
            return self._remove_entries(owner, record["ids"])
        own = self._entries.get(owner, {})
        if op == "delete_session":
            ids = [i for i, e in own.items() if e.session_id == record["session_id"]]
        elif op == "delete_project":
            ids = [i for i, e in own.items() if e.project_id == record["project_id"]]
        elif op == "delete_user":
            ids = list(own)
        else:
            raise JournalCorruptError(f"unknown journal operation {op!r}")
        removed = self._remove_entries(owner, ids)
        if op == "delete_user":
            self._holder_ids.pop(owner, None)
            self._said_days.pop(owner, None)
            self._entries.pop(owner, None)
            self._sessions.pop(owner, None)
            self._speaker_values.pop(owner, None)
            self._user_speaker_values.pop(owner, None)
            self._terms.pop(owner, None)
        return removed

    def _add_entry(
        self, owner: Owner, project_id: str | None, session_id: str | None, rec: dict[str, Any]
    ) -> _Entry:
        own = self._entries[owner]  # (an Owner's hash is a Python call: looked up once an entry)
        self._holder_ids.pop(owner, None)  # its postings change
        entry_id = rec["id"]
        if entry_id in own:
            self._remove_entries(owner, [entry_id])  # stored again: the new one replaces it
        author, role, text = rec["author"], rec["role"], rec["text"]
        if not (author.isascii() and role.isascii() and text.isascii()):  # (ASCII has no surrogate)
            ensure_unicode(author, "author")
            ensure_unicode(role, "role")
            ensure_unicode(text)
        author, role = sys.intern(author), sys.intern(role)
        when = as_utc(datetime.fromisoformat(rec["timestamp"]))
        position = int(rec["position"])
        app, user = owner.app_name, owner.user_id
        node: NodeKey = (ENTRY, app, user, entry_id)
        timestamp = sys.intern(when.isoformat())  # one string for a session's turns said at once
        language = _intern_opt(rec.get("language"))
        props = _entry_node(
            app, user, entry_id, project_id, session_id, position, author, role, text, timestamp, language
        )
        refs = rec.get("time_refs")  # None: written before they were recorded (resolved when read)
        days = None
        if refs is not None:
            if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
                raise TypeError(f"time_refs must be a list of strings, got {refs!r:.80}")
            days = entry_times(when, refs)  # a malformed range fails here, not in a search
            props["time_refs"] = refs or _NO_TIME_REFS
        # The graph's own dicts, written directly: networkx's add_node/add_edge would build
        # an attribute dict per edge (shared ones here, see _EDGE) and take far longer.
        graph = self._graph
        nodes, succ, pred = graph._node, graph._succ, graph._pred
        nodes[node] = props
        out: dict[NodeKey, dict[str, Any]] = {}
        succ[node] = out
        pred[node] = {}
        terms = self._terms.get(owner)
        if terms is None:
            terms = self._terms[owner] = ({}, {})
        tokens, entities = terms
        spoken = speaker_tokens(author)
        speaker_values = self._speaker_values[owner] if spoken else set()
        as_user = role == "user"
        user_speaker_values = self._user_speaker_values[owner] if spoken and as_user else set()
        for value in rec["tokens"]:
            term = tokens.get(value)
            if term is None:
                value = sys.intern(value)
                key: NodeKey = (TOKEN, app, user, value)
                nodes[key] = _token_node(app, user, value, False, False)
                succ[key] = {}
                term = tokens[value] = (key, pred.setdefault(key, {}))
            if value in spoken:
                nodes[term[0]]["speaker"] = True
                speaker_values.add(term[0][3])
                if as_user:
                    nodes[term[0]]["user_speaker"] = True
                    user_speaker_values.add(term[0][3])
            out[term[0]] = term[1][node] = _EDGE[HAS_TOKEN]
        for name, label in rec["entities"]:
            term = entities.get(name)
            if term is None:
                name = sys.intern(name)
                key = (ENTITY, app, user, name)
                nodes[key] = _entity_node(app, user, name, label)
                succ[key] = {}
                term = entities[name] = (key, pred.setdefault(key, {}))
            out[term[0]] = term[1][node] = _EDGE[MENTIONS]
        entry = _Entry(node, project_id, session_id, position, author, when, props)
        entry._days = days
        own[entry_id] = entry
        if self._owner_of is not None:
            self._owner_of.add(entry_id, owner)
        said = self._said_days.get(owner)
        if said is None:
            said = self._said_days[owner] = _DaysOfEntries()
        said.add(((entry_id, when.toordinal(), None if days is None else days[1]),))
        return entry

    def _remove_entries(self, owner: Owner, entry_ids: Sequence[str]) -> int:
        own = self._entries.get(owner)
        if not own:
            return 0
        self._holder_ids.pop(owner, None)  # its postings change
        said = self._said_days[owner]  # (an owner with entries has its days)
        gone: list[_Dated] = []
        graph = self._graph
        removed = 0
        spoken: set[str] = set()
        for entry_id in entry_ids:
            entry = own.pop(entry_id, None)
            if entry is None:
                continue
            if self._owner_of is not None:
                self._owner_of.remove(entry_id, owner)
            removed += 1
            refs = None if entry_id in said.unread else entry.days()[1]
            gone.append((entry_id, entry.timestamp.toordinal(), refs))
            spoken.update(speaker_tokens(entry.author))
            node = entry.key
            terms = [n for n in graph._succ[node] if n[0] != ENTRY]
            self._unlink_across(own, entry)
            graph.remove_node(node)
            for term in terms:
                if not graph._pred[term]:
                    graph.remove_node(term)  # no entry uses it any more
                    del self._terms[owner][0 if term[0] == TOKEN else 1][term[3]]
                    if term[0] == TOKEN:
                        self._speaker_values[owner].discard(term[3])
                        self._user_speaker_values[owner].discard(term[3])
            for other in self._neighbours.pop(entry_id, ()):
                if other in self._neighbours:
                    self._neighbours[other] = tuple(n for n in self._neighbours[other] if n != entry_id)
            key: SessionKey = (entry.project_id, entry.session_id or "")
            sessions = self._sessions[owner]
            if entry.session_id is not None and key in sessions:
                remaining = [i for i in sessions[key] if i != entry_id]
                if remaining:
                    sessions[key] = remaining
                else:
                    del sessions[key]
        said.remove(gone)
        self._unflag_speakers(owner, spoken)
        return removed

    def _unlink_across(self, own: Mapping[str, _Entry], entry: _Entry) -> None:
        """Remove the ``NEXT`` links across ``entry`` (a reaction inside a run of them that
        two turns are linked across, :func:`~graphmem._service.next_pairs`) before it goes:
        a deleted turn leaves a gap, as a replay of the compacted session finds. Such a
        link starts at the turn before the run: walked back to along the run's links."""
        if not entry.is_reaction():
            return  # (only runs of reactions are linked across)
        pred, succ, neighbours = self._graph._pred, self._graph._succ, self._neighbours

        def linked_before(after: _Entry) -> _Entry | None:
            """The entry just before ``after`` that links to it (``None``: none)."""
            earlier = [own[k[3]] for k in pred[after.key] if k[0] == ENTRY and k[3] in own]
            return max((e for e in earlier if e.position < after.position), key=lambda e: e.position, default=None)

        before = linked_before(entry)
        for _ in range(MAX_REACTIONS_LINKED_ACROSS + 1):
            if before is None:
                return
            for later in [k for k in succ[before.key] if k[0] == ENTRY and k[3] in own]:
                if own[later[3]].position > entry.position:
                    del succ[before.key][later], pred[later][before.key]
                    neighbours[before.entry_id] = tuple(n for n in neighbours[before.entry_id] if n != later[3])
                    neighbours[later[3]] = tuple(n for n in neighbours[later[3]] if n != before.entry_id)
            if not before.is_reaction():
                return
            before = linked_before(before)

    def _unflag_speakers(self, owner: Owner, words: set[str]) -> None:
        """A token is a speaker's word while an entry of its author holds it, and a word of
        one speaking as the user while such an entry has the role ``"user"``: once the last
        such entry is gone, it is not (as a replay of the compacted segment finds)."""
        own = self._entries.get(owner, {})
        tokens = self._terms.get(owner, ({}, {}))[0]
        for word in words:
            term = tokens.get(word)
            if term is None:
                continue
            # The holders said by an author with the word in their name, read only as far as
            # needed: the first tells whether it is still a speaker's word, one in the role
            # "user" whether still one of a user's (asked only while it is).
            said = (own[k[3]] for k in term[1] if k[3] in own and word in speaker_tokens(own[k[3]].author))
            node = self._graph._node[term[0]]
            first = next(said, None)
            if first is None:
                node["speaker"] = False
                self._speaker_values[owner].discard(word)
            holders = chain((first,) if first is not None else (), said)
            if node["user_speaker"] and not any(e.props["role"] == "user" for e in holders):
                node["user_speaker"] = False
                self._user_speaker_values[owner].discard(word)

    def _snapshot_records(self, owner: Owner) -> Iterator[dict[str, Any]]:
        """A user's live entries as journal records (what a compaction writes)."""
        own = self._entries.get(owner, {})
        for (project_id, session_id), ids in self._sessions.get(owner, {}).items():
            yield {
                "op": "replace_session",
                "app_name": owner.app_name,
                "user_id": owner.user_id,
                "project_id": project_id,
                "session_id": session_id,
                "entries": [self._record_of(own[i]) for i in ids],
            }
        for entry in own.values():
            if entry.session_id is None:
                yield {
                    "op": "insert_entry",
                    "app_name": owner.app_name,
                    "user_id": owner.user_id,
                    "project_id": entry.project_id,
                    "entry": self._record_of(entry),
                }

    # ------------------------------------------------------------------ snapshots

    def _dump(self, owner: Owner) -> dict[str, Any]:
        """The user's whole state in the graph and the indexes, as :mod:`marshal` writes it
        (a snapshot): entries, term nodes and ``NEXT`` links, referring to each other by
        their index in these lists, every dict and list in its order.

        It is the state a replay of the user's segment builds, with each entry's
        ``time_refs`` where known (``None`` for entries of records written before they were
        recorded, not yet read).
        """
        own = self._entries.get(owner, {})
        entries = list(own.values())
        index = {entry.entry_id: i for i, entry in enumerate(entries)}
        tokens, entities = self._terms.get(owner, ({}, {}))
        token_index = {term[0]: i for i, term in enumerate(tokens.values())}
        entity_index = {term[0]: i for i, term in enumerate(entities.values())}
        nodes, succ = self._graph._node, self._graph._succ
        return {
            "entries": [
                (
                    e.entry_id,
                    e.project_id,
                    e.session_id,
                    e.position,
                    e.author,
                    e.props["role"],
                    e.props["text"],
                    e.props["timestamp"],
                    e.props.get("language"),
                    [token_index[n] for n in succ[e.key] if n[0] == TOKEN],
                    [entity_index[n] for n in succ[e.key] if n[0] == ENTITY],
                    e.props.get("time_refs"),
                )
                for e in entries
            ],
            "tokens": [
                (value, nodes[key]["speaker"], nodes[key]["user_speaker"], [index[n[3]] for n in posting])
                for value, (key, posting) in tokens.items()
            ],
            "entities": [
                (name, nodes[key]["label"], [index[n[3]] for n in posting])
                for name, (key, posting) in entities.items()
            ],
            "next": [(index[e.entry_id], index[n[3]]) for e in entries for n in succ[e.key] if n[0] == ENTRY],
            # None: not in a session (a replay gives such an entry no neighbours at all).
            "neighbours": [
                None if (near := self._neighbours.get(e.entry_id)) is None else [index[i] for i in near]
                for e in entries
            ],
            "sessions": [(p, s, [index[i] for i in ids]) for (p, s), ids in self._sessions.get(owner, {}).items()],
        }

    def _load_dump(self, owner: Owner, dump: dict[str, Any]) -> None:
        """Load a user's :meth:`_dump` (the user holds nothing yet): the state a replay of
        the records it was taken after builds, with whole dicts built at once (C speed)
        rather than edge by edge."""
        owner = Owner(sys.intern(owner.app_name), sys.intern(owner.user_id))
        self._holder_ids.pop(owner, None)  # its postings change
        self._owner_of = None  # (a dump is read at open, before any restore looks ids up)
        app, user = owner.app_name, owner.user_id
        nodes, succ, pred = self._graph._node, self._graph._succ, self._graph._pred
        has_token, mentions, next_ = _EDGE[HAS_TOKEN], _EDGE[MENTIONS], _EDGE[NEXT]
        token_keys: list[NodeKey] = []
        for value, speaker, user_speaker, _ in dump["tokens"]:
            value = sys.intern(value)
            key: NodeKey = (TOKEN, app, user, value)
            nodes[key] = _token_node(app, user, value, speaker, user_speaker)
            succ[key] = {}
            token_keys.append(key)
        entity_keys: list[NodeKey] = []
        for name, label, _ in dump["entities"]:
            name = sys.intern(name)
            key = (ENTITY, app, user, name)
            nodes[key] = _entity_node(app, user, name, label)
            succ[key] = {}
            entity_keys.append(key)
        own = self._entries[owner]
        said = self._said_days.setdefault(owner, _DaysOfEntries())
        entry_keys: list[NodeKey] = []
        for (
            entry_id,
            project_id,
            session_id,
            position,
            author,
            role,
            text,
            timestamp,
            language,
            held,
            named,
            refs,
        ) in dump["entries"]:
            # Not interned again: marshal keeps the sharing the dump had (one object for a
            # session id, an author, a timestamp said at once), at a fraction of the time.
            node: NodeKey = (ENTRY, app, user, entry_id)
            props = _entry_node(
                app, user, entry_id, project_id, session_id, position, author, role, text, timestamp, language
            )
            if refs is not None:
                props["time_refs"] = refs or _NO_TIME_REFS
            nodes[node] = props
            out = dict.fromkeys([token_keys[i] for i in held], has_token)
            if named:
                out.update(dict.fromkeys([entity_keys[i] for i in named], mentions))
            succ[node] = out
            pred[node] = {}
            when = datetime.fromisoformat(timestamp)  # as written by _add_entry: UTC
            own[entry_id] = _Entry(node, project_id, session_id, position, author, when, props)
            entry_keys.append(node)
        said.add(_dated(own, dump["entries"]))
        tokens, entities = self._terms.setdefault(owner, ({}, {}))
        speakers, user_speakers = self._speaker_values[owner], self._user_speaker_values[owner]
        for key, (_, speaker, user_speaker, posting) in zip(token_keys, dump["tokens"], strict=True):
            tokens[key[3]] = (key, pred.setdefault(key, dict.fromkeys([entry_keys[i] for i in posting], has_token)))
            if speaker:
                speakers.add(key[3])
            if user_speaker:
                user_speakers.add(key[3])
        for key, (_, _, posting) in zip(entity_keys, dump["entities"], strict=True):
            entities[key[3]] = (key, pred.setdefault(key, dict.fromkeys([entry_keys[i] for i in posting], mentions)))
        for earlier, later in dump["next"]:
            succ[entry_keys[earlier]][entry_keys[later]] = pred[entry_keys[later]][entry_keys[earlier]] = next_
        ids = [key[3] for key in entry_keys]
        for entry_id, near in zip(ids, dump["neighbours"], strict=True):
            if near is not None:
                self._neighbours[entry_id] = tuple(ids[i] for i in near)
        sessions = self._sessions[owner]
        for project_id, session_id, held in dump["sessions"]:
            sessions[(_intern_opt(project_id), sys.intern(session_id))] = [ids[i] for i in held]
        _clear_cache(self._graph)

    def _record_of(self, entry: _Entry) -> dict[str, Any]:
        graph = self._graph
        props = entry.props
        linked = graph._succ[entry.key]
        return {
            "id": entry.entry_id,
            "author": entry.author,
            "role": props["role"],
            "text": props["text"],
            "timestamp": props["timestamp"],
            "position": entry.position,
            "language": props.get("language"),
            "tokens": [n[3] for n in linked if n[0] == TOKEN],
            "entities": [[n[3], graph._node[n]["label"]] for n in linked if n[0] == ENTITY],
            "time_refs": props.get("time_refs"),
        }


_Dated = tuple[str, int, Sequence[tuple[int, int]] | None]  # an entry for _DaysOfEntries.add


def _dated(own: Mapping[str, _Entry], rows: Iterable[Sequence[Any]]) -> Iterator[_Dated]:
    """For :meth:`_DaysOfEntries.add`, the entries of a snapshot's rows (``_dump``'s, the id
    first and the ``time_refs`` last) as ``own`` holds them: one at a time, so that opening
    a large store makes no list of them. Only their ranges: an entry's days are made when a
    search first asks for them."""
    for row in rows:
        entry_id, refs = row[0], row[-1]
        when = own[entry_id].timestamp
        yield entry_id, when.toordinal(), entry_times(when, refs)[1] if refs else refs


def _intern_opt(value: str | None) -> str | None:
    return None if value is None else sys.intern(value)


def _entry_node(
    app: str,
    user: str,
    entry_id: str,
    project_id: str | None,
    session_id: str | None,
    position: int,
    author: str,
    role: str,
    text: str,
    timestamp: str,
    language: str | None,
) -> dict[str, Any]:
    """An ``Entry`` node's attributes: the properties of ``entry_properties`` (the Neo4j
    backend's) but ``time_refs``, which the caller adds (when a record has them, else once
    read: ``_Entry.time_refs``)."""
    return {
        "__labels__": _LABELS[ENTRY],
        "id": entry_id,
        "app_name": app,
        "user_id": user,
        "project_id": project_id,
        "session_id": session_id,
        "position": position,
        "author": author,
        "role": role,
        "text": text,
        "timestamp": timestamp,
        "language": language,
    }


def _token_node(app: str, user: str, value: str, speaker: bool, user_speaker: bool) -> dict[str, Any]:
    """A ``Token`` node's attributes (see :mod:`graphmem.backends._graph_model`)."""
    return {
        "__labels__": _LABELS[TOKEN],
        "app_name": app,
        "user_id": user,
        "value": value,
        "speaker": speaker,
        "user_speaker": user_speaker,
    }


def _entity_node(app: str, user: str, name: str, label: str) -> dict[str, Any]:
    """An ``Entity`` node's attributes (see :mod:`graphmem.backends._graph_model`)."""
    return {"__labels__": _LABELS[ENTITY], "app_name": app, "user_id": user, "name": name, "label": sys.intern(label)}


def _clear_cache(graph: nx.DiGraph[Any]) -> None:
    """What networkx's own mutators do after a change: drop its cached conversions."""
    cache = getattr(graph, "__networkx_cache__", None)
    if cache:
        cache.clear()


def _entry_record(entry: PreparedEntry) -> dict[str, Any]:
    stored, memory = entry.stored, entry.stored.memory
    return {
        "id": stored.entry_id,
        "author": memory.author,
        "role": memory.content.role,
        "text": memory.text,
        "timestamp": memory.timestamp.isoformat(),
        "position": stored.position,
        "language": stored.language,
        "tokens": list(entry.tokens),
        "entities": [[e.name, e.label] for e in entry.entities],
        # Resolved once, when written: a search with a time reads them for every holder.
        "time_refs": time_refs(memory.text, memory.timestamp),
    }


def _adds_entries(record: dict[str, Any]) -> bool:
    """Whether a journal record stores an entry (the others only remove)."""
    op: str = record["op"]
    if op in ("replace_session", "append_session", "restore_entries"):
        return bool(record["entries"])
    return op == "insert_entry"
