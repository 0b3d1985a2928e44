"""Google ADK memory over any graphmem store: :class:`GraphmemMemoryService`.

An ADK ``BaseMemoryService`` (google-adk 2.x) that stores an agent's conversations in a
graphmem :class:`~graphmem.MemoryService` (networkx or Neo4j) and answers ADK's
``load_memory`` and ``preload_memory`` tools with graphmem's explainable recall. Needs the
``adk`` extra (``pip install 'graphmem[adk]'``); ``import graphmem`` never imports ADK.

How ADK's calls map onto graphmem (ADK's ``app_name`` and ``user_id`` are graphmem's):

- ``add_session_to_memory(session)``: the session's text events become the entries of
  graphmem session ``session.id``, **replacing** what an earlier call stored for it from
  the session's first event on, so a session added after every turn is never duplicated.
  Each entry is named after its event (entry id ``adk-`` and a hash of the event's id and
  session), so the events stored are known whatever their timestamps say (a clock set
  back, events appended out of time order). Stored turns of events before the first one
  passed are kept, before the new ones: a runner that loads only the latest events
  (``GetSessionConfig(num_recent_events=N)``) passes a part of the session, and the turns
  before it stay remembered (with their ids and terms). One all-or-nothing
  ``restore_session``; a session of no events changes nothing. Turns stored by graphmem
  before entries were named after events are told by author, role, text and time. The
  read and the replacement are one step for this service's other writes of that session
  on the same event loop (see the method for what is not covered). Events without text
  (function calls and responses, partial stream chunks, images, audio, files, code run)
  and model thoughts are skipped.
- ``add_events_to_memory(..., events, session_id)``: a delta, appended after the
  session's last entry (``MemoryService.append_to_session``), ``NEXT``-linked to it;
  without a ``session_id`` the events are stored outside any session, each an entry of
  its own, in one all-or-nothing write. An event already stored there (by its id, as
  ADK's own memory services tell) is not stored again: a retried call adds nothing.
- ``add_memory(..., memories)``: each ADK ``MemoryEntry`` is stored outside any session,
  all of them in one all-or-nothing write, under its ``id`` when it has one (a retry
  replaces it: one copy; ``delete_memory`` of that id deletes it; ``search_memory`` gives
  it back). The entry id is the ``id`` and a suffix of the user's own (``~`` and a hash of
  the app and user): entry ids are unique in the whole store, and an ``id`` refused because
  another user held it told whether anybody stored it (an id made from a text: whether
  anybody said it). An id this user holds in a session or another scope is refused
  (``EntryIdConflictError``), one that is no valid graphmem id too (``InvalidMemoryError``),
  storing nothing. A ``timestamp``
  without an offset is local time, as ADK writes it
  (``datetime.fromtimestamp(ts).isoformat()``).
- ``search_memory(..., query)``: ADK ``MemoryEntry`` items, best first, with ``id`` the
  graphmem entry id, ``author``, ``timestamp`` (ISO 8601, UTC) and ``custom_metadata``
  saying why it came back: ``score``, ``matched_tokens``, ``matched_entities``,
  ``context_score`` (the share of the score that came from neighbouring turns),
  ``context_from`` (the id of the turn that lent it), ``related_to`` (matched words read as
  related to a query word, and that word: ``{"puppy": "pet"}``), ``read_as`` (query words
  read as another word of the entry), ``session_id`` and ``project_id``.
- ``delete_memory(..., memory_id)``: deletes that entry if the user has it in this
  service's scope (global, or the service's project); any other id deletes nothing. The
  entry of an event is deleted with its event's other pieces (a text over graphmem's
  limit), and the event is not stored again by this service (below).

**Reading events and memories.** What was said by voice is one entry per utterance: the
transcription events of one speaker in a row up to one marked ``finished`` (ADK's finished
event holds the whole utterance), pieces joined with a space where neither has one at the
boundary (none between letters of Chinese, Japanese or Korean). A content without a role is
the user's when its author is ``"user"``, else the model's; a message without an author is
stored under its role (``"user"`` or ``"model"``), the speaker graphmem's search reads.
What a part holds other than text (an image, audio, a file, code the model ran and its
output) is not stored, logged at debug level; an audio part's transcription (a model
answering in audio gives its words there) is what was said, and is stored. A text over graphmem's limit
(:data:`~graphmem._models.MAX_TEXT_LENGTH`, 1,048,576 characters) is stored as
consecutive entries of the same author, role and time, cut at a space; a lone surrogate
(not Unicode) becomes U+FFFD; both are logged as warnings (logger ``graphmem.adk``), and
neither fails the call. Every event or memory of a call is read and checked before
anything is stored; what cannot be stored as given (an event timestamp in milliseconds, a
memory timestamp that is not ISO 8601) raises ``InvalidMemoryError`` (a ``GraphmemError``
and a ``ValueError``) and stores nothing of the call.

**Projects.** The project is chosen when the service is built
(``GraphmemMemoryService(service, project_id="P")``): every write goes to P and a search
sees global memory plus P's. On a backend without project support (networkx) this raises
``ProjectScopingUnsupportedError``, as every project call does. A write's
``custom_metadata`` may repeat the service's ``project_id`` but not name another one
(``InvalidMemoryError``: a write is never silently put in another scope); other keys are
ignored.

**Through ADK's service registry** (``adk web`` / ``adk api_server
--memory_service_uri=graphmem+neo4j://host:7687``): call :func:`register_with_adk` from a
``services.py`` in the agents folder. The URIs are those of :func:`graphmem.open_memory`
with a ``graphmem+`` prefix (``graphmem+memory:``, ``graphmem+file:///abs/memory.journal``,
``graphmem+bolt://``, ``graphmem+neo4j://``, ...). A service built from a URI opens its
store on its first call (ADK builds services synchronously, before any event loop runs),
owns it and closes it in :meth:`GraphmemMemoryService.close`. ``close()`` is final: every
later call raises ``ServiceClosedError`` (a service given by its owner stays open for it).

**Deleted memories stay deleted, in this service instance.** ``delete_memory`` of an entry
stored from an ADK event records the event in the service (the key its entry ids are named
after, a hash: never text), per app, user and project; a later ``add_session_to_memory`` or
``add_events_to_memory`` does not store that event again (as ADK's InMemoryMemoryService
keeps the ids of deleted events), so a runner adding its session after every turn does not
bring the turn back. The event is the unit: deleting any piece of a text stored as several
entries deletes them all, and an utterance transcribed over several events is left out
whenever the event that ended it is among those passed (its earlier events sent again
without that one are not known to be of it). A reply of several messages deleted by its id
forgets each message's event; one message deleted by its own entry id, that message's.
Not covered: another ``GraphmemMemoryService`` or process (the record lives in the
instance: a restarted server re-adding a session from a persisted session service stores
the deleted turns again), turns stored without an event id (by an earlier graphmem, or
events without one: nothing names them), and entries deleted around this service
(``MemoryService.delete_entry``, the MCP server). The record grows by one key (36
characters) per event deleted through this service and is dropped with the instance; it
holds no text, so it hinders no erasure (``MemoryService.delete_user`` removes the user's
entries; their events stay out of later adds of this instance).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from graphmem._errors import InvalidMemoryError, ProjectScopingUnsupportedError, ServiceClosedError
from graphmem._models import (
    MAX_ID_LENGTH,
    MAX_TEXT_LENGTH,
    Content,
    MemoryEntry,
    Part,
    SearchRequest,
    as_utc,
    is_identifier,
    validate_identifier,
    validate_project_id,
)
from graphmem._open import open_memory, parse_store_uri
from graphmem._pipelines import NO_SPACE_SCRIPT
from graphmem._service import EntryRecord, MemoryService, StoredEntry, new_entry_id, one_call

try:
    from google.adk.memory import BaseMemoryService
    from google.adk.memory.base_memory_service import SearchMemoryResponse
    from google.adk.memory.memory_entry import MemoryEntry as AdkMemoryEntry
    from google.genai import types
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(f"graphmem.adk needs Google ADK 2: pip install 'graphmem[adk]' ({exc})") from exc

if TYPE_CHECKING:
    from google.adk.cli.service_registry import ServiceRegistry
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session
    from spacy.language import Language

    from graphmem._decompose import Decomposer

__all__ = ["REPLY_ID_SEPARATOR", "URI_SCHEMES", "GraphmemMemoryService", "register_with_adk"]

logger = logging.getLogger(__name__)

#: The memory URI schemes :func:`register_with_adk` registers: :func:`graphmem.open_memory`'s
#: schemes with the ``graphmem+`` prefix (ADK's registry dispatches on the scheme alone).
URI_SCHEMES = (
    "graphmem+memory",
    "graphmem+file",
    "graphmem+bolt",
    "graphmem+bolt+s",
    "graphmem+bolt+ssc",
    "graphmem+neo4j",
    "graphmem+neo4j+s",
    "graphmem+neo4j+ssc",
)


class GraphmemMemoryService(BaseMemoryService):
    """An ADK memory service backed by a graphmem store (see the module's docstring).

    Give either a graphmem ``service`` (it stays yours: :meth:`close` leaves it open) or a
    store ``uri`` (opened with :func:`graphmem.open_memory` on the first call, and closed by
    :meth:`close`). After :meth:`close` every call raises ``ServiceClosedError``, whichever
    was given.

    Args:
        service: the graphmem service to store in.
        uri: a store URI instead (``graphmem+`` prefix optional), as ADK's registry passes it.
        project_id: the project every write goes to and every search includes; ``None``
            for global memory only.
        limit: how many memories a search returns at most (ADK's tools put them all in
            the prompt).
        min_score: leave out memories scoring below this (0..1); ``None`` keeps all.
        nlp: the spaCy pipeline for a store opened from ``uri`` (see ``open_memory``).
        agents_dir: passed by ADK's registry; not used.

    Raises:
        ValueError: neither or both of ``service`` and ``uri``; a ``limit`` below 1; a
            ``min_score`` outside 0..1.
        InvalidStoreUriError: a URI that names no store.
        InvalidProjectIdError: a bad ``project_id``.
        ProjectScopingUnsupportedError: a ``project_id`` with a ``service`` that has no
            project support (from a ``uri``: on the first call).
    """

    def __init__(
        self,
        service: MemoryService | None = None,
        *,
        uri: str | None = None,
        project_id: str | None = None,
        limit: int = 10,
        min_score: float | None = None,
        nlp: Language | str | Decomposer | None = None,
        agents_dir: str | None = None,
    ) -> None:
        if (service is None) == (uri is None):
            raise ValueError("give either a graphmem service or a store uri, not both and not neither")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"limit must be an integer of at least 1, got {limit!r}")
        if min_score is not None and (
            not isinstance(min_score, int | float) or isinstance(min_score, bool) or not 0.0 <= min_score <= 1.0
        ):
            # Checked here, like the limit, not on the agent's first search.
            raise ValueError(f"min_score must be a number from 0 to 1 (or None), got {min_score!r}")
        if project_id is not None:
            validate_project_id(project_id)
            if service is not None and not service.supports_project_scoping():
                # Every write of such a service is add_session_to_project (as from a uri).
                raise ProjectScopingUnsupportedError(
                    "add_session_to_project", type(service).__name__, call="GraphmemMemoryService(project_id=...)"
                )
        if uri is not None:
            parse_store_uri(uri)  # a bad URI fails here, at start-up, not on the first turn
        self._service = service
        self._uri = uri
        self._owns_service = service is None
        self._nlp = nlp
        # One lock per event loop: an asyncio lock belongs to the loop that first waited on
        # it, and ADK's synchronous Runner.run calls from a new loop every turn.
        self._opening: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        # The sessions being written by a call of this service that reads them first (see
        # _session_write); an entry lives only while a call holds or waits for its lock.
        self._session_locks: dict[_SessionKey, _SessionLock] = {}
        # The events whose memory was deleted, so that no later add stores them again: the
        # key of each (its first entry's id, a hash: never text), by app, user and project
        # (see delete_memory).
        self._forgotten: dict[tuple[str, str, str | None], set[str]] = {}
        self._closed = False
        self.project_id = project_id
        self.limit = limit
        self.min_score = min_score

    async def memory_service(self) -> MemoryService:
        """The graphmem service (opening the store of a ``uri`` the first time).

        Raises:
            ServiceClosedError: :meth:`close` was called.
        """
        self._refuse_if_closed()
        if self._service is None:
            async with self._opening_lock():
                if self._service is None:
                    assert self._uri is not None
                    service = await open_memory(self._uri, nlp=self._nlp)
                    if self.project_id is not None and not service.supports_project_scoping():
                        # As for a service given without projects: refused before any call
                        # (a delete by id, which asks no project, would act on global memory).
                        await service.close()
                        raise ProjectScopingUnsupportedError(
                            "add_session_to_project",
                            type(service).__name__,
                            call="GraphmemMemoryService(project_id=...)",
                        )
                    if self._closed:
                        # close() ran while the store was opening: it found nothing to close.
                        await service.close()
                        self._refuse_if_closed()
                    self._service = service
        return self._service

    def _opening_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._opening is None or self._opening[0] is not loop:
            self._opening = (loop, asyncio.Lock())
        return self._opening[1]

    async def close(self) -> None:
        """Close the store if this service opened it (from a ``uri``); a ``service`` given
        stays open for its owner. Final either way: every later call raises
        ``ServiceClosedError`` (a store opened again would be a new, empty ``memory:`` store,
        or a journal's writer lock that nobody releases). Idempotent.

        A call of this service running meanwhile makes its reads and writes of the store as
        one call of it: once the store is closed (by this, or by the owner of a ``service``
        given), the rest of them raise ``BackendUnavailableError`` rather than open the store
        again (see the backend's ``close()``). A call whose only write is its last
        (``add_session_to_memory``, ``add_events_to_memory``) then stored nothing; one of
        several writes (``add_memory`` removing the pieces a shorter text no longer has,
        ``delete_memory`` of a reply of several entries) keeps those done before the close,
        each whole."""
        self._closed = True
        if self._owns_service and self._service is not None:
            service, self._service = self._service, None
            await service.close()

    @asynccontextmanager
    async def _session_write(self, app_name: str, user_id: str, session_id: str | None) -> AsyncIterator[None]:
        """Hold the session (in this service's scope; ``None``: the entries outside any
        session) for one write of it: the other writes of this service to that session, and
        its deletes of the session's memories, on this event loop, wait until it is done.

        ``add_session_to_memory`` reads the stored session and then replaces it whole: a
        write of the session in between (another ``add_session_to_memory``, an
        ``add_events_to_memory`` delta) was overwritten, its turns lost; a memory deleted in
        between was stored again."""
        # The loop is part of the key: an asyncio lock belongs to the loop that first waited
        # on it, and ADK's synchronous Runner.run gives every turn a loop of its own.
        key = (asyncio.get_running_loop(), app_name, user_id, self.project_id, session_id)
        entry = self._session_locks.get(key)
        if entry is None:
            entry = self._session_locks[key] = _SessionLock()
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            # Dropped by the last call that held or waited for it (one cancelled while
            # waiting too), so a service that sees many sessions keeps no lock for each.
            entry.users -= 1
            if entry.users == 0:
                del self._session_locks[key]

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise ServiceClosedError(
                "this GraphmemMemoryService was closed: build a new one to use its store again"
            )

    # ------------------------------------------------------------------ writes

    async def add_session_to_memory(self, session: Session) -> None:
        """Store the session's text events as graphmem session ``session.id``: what an earlier
        call stored from the first of these events on is replaced; the stored turns before
        it are kept (a runner that loaded only the latest events passed a part of the
        session). A stored turn is known by its event, after whose id its entry id is named,
        not by its time (see :func:`_before_window`, also for turns stored without one).

        The read of the stored session and its replacement are one step for the other calls
        of this service on the same event loop: an ``add_session_to_memory`` or
        ``add_events_to_memory`` of the same session waits until it is done (they are
        serialised, in the order they came, not merged: a session replaces what a call
        before it stored from its first event on, as always). Not covered: another process
        writing the same store (a Neo4j server shared by several), another
        ``GraphmemMemoryService`` over the same store, and a call on another event loop
        (ADK's synchronous ``Runner.run`` runs each turn on a loop of its own, in a thread of
        its own). A ``delete_memory`` of one of the session's turns waits too, so the turn
        is not stored again between the read and the write; an event whose memory this
        service deleted is never stored again (see the module's docstring).
        Two such writes of one session at once store its events under the same entry ids:
        one may fail with ``EntryIdConflictError``, storing nothing (add it again).

        Raises:
            InvalidMemoryError: an event timestamp that is no time in seconds since the
                epoch; nothing was stored.
        """
        self._refuse_if_closed()
        events = _distinct_events(session.events)
        said = _entries_of_events(events)
        if not events:
            return  # a window of no events says nothing: nothing of the session to replace
        _warn_of_rewinds_before(session)
        window = _Window(
            event_ids=frozenset(event.id for event in events if event.id),
            since=_event_time(events[0]),
            # What the window's events said, rewound or not: a stored turn without an event id
            # that is one of these is the window's own (see _before_window).
            said=[s.memory for s in said] + [s.memory for s in _entries_of_events(_rewound(events), rewinds=False)],
        )
        memory = await self.memory_service()
        app_name, user_id, session_id = session.app_name, session.user_id, session.id
        with one_call(memory):  # its read and its write: see close()
            async with self._session_write(app_name, user_id, session_id):
                await self._replace_window(memory, session, window, said)

    async def _replace_window(
        self, memory: MemoryService, session: Session, window: _Window, said: Sequence[_Said]
    ) -> None:
        """Replace the stored turns of the window's events by what they said (``said``), keeping
        the stored turns before the window (the work of :meth:`add_session_to_memory`, under
        its session's lock)."""
        app_name, user_id, session_id = session.app_name, session.user_id, session.id
        stored = await memory.session_entries(app_name, user_id, session_id, project_id=self.project_id)
        names = _EventEntryIds(app_name, user_id, self.project_id, session_id)
        older = _before_window(stored, window, names)
        said = self._not_forgotten(names, said)  # under the lock, which delete_memory takes too
        # Kept with the terms they were stored with, so nothing is decomposed again (an
        # entry deleted meanwhile has none, and is not brought back).
        terms = await memory.entry_terms(app_name, user_id, [e.entry_id for e in older]) if older else {}
        kept = [e for e in older if e.entry_id in terms]
        ids = names.of(said)
        records = [
            EntryRecord(
                memory=e.memory, entry_id=e.entry_id, position=e.position, terms=terms[e.entry_id], language=e.language
            )
            for e in kept
        ]
        # Without kept turns (the whole session, the usual case) the session is numbered from 0.
        after = kept[-1].position + 1 if kept else None
        records += [
            EntryRecord(memory=s.memory, entry_id=entry_id, position=None if after is None else after + i)
            for i, (s, entry_id) in enumerate(zip(said, ids, strict=True))
        ]
        # One replacement, all or nothing: the kept turns, then the window's. Each entry of an
        # event is named after it, so that a later call knows which events it holds.
        await memory.restore_session(app_name, user_id, session_id, records, project_id=self.project_id)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Append the events' text to the session (after its last stored entry); without a
        ``session_id``, store each on its own. An event stored before (by its id, here or
        by ``add_session_to_memory`` of that session) is skipped, as ADK's own memory
        services skip it: a retried call adds nothing; so is an event whose memory this
        service deleted (see the module's docstring). All or nothing: every event is read
        and checked before anything is stored. An append to a session waits for an
        ``add_session_to_memory`` of it in progress (see there for what that covers).

        Raises:
            InvalidMemoryError: an event timestamp that is no time in seconds since the
                epoch, or ``custom_metadata["project_id"]`` naming another project than the
                service's.
        """
        self._check_metadata(custom_metadata)
        validate_identifier(app_name, "app_name")
        validate_identifier(user_id, "user_id")
        events = _distinct_events(events)
        said = _entries_of_events(events)  # every event checked before any is stored
        memory = await self.memory_service()
        names = _EventEntryIds(app_name, user_id, self.project_id, session_id)
        with one_call(memory):  # its read and its write: see close()
            if session_id is None:
                async with self._session_write(app_name, user_id, None):
                    said = self._not_forgotten(names, said)
                    # An event stored before outside any session has the same entry ids:
                    # replaced by itself, so a retry adds nothing.
                    ids = names.of(said)
                    records = [
                        EntryRecord(memory=s.memory, entry_id=entry_id) for s, entry_id in zip(said, ids, strict=True)
                    ]
                    await self._store_outside_sessions(memory, app_name, user_id, records)
                return
            async with self._session_write(app_name, user_id, session_id):
                await self._append_new_events(memory, names, session_id, events, said)

    async def _append_new_events(
        self,
        memory: MemoryService,
        names: _EventEntryIds,
        session_id: str,
        events: Sequence[Event],
        said: Sequence[_Said],
    ) -> None:
        """Append to the session what ``events`` said (``said``), leaving out the events it
        holds (the work of :meth:`add_events_to_memory`, under its session's lock)."""
        app_name, user_id = names.app_name, names.user_id
        # An event is held when any entry of it is: its first one, or (that one deleted)
        # another piece of its text.
        asked = [key for key in (names.key(e.id) for e in events) if key is not None]
        asked += [entry_id for entry_id in names.of(said) if entry_id is not None]
        found = await memory.get_entries(app_name, user_id, asked) if asked else []
        here = (session_id, self.project_id)
        held = {_event_key_of(e.entry_id) for e in found if (e.session_id, e.project_id) == here}
        if held:
            # Read again without them: a transcribed utterance is what its new events said.
            said = _entries_of_events([e for e in events if names.key(e.id) not in held])
        said = self._not_forgotten(names, said)
        if not said:
            return
        # An event without an id (ADK gives every event one) cannot be known again: a new id.
        entry_ids = [entry_id or new_entry_id() for entry_id in names.of(said)]
        entries = [s.memory for s in said]
        if self.project_id is None:
            await memory.append_to_session(app_name, user_id, session_id, entries, entry_ids=entry_ids)
        else:
            await memory.append_to_session_in_project(
                app_name, user_id, session_id, self.project_id, entries, entry_ids=entry_ids
            )

    def _not_forgotten(self, names: _EventEntryIds, said: Sequence[_Said]) -> list[_Said]:
        """``said`` without what came from an event whose memory was deleted (see
        :meth:`delete_memory`): an utterance transcribed over several events is left out
        when any of them was."""
        forgotten = self._forgotten.get((names.app_name, names.user_id, names.project_id))
        if not forgotten:
            return list(said)
        return [s for s in said if not any(names.key(event_id) in forgotten for event_id in s.from_events)]

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[AdkMemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Store each memory on its own, outside any session (one with no text is skipped).

        A memory with an ``id`` is stored under it: the same id again (a retry, here or in a
        later call) replaces that memory, so one copy is kept, ``delete_memory`` of the id
        deletes it, and ``search_memory`` gives it as the memory's ``id``. Its entry id is
        the ``id`` and the user's suffix (:func:`_owner_suffix`), so another user's ids are
        never in the way (nor told: refusing an id another user held said that somebody
        stored it); an entry this user holds under the ``id`` itself (stored by graphmem
        0.1 before the suffix, or through the core API) is that memory. A text over
        graphmem's limit is stored as several entries, the first under that entry id, the
        others under ids derived from it as an event's are (``adkm-`` and a hash of the
        place and the entry id, ``-1``, ``-2``, ...: no id a caller gives another
        memory, such as ``note-1`` beside ``note``, is ever taken for a piece); a memory
        stored again in fewer pieces loses the others, and deleting the id deletes them
        all. A memory without an id (or ``""``) gets new ids, as every call stores it anew.

        All or nothing: every memory is checked before any is stored, and they are stored
        in one write. A timestamp without an offset is local time, as ADK writes it
        (``datetime.fromtimestamp(ts).isoformat()``); one with an offset is that moment;
        none is now.

        Raises:
            InvalidMemoryError: a timestamp that is not ISO 8601 (or leaves years 1 to 9999
                in UTC); an ``id`` that is no valid graphmem id (over 256 characters,
                control characters, a lone surrogate: refused rather than stored under
                another id, which a retry or a delete by it would not find);
                ``custom_metadata["project_id"]`` naming another project than the service's.
            EntryIdConflictError: an ``id`` this user holds in a session or another scope
                (global memory, a project).
            Nothing of the call was stored on any of these.
        """
        self._check_metadata(custom_metadata)
        validate_identifier(app_name, "app_name")
        validate_identifier(user_id, "user_id")
        memory = await self.memory_service()
        with one_call(memory):  # its reads, write and delete: see close()
            given = [m.id for m in memories if m.id and is_identifier(m.id)]
            held = {e.entry_id for e in await memory.get_entries(app_name, user_id, given)} if given else set()
            records, pieces = _records_of_memories(memories, app_name, user_id, self.project_id, held)
            await self._store_outside_sessions(memory, app_name, user_id, records)
            if pieces:
                # A memory stored again in fewer pieces (a shorter text): the pieces it no longer has.
                gone = [
                    _piece_id(_memory_pieces_key(app_name, user_id, self.project_id, memory_id), piece)
                    for memory_id, count in pieces.items()
                    for piece in range(count, count + _PIECES_READ)
                ]
                stale = [e.entry_id for e in await memory.get_entries(app_name, user_id, gone)
                         if (e.session_id, e.project_id) == (None, self.project_id)]
                if stale:
                    await memory.delete_entries_by_id(app_name, user_id, stale)

    async def _store_outside_sessions(
        self, memory: MemoryService, app_name: str, user_id: str, records: Sequence[EntryRecord]
    ) -> None:
        """Store entries outside any session in one write: a failure stores none of them
        (``add_entry`` one by one stored the first ones, and a retry stored them twice). A
        record's id the user holds outside any session replaces that entry."""
        if records:
            await memory.restore_session(app_name, user_id, None, records, project_id=self.project_id)

    def _check_metadata(self, custom_metadata: Mapping[str, object] | None) -> None:
        if custom_metadata is not None and "project_id" in custom_metadata:
            if custom_metadata["project_id"] != self.project_id:
                raise InvalidMemoryError(
                    f"custom_metadata names project_id {custom_metadata['project_id']!r}, but this memory "
                    f"service writes to {self.project_id!r}: the project is chosen when the service is built "
                    "(GraphmemMemoryService(..., project_id=...)); use one service per project"
                )

    # ------------------------------------------------------------------ reads

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """Recall the user's memories for ``query`` (global, plus the service's project)."""
        memory = await self.memory_service()
        response = await memory.search(
            SearchRequest(
                query=query,
                app_name=app_name,
                user_id=user_id,
                limit=self.limit,
                min_score=self.min_score,
                project_id=self.project_id,
            )
        )
        suffix = _owner_suffix(app_name, user_id)
        return SearchMemoryResponse(
            memories=[
                AdkMemoryEntry(
                    # A reply of several messages is one memory: deleting it deletes them all.
                    id=REPLY_ID_SEPARATOR.join(_memory_id(h.entry_id, suffix) for h in (hit, *hit.folded)),
                    author=hit.memory.author,
                    timestamp=hit.memory.timestamp.isoformat(),
                    # A reply typed as several messages is one memory: a part per message.
                    content=types.Content(
                        role=hit.memory.content.role,
                        parts=[types.Part(text=h.memory.text) for h in hit.reply],
                    ),
                    custom_metadata={
                        "score": hit.score,
                        "matched_tokens": list(hit.matched_tokens),
                        "matched_entities": list(hit.matched_entities),
                        "context_score": hit.context_score,
                        "context_from": hit.context_from,
                        "related_to": dict(hit.related_to),
                        "read_as": dict(hit.read_as),
                        "session_id": hit.session_id,
                        "project_id": hit.project_id,
                        "reply_ids": [h.entry_id for h in hit.reply] if hit.folded else [],
                    },
                )
                for hit in response.hits
            ]
        )

    # ------------------------------------------------------------------ deletes

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Delete the memory with this id (a search result's ``id``) if the user has it in
        this service's scope: a global entry, or one of the service's project; a memory of
        several messages (a reply, its ids joined by :data:`REPLY_ID_SEPARATOR`) with all
        of them. Any other id (another user's, another project's, an unknown one, ``None``,
        a string that is no valid id: the model may garble one) deletes nothing.

        The entry of an ADK event goes with every other entry of that event (the pieces of
        a text over graphmem's limit), and the event is recorded in this service so that no
        later ``add_session_to_memory`` or ``add_events_to_memory`` stores it again (see the
        module's docstring for what that covers). A delete waits for a write of the entry's
        session in progress in this service (on this event loop).

        Raises:
            ServiceClosedError: :meth:`close` was called (whatever the id).
        """
        self._refuse_if_closed()
        if not isinstance(memory_id, str) or not memory_id:
            return
        memory = await self.memory_service()
        with one_call(memory):  # its reads and deletes: see close()
            # An entry id that holds the separator is that entry; else each part of the id.
            whole = await self._own_entry(memory, app_name, user_id, memory_id)
            for stored in [whole] if whole else [
                await self._own_entry(memory, app_name, user_id, part) for part in memory_id.split(REPLY_ID_SEPARATOR)
            ]:
                if stored is not None and stored.project_id in (None, self.project_id):
                    # Under the session's lock: an add_session_to_memory of it between its read
                    # and its write would store the deleted turn again.
                    async with self._session_write(app_name, user_id, stored.session_id):
                        await self._delete_whole(memory, app_name, user_id, stored)

    @staticmethod
    async def _own_entry(memory: MemoryService, app_name: str, user_id: str, memory_id: str) -> StoredEntry | None:
        """The user's entry a memory id names: the entry of that id, else of that id with the
        user's suffix (an ``add_memory`` id, as ``search_memory`` gives it back)."""
        for entry_id in (memory_id, memory_id + _owner_suffix(app_name, user_id)):
            if is_identifier(entry_id) and (stored := await memory.get_entry(app_name, user_id, entry_id)) is not None:
                return stored
        return None

    async def _delete_whole(self, memory: MemoryService, app_name: str, user_id: str, stored: StoredEntry) -> None:
        """Delete the memory of a stored entry whole, and keep its event from being stored
        again (the work of :meth:`delete_memory`, under the session's lock).

        An entry of an event: every entry of that event (the pieces of a text over
        graphmem's limit), and the event's key is recorded in this service. Another entry
        outside any session: it and, when it is an ADK memory over the limit, its further
        pieces (:func:`_memory_pieces_key`). Another entry (a turn stored without an event
        id): that entry."""
        key = _event_key_of(stored.entry_id)
        if key is None and stored.session_id is not None:
            await memory.delete_entry(app_name, user_id, stored.entry_id)
            return
        first = key or _memory_pieces_key(app_name, user_id, stored.project_id, stored.entry_id)
        place = (stored.session_id, stored.project_id)
        doomed = [stored.entry_id]
        start = 0
        while True:  # the pieces are numbered on from the first: read until a batch ends without one
            batch = [_piece_id(first, n) for n in range(start, start + _PIECES_READ)]
            found = [e.entry_id for e in await memory.get_entries(app_name, user_id, batch)
                     if (e.session_id, e.project_id) == place]
            doomed += found
            if batch[-1] not in found:
                break
            start += _PIECES_READ
        await memory.delete_entries_by_id(app_name, user_id, doomed)
        if key is not None:
            # Recorded after the delete: a failed one leaves the event as it was.
            self._forgotten.setdefault((app_name, user_id, stored.project_id), set()).add(key)


#: How many piece ids :meth:`GraphmemMemoryService._delete_whole` reads at once.
_PIECES_READ = 16


def _piece_id(first: str, piece: int) -> str:
    """The entry id of piece ``piece`` (0: the first) of a text stored as several entries:
    the first one's id, then that id and ``-1``, ``-2``, ..."""
    return first if piece == 0 else f"{first}-{piece}"


#: A session as :meth:`GraphmemMemoryService._session_write` holds it: the event loop, app,
#: user, project (the service's) and session ids.
_SessionKey = tuple[asyncio.AbstractEventLoop, str, str, str | None, str | None]


@dataclass(slots=True)
class _SessionLock:
    """A session's lock and how many calls hold or wait for it."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


#: Joins the entry ids of a memory of several messages (a reply typed as several) into its
#: ``MemoryEntry.id``, best-ranked message first; entry ids graphmem makes are hex (an ADK
#: event's: ``adk-`` and hex).
REPLY_ID_SEPARATOR = "+"


def register_with_adk(
    registry: ServiceRegistry | None = None,
    *,
    project_id: str | None = None,
    limit: int = 10,
    min_score: float | None = None,
    nlp: Language | str | Decomposer | None = None,
) -> None:
    """Register graphmem's memory URI schemes (:data:`URI_SCHEMES`) with ADK's service registry.

    Call it from a ``services.py`` in the agents folder; then ``adk web`` and ``adk
    api_server`` accept ``--memory_service_uri=graphmem+neo4j://host:7687`` or
    ``graphmem+file:///abs/path/memory.journal``. The keyword arguments are passed to
    every :class:`GraphmemMemoryService` the registry builds.

    Args:
        registry: the registry; ``None`` for ADK's own (``get_service_registry()``).
    """
    if registry is None:
        from google.adk.cli.service_registry import get_service_registry

        registry = get_service_registry()

    def factory(uri: str, **kwargs: Any) -> GraphmemMemoryService:
        return GraphmemMemoryService(
            uri=uri, project_id=project_id, limit=limit, min_score=min_score, nlp=nlp,
            agents_dir=kwargs.get("agents_dir"),
        )

    for scheme in URI_SCHEMES:
        registry.register_memory_service(scheme, factory)


# ---------------------------------------------------------------------------- conversions


@dataclass(frozen=True, slots=True)
class _Said:
    """An entry to store, the id of the event that said it (``""``: an event without one),
    and the ids of every event it was read from (an utterance transcribed over several
    events: all of them, the one that ends it last)."""

    memory: MemoryEntry
    event_id: str
    from_events: tuple[str, ...]


def _entries_of_events(events: Sequence[Event], *, rewinds: bool = True) -> list[_Said]:
    """What the events said, as graphmem entries, in order: every event a rewind left live
    (every event, with ``rewinds=False``) with text to remember, an utterance transcribed
    over several events as one (said by the event that ends it, whose time it has).

    Every event is read (and its timestamp checked) before any entry is stored."""
    entries: list[_Said] = []
    heard: list[str] = []  # the transcribed utterance so far
    heard_from: list[str] = []  # ... and the ids of its events
    live = [event for event in (_live_events(events) if rewinds else events) if not event.partial]
    for i, event in enumerate(live):
        spoken = _transcribed(event)
        if spoken is None:
            entries += [_Said(memory, event.id, (event.id,)) for memory in _entries_of_event(event)]
            continue
        role, text, finished = spoken
        heard.append(text)
        heard_from.append(event.id)
        after = _transcribed(live[i + 1]) if i + 1 < len(live) else None
        if not finished and after is not None and after[0] == role:
            continue  # the utterance goes on in the next event, as ADK reads it to the model
        utterance, heard = _joined(heard), []
        from_events, heard_from = tuple(heard_from), []
        if utterance.strip():
            entries += [
                _Said(memory, event.id, from_events)
                for memory in _entries_saying(
                    [utterance], role=role, author=event.author or role, when=_event_time(event),
                    what=f"event {event.id!r}",
                )
            ]
    return entries


def _distinct_events(events: Sequence[Event]) -> list[Event]:
    """The events, each once: an event whose id came before in the call is that event again
    (ADK's own memory services keep one event per id). Events without an id are all kept."""
    seen: set[str] = set()
    distinct: list[Event] = []
    for event in events:
        if event.id:
            if event.id in seen:
                continue
            seen.add(event.id)
        distinct.append(event)
    return distinct


def _rewound(events: Sequence[Event]) -> list[Event]:
    """The events a rewind among them undid (see :func:`_live_events`)."""
    live = {id(event) for event in _live_events(events)}
    return [event for event in events if id(event) not in live]


#: Begins the id of every entry stored from an ADK event (:class:`_EventEntryIds`); the ids
#: graphmem makes otherwise are hex, and so never begin with it.
_EVENT_ENTRY_ID_PREFIX = "adk-"
#: How many hex digits of the hash name an event after the prefix (128 bits).
_EVENT_KEY_DIGITS = 32


@dataclass(frozen=True, slots=True)
class _EventEntryIds:
    """Names the entries of ADK events in one place (app, user, project, and session or
    ``None`` outside any): an event's first entry is its *key*, ``adk-`` and a hash of the
    place and the event's id, and each further piece of its text (a text over graphmem's
    limit) the key and ``-1``, ``-2``, ... So the entry ids say which events are stored, and
    an event re-added is known.

    A hash, not the event id itself: an entry id is one in the whole store (no two users,
    sessions or scopes may share it), an ADK event id only within its session, and of any
    length or characters."""

    app_name: str
    user_id: str
    project_id: str | None
    session_id: str | None

    def key(self, event_id: str) -> str | None:
        """The id of the event's first entry (``None`` for an event without an id)."""
        if not event_id:
            return None
        place = json.dumps([self.app_name, self.user_id, self.project_id, self.session_id, event_id])
        return _EVENT_ENTRY_ID_PREFIX + hashlib.sha256(place.encode()).hexdigest()[:_EVENT_KEY_DIGITS]

    def of(self, said: Sequence[_Said]) -> list[str | None]:
        """The entry id of each of ``said``, in order (``None``: of an event without an id)."""
        pieces: Counter[str] = Counter()
        ids: list[str | None] = []
        for s in said:
            key = self.key(s.event_id)
            if key is not None:
                piece, pieces[key] = pieces[key], pieces[key] + 1
                ids.append(_piece_id(key, piece))
            else:
                ids.append(None)
        return ids


def _event_key_of(entry_id: str) -> str | None:
    """The key of the event an entry was stored from (see :class:`_EventEntryIds`), or
    ``None`` for an entry stored without one (before graphmem named entries after events,
    or from an event without an id)."""
    if not entry_id.startswith(_EVENT_ENTRY_ID_PREFIX):
        return None
    return entry_id[: len(_EVENT_ENTRY_ID_PREFIX) + _EVENT_KEY_DIGITS]


@dataclass(frozen=True, slots=True)
class _Window:
    """The events an ``add_session_to_memory`` passes, as :func:`_before_window` reads them:
    their ids, the time of the first, and what they said (rewound or not)."""

    event_ids: frozenset[str]
    since: datetime
    said: Sequence[MemoryEntry]


def _before_window(stored: Sequence[StoredEntry], window: _Window, names: _EventEntryIds) -> list[StoredEntry]:
    """The stored turns of a session that came before a window of its events (the session's
    latest events, or all of them), in order.

    A turn stored from an event is known by it (its entry id names the event): the window
    starts at the first stored turn of one of its events, whatever the times say (events can
    be out of time order: a clock set back, events imported or appended late). That turn
    and every later one are the window's to replace; the turns before it are kept.

    A turn stored without an event id (by graphmem before it named entries after events) is
    told by what was said and when: it is the window's when a turn of the window has its
    author, role, text and time (each turn of the window stands for the last such stored
    turn: turns of one moment, a fixed clock, cannot be told apart otherwise). When no
    stored turn names one of the window's events, such a turn came before the window when
    it is not later than the window's first event. (Such a turn said twice at one moment,
    once before the window and once in it, is kept once.)"""
    window_keys = {names.key(event_id) for event_id in window.event_ids}
    starts = [e.position for e in stored if _event_key_of(e.entry_id) in window_keys]
    start = min(starts) if starts else None
    unclaimed = Counter(_said_when(m) for m in window.said)
    kept: list[StoredEntry] = []
    for e in reversed(stored):
        told_by_event = _event_key_of(e.entry_id) is not None
        if not told_by_event:
            said = _said_when(e.memory)
            if unclaimed[said] > 0:
                unclaimed[said] -= 1  # the window's own turn, stored by an earlier call
                continue
        if start is not None:
            before = e.position < start
        else:
            before = told_by_event or e.memory.timestamp <= window.since
        if before:
            kept.append(e)
    return kept[::-1]


def _said_when(entry: MemoryEntry) -> tuple[str, str | None, str, datetime]:
    """What makes a turn stored without an event id the same as one of a window: author,
    role, text and time."""
    return entry.author, entry.content.role, entry.text, entry.timestamp


def _warn_of_rewinds_before(session: Session) -> None:
    """Log a rewind in ``session.events`` to an invocation that starts before them: the turns
    it undid before the window cannot be told from the others (a stored turn does not
    keep its invocation), so they stay stored."""
    started = {event.invocation_id for event in session.events if event.invocation_id}
    for event in session.events:
        target = getattr(event.actions, "rewind_before_invocation_id", None) if event.actions else None
        if target and target not in started:
            logger.warning(
                "session %r: event %r rewinds invocation %r, which starts before the events passed: "
                "the turns it undid before them stay stored (add the whole session to remove them)",
                session.id, event.id, target,
            )


def _live_events(events: Sequence[Event]) -> list[Event]:
    """The events no rewind undid. An event whose ``actions.rewind_before_invocation_id``
    names invocation X undoes every event from X's first one up to itself (the rewind
    event included), as ADK builds the model's context; a rewind to an unknown or later
    invocation undoes only itself. Read from the end, so a rewound rewind undoes nothing."""
    first_of: dict[str, int] = {}
    for at, event in enumerate(events):
        if event.invocation_id:
            first_of.setdefault(event.invocation_id, at)
    live: list[Event] = []
    at = len(events) - 1
    while at >= 0:
        event = events[at]
        target = getattr(event.actions, "rewind_before_invocation_id", None) if event.actions else None
        if not target:
            live.append(event)
        elif first_of.get(target, at) < at:
            at = first_of[target]  # this one and everything back to the rewound invocation's start
        at -= 1
    return live[::-1]


def _transcribed(event: Event) -> tuple[str, str, bool] | None:
    """``(role, text, finished)`` of an event that holds what was said by voice (a live
    session's input or output transcription, and no content), else ``None``. ``finished``:
    the transcription says the utterance ends here (ADK's finished event holds all of it)."""
    if event.content is not None:
        return None
    for role, said in (("user", event.input_transcription), ("model", event.output_transcription)):
        if said is not None and said.text:
            return role, said.text, bool(said.finished)
    return None


#: A letter of a script written without spaces (Han, kana, Hangul): transcribed pieces of it
#: are joined as they are.
_NO_SPACE_LETTER = re.compile(f"[{NO_SPACE_SCRIPT}]")


def _joined(pieces: Sequence[str]) -> str:
    """The pieces of one transcribed utterance as one text: a space between two pieces when
    neither has one at the boundary ("Lisbon" + "My dog" must not read "LisbonMy"), except
    between letters of a script written without spaces."""
    text = pieces[0]
    for piece in pieces[1:]:
        end, start = text[-1:], piece[:1]
        if end and start and not (end.isspace() or start.isspace()):
            if not (_NO_SPACE_LETTER.match(end) or _NO_SPACE_LETTER.match(start)):
                text += " "
        text += piece
    return text


def _event_time(event: Event) -> datetime:
    """The event's timestamp (seconds since the epoch) as an aware UTC datetime."""
    try:
        return datetime.fromtimestamp(event.timestamp, UTC)
    except (OverflowError, OSError, ValueError):
        raise InvalidMemoryError(
            f"event {event.id!r}: timestamp {event.timestamp!r} is not seconds since the epoch "
            "between the years 1 and 9999 (milliseconds?); nothing of these events was stored"
        ) from None


def _entries_of_event(event: Event) -> list[MemoryEntry]:
    """An event's text as graphmem entries (one, or several when it is over graphmem's
    limit), or none when it has no text to remember."""
    content = event.content
    if event.partial or content is None or not content.parts:
        return []
    _log_parts_not_stored(content.parts, f"event {event.id!r}")
    # Function calls and responses are the agent's plumbing, and thoughts its scratchpad:
    # only what was said is remembered.
    texts = [text for part in content.parts if (text := _said(part)) is not None]
    if not texts:
        return []
    role = content.role or _role_of(event.author)
    # Without an author, the speaker its role names: graphmem's search reads the author (a
    # question in the first person asks about what the author "user" said).
    return _entries_saying(
        texts, role=role, author=event.author or role, when=_event_time(event), what=f"event {event.id!r}"
    )


def _entries_of_memory(memory: AdkMemoryEntry) -> list[MemoryEntry]:
    """An ADK memory's text as graphmem entries (several when it is over graphmem's limit),
    or none when it has no text."""
    content = memory.content
    _log_parts_not_stored(content.parts or [], f"memory {memory.id!r}" if memory.id else "a memory")
    texts = [text for part in content.parts or [] if (text := _said(part)) is not None]
    if not texts:
        return []
    role = content.role or _role_of(memory.author)
    return _entries_saying(
        texts, role=role, author=memory.author or role, when=_memory_time(memory),
        what=f"memory {memory.id!r}" if memory.id else "a memory",
    )


def _records_of_memories(
    memories: Sequence[AdkMemoryEntry],
    app_name: str,
    user_id: str,
    project_id: str | None,
    held: AbstractSet[str] = frozenset(),
) -> tuple[list[EntryRecord], dict[str, int]]:
    """The entries to store for ADK memories, under their ids: a memory's entry id is its
    ``id`` and the user's suffix (:func:`_owner_suffix`), or the ``id`` itself when the user
    holds an entry of that id (``held``: stored before the suffix); the further pieces of a
    text over graphmem's limit are named as an event's are, after a hash of the place and
    the entry id (:func:`_memory_pieces_key`), ``-1``, ``-2``, ...
    A memory without an id gets new ids. A memory whose id comes again later in the call is
    that later one (as a later call replaces it). Returns the records, and how many entries
    each memory with an id and text has, by its entry id.

    Raises:
        InvalidMemoryError: an id that is no valid graphmem id (``""`` is none; over 256
            characters, control characters, a lone surrogate), or one given to a piece too.
    """
    named: dict[str, list[EntryRecord]] = {}
    unnamed: list[EntryRecord] = []
    suffix = _owner_suffix(app_name, user_id)
    for m in memories:
        entries = _entries_of_memory(m)
        if not m.id:
            unnamed += [EntryRecord(memory=entry) for entry in entries]
            continue
        first = m.id if m.id in held else m.id + suffix
        if not is_identifier(m.id) or not is_identifier(first):
            raise InvalidMemoryError(
                f"memory id {m.id[:40]!r}: not a valid graphmem id (at most {MAX_ID_LENGTH - len(suffix)} "
                "characters, no control characters or lone surrogates); give another, or none for a new one; "
                "nothing was stored"
            )
        pieces = _memory_pieces_key(app_name, user_id, project_id, first)
        ids = [first] + [_piece_id(pieces, piece) for piece in range(1, len(entries))]
        named.pop(first, None)  # a later memory of the id is the one kept, where it comes
        named[first] = [EntryRecord(memory=e, entry_id=entry_id) for e, entry_id in zip(entries, ids, strict=True)]
    records = [record for group in named.values() for record in group]
    given = Counter(record.entry_id for record in records if record.entry_id is not None)
    if twice := [entry_id for entry_id, n in given.items() if n > 1]:
        raise InvalidMemoryError(
            f"memory id {twice[0][:40]!r} is also the id of a piece of another memory of the call; nothing was stored"
        )
    return records + unnamed, {memory_id: len(group) for memory_id, group in named.items() if group}


#: Begins the ids of the further pieces of an ADK memory over graphmem's text limit
#: (:func:`_memory_pieces_key`): not an event's (``adk-``), nor an id graphmem makes (hex).
_MEMORY_PIECES_PREFIX = "adkm-"


#: Begins the suffix of an ADK memory's entry id (:func:`_owner_suffix`).
_OWNER_SUFFIX_MARK = "~"


def _owner_suffix(app_name: str, user_id: str) -> str:
    """What an ``add_memory`` id is stored with (``~`` and 16 hex digits of a hash of the app
    and user): entry ids are unique in the whole store, and the ids callers give are
    theirs to choose (``note``, a hash of the text), so two users' are kept apart."""
    owner = json.dumps([app_name, user_id])
    return _OWNER_SUFFIX_MARK + hashlib.sha256(owner.encode()).hexdigest()[:16]


def _memory_id(entry_id: str, suffix: str) -> str:
    """The id ``search_memory`` gives a memory stored under ``entry_id``: the ``add_memory``
    id it was stored for, without the user's suffix."""
    return entry_id.removesuffix(suffix) if entry_id.endswith(suffix) and len(entry_id) > len(suffix) else entry_id


def _memory_pieces_key(app_name: str, user_id: str, project_id: str | None, memory_id: str) -> str:
    """What the further pieces of memory ``memory_id`` are named after (``-1``, ``-2``, ...):
    a hash of its place and id, as an event's key, so that no id a caller gives a memory
    ("note-1") is taken for the piece of another ("note")."""
    place = json.dumps([app_name, user_id, project_id, memory_id])
    return _MEMORY_PIECES_PREFIX + hashlib.sha256(place.encode()).hexdigest()[:_EVENT_KEY_DIGITS]


def _said(part: types.Part) -> str | None:
    """What a part says: its text, or the transcription of its audio (a model answering
    with audio gives the words it spoke there); ``None`` for a thought, or a part that says
    nothing in words."""
    if part.thought:
        return None
    if part.text and part.text.strip():
        return part.text
    # (A field of newer google-genai releases: ADK 2.x allows older ones.)
    transcription = getattr(part, "audio_transcription", None)
    if transcription is not None and transcription.text and transcription.text.strip():
        return str(transcription.text)
    return None


#: The kinds of part that hold what was shown or run rather than said (an image, audio or a
#: file; code the model ran, and its output): graphmem stores text only.
_MEDIA_PARTS = ("inline_data", "file_data", "executable_code", "code_execution_result")


def _log_parts_not_stored(parts: Sequence[types.Part], what: str) -> None:
    """Log (debug) the parts of a message that are not stored because they hold no text (a
    message of only such parts leaves no entry). Function calls and responses and thoughts
    are left out of the log: every tool-using turn has them, by design not stored."""
    kinds = sorted({kind for part in parts for kind in _MEDIA_PARTS if getattr(part, kind, None) is not None})
    if kinds:
        logger.debug("%s: its %s not stored (graphmem stores text only)", what, ", ".join(kinds))


def _role_of(author: str | None) -> str:
    """The role of a message whose content names none: ``"user"`` for what ADK's author
    ``"user"`` said, ``"model"`` for anything else (an agent's own words, which must not come
    back as the user's)."""
    return "user" if author == "user" else "model"


def _memory_time(memory: AdkMemoryEntry) -> datetime:
    """An ADK memory's timestamp as an aware UTC datetime (now when it has none). One without
    an offset is local time: ADK's memory services write ``datetime.fromtimestamp(ts).isoformat()``."""
    if memory.timestamp is None:
        return datetime.now(UTC)
    try:
        when = datetime.fromisoformat(memory.timestamp)
    except ValueError:
        raise InvalidMemoryError(
            f"memory timestamp {memory.timestamp[:40]!r} is not ISO 8601 (such as 2026-01-09T20:15:00+00:00)"
        ) from None
    try:
        return as_utc(when.astimezone() if when.tzinfo is None else when)
    except (OverflowError, OSError, ValueError):
        raise InvalidMemoryError(
            f"memory timestamp {memory.timestamp[:40]!r} is outside years 1 to 9999 once read in UTC"
        ) from None


#: A UTF-16 surrogate: in a Python string always a lone one, which no store can carry.
_SURROGATE = re.compile("[\ud800-\udfff]")
#: How far back from graphmem's limit a long text is cut at a space rather than mid-word.
_CUT_LOOKBACK = 1_000


def _entries_saying(texts: Sequence[str], *, role: str, author: str, when: datetime, what: str) -> list[MemoryEntry]:
    """Entries holding ``texts`` (the parts of one message), each within graphmem's text
    limit: one message is never the reason a whole session cannot be stored.

    A lone surrogate (not Unicode: neither the journal nor Neo4j can carry it) is replaced
    by U+FFFD; a message over :data:`~graphmem._models.MAX_TEXT_LENGTH` characters is
    stored as consecutive entries of that author, role and time. Both are logged."""
    if any(_SURROGATE.search(t) for t in (*texts, role, author)):
        logger.warning("%s: its text holds lone surrogates (not Unicode): stored with U+FFFD in their place", what)
        texts = [_SURROGATE.sub("\ufffd", t) for t in texts]
        role, author = _SURROGATE.sub("\ufffd", role), _SURROGATE.sub("\ufffd", author)

    def entry(parts: Sequence[str]) -> MemoryEntry:
        content = Content(role=role, parts=[Part(text=t) for t in parts])
        return MemoryEntry(content=content, author=author, timestamp=when)

    whole = " ".join(texts)  # what graphmem measures: the text parts joined (MemoryEntry.text)
    if len(whole) <= MAX_TEXT_LENGTH:
        return [entry(texts)]
    pieces = _pieces(whole)
    logger.warning(
        "%s: its text is %d characters long, over graphmem's limit of %d: stored as %d consecutive entries",
        what, len(whole), MAX_TEXT_LENGTH, len(pieces),
    )
    return [entry([piece]) for piece in pieces]


def _pieces(text: str) -> list[str]:
    """``text`` cut into pieces of at most ``MAX_TEXT_LENGTH`` characters, at a space where one
    is near the limit (else mid-word: a run of 1,000 letters is no word anyone searches
    for); blank pieces are left out."""
    pieces: list[str] = []
    rest = text
    while len(rest) > MAX_TEXT_LENGTH:
        cut = next(
            (i for i in range(MAX_TEXT_LENGTH, MAX_TEXT_LENGTH - _CUT_LOOKBACK, -1) if rest[i].isspace()),
            MAX_TEXT_LENGTH,
        )
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    return [piece.strip() for piece in pieces if piece.strip()]
