"""Google ADK memory over any graphmem store: :class:`GraphmemMemoryService`.

An ADK ``BaseMemoryService`` (google-adk 2.x) that stores an agent's conversations in a
graphmem :class:`~graphmem.MemoryService` (networkx or Neo4j) and answers ADK's
``load_memory`` and ``preload_memory`` tools with graphmem's explainable recall. Needs the
``adk`` extra (``pip install 'graphmem[adk]'``); ``import graphmem`` never imports ADK.

How ADK's calls map onto graphmem (ADK's ``app_name`` and ``user_id`` are graphmem's):

- ``add_session_to_memory(session)``: the session's text events become the entries of
  graphmem session ``session.id``, **replacing** what an earlier call stored for it, so a
  session added after every turn is never duplicated. Events without text (function calls
  and responses, partial stream chunks) and model thoughts are skipped.
- ``add_events_to_memory(..., events, session_id)``: a delta, appended after the
  session's last entry (``MemoryService.append_to_session``), ``NEXT``-linked to it;
  without a ``session_id`` each event is stored on its own, outside any session.
- ``add_memory(..., memories)``: each ADK ``MemoryEntry`` is stored outside any session.
- ``search_memory(..., query)``: ADK ``MemoryEntry`` items, best first, with ``id`` the
  graphmem entry id, ``author``, ``timestamp`` (ISO 8601, UTC) and ``custom_metadata``
  saying why it came back: ``score``, ``matched_tokens``, ``matched_entities``,
  ``context_score`` (the share of the score that came from neighbouring turns),
  ``context_from`` (the id of the turn that lent it), ``related_to`` (matched words read as
  related to a query word, and that word: ``{"puppy": "pet"}``), ``read_as`` (query words
  read as another word of the entry), ``session_id`` and ``project_id``.
- ``delete_memory(..., memory_id)``: deletes that entry if the user has it in this
  service's scope (global, or the service's project); any other id deletes nothing.

**Projects.** The project is chosen when the service is built
(``GraphmemMemoryService(service, project_id="P")``): every write goes to P and a search
sees global memory plus P's. On a backend without project support (networkx) this raises
``ProjectScopingUnsupportedError``, as every project call does. A write's
``custom_metadata`` may repeat the service's ``project_id`` but not name another one
(``ValueError``: a write is never silently put in another scope); other keys are ignored.

**Through ADK's service registry** (``adk web`` / ``adk api_server
--memory_service_uri=graphmem+neo4j://host:7687``): call :func:`register_with_adk` from a
``services.py`` in the agents folder. The URIs are those of :func:`graphmem.open_memory`
with a ``graphmem+`` prefix (``graphmem+memory:``, ``graphmem+file:///abs/memory.journal``,
``graphmem+bolt://``, ``graphmem+neo4j://``, ...). A service built from a URI opens its
store on its first call (ADK builds services synchronously, before any event loop runs),
owns it and closes it in :meth:`GraphmemMemoryService.close`.

A session re-added after ``delete_memory`` stores its deleted turn again (graphmem keeps no
record of deleted text): delete after the session's last ``add_session_to_memory``, or
feed later turns with ``add_events_to_memory``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from graphmem._errors import ProjectScopingUnsupportedError
from graphmem._models import Content, MemoryEntry, Part, SearchRequest, is_identifier, validate_project_id
from graphmem._open import open_memory, parse_store_uri
from graphmem._service import MemoryService

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
    :meth:`close`).

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
                raise ProjectScopingUnsupportedError("add_session_to_project", type(service).__name__)
        if uri is not None:
            parse_store_uri(uri)  # a bad URI fails here, at start-up, not on the first turn
        self._service = service
        self._uri = uri
        self._owns_service = service is None
        self._nlp = nlp
        self._opening = asyncio.Lock()
        self.project_id = project_id
        self.limit = limit
        self.min_score = min_score

    async def memory_service(self) -> MemoryService:
        """The graphmem service (opening the store of a ``uri`` the first time)."""
        if self._service is None:
            async with self._opening:
                if self._service is None:
                    assert self._uri is not None
                    service = await open_memory(self._uri, nlp=self._nlp)
                    if self.project_id is not None and not service.supports_project_scoping():
                        # As for a service given without projects: refused before any call
                        # (a delete by id, which asks no project, would act on global memory).
                        await service.close()
                        raise ProjectScopingUnsupportedError("add_session_to_project", type(service).__name__)
                    self._service = service
        return self._service

    async def close(self) -> None:
        """Close the store if this service opened it (from a ``uri``). Idempotent."""
        if self._owns_service and self._service is not None:
            service, self._service = self._service, None
            await service.close()

    # ------------------------------------------------------------------ writes

    async def add_session_to_memory(self, session: Session) -> None:
        """Store the session's text events as graphmem session ``session.id``, replacing what
        an earlier call stored for it."""
        memory = await self.memory_service()
        entries = _entries_of_events(session.events)
        if self.project_id is None:
            await memory.add_session(session.app_name, session.user_id, session.id, entries)
        else:
            await memory.add_session_to_project(session.app_name, session.user_id, session.id, self.project_id, entries)

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
        ``session_id``, store each on its own.

        Raises:
            ValueError: ``custom_metadata["project_id"]`` names another project than the
                service's.
        """
        self._check_metadata(custom_metadata)
        memory = await self.memory_service()
        entries = _entries_of_events(events)
        if session_id is None:
            for entry in entries:
                await self._add_entry(memory, app_name, user_id, entry)
        elif self.project_id is None:
            await memory.append_to_session(app_name, user_id, session_id, entries)
        else:
            await memory.append_to_session_in_project(app_name, user_id, session_id, self.project_id, entries)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[AdkMemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Store each memory on its own, outside any session (one with no text is skipped).

        Every memory is checked before any is stored.

        Raises:
            ValueError: a timestamp that is not ISO 8601, or ``custom_metadata["project_id"]``
                naming another project than the service's.
        """
        self._check_metadata(custom_metadata)
        entries = [_entry_of_memory(m) for m in memories]
        memory = await self.memory_service()
        for entry in entries:
            if entry is not None:
                await self._add_entry(memory, app_name, user_id, entry)

    async def _add_entry(self, memory: MemoryService, app_name: str, user_id: str, entry: MemoryEntry) -> None:
        if self.project_id is None:
            await memory.add_entry(app_name, user_id, entry)
        else:
            await memory.add_entry_to_project(app_name, user_id, self.project_id, entry)

    def _check_metadata(self, custom_metadata: Mapping[str, object] | None) -> None:
        if custom_metadata is not None and "project_id" in custom_metadata:
            if custom_metadata["project_id"] != self.project_id:
                raise ValueError(
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
        return SearchMemoryResponse(
            memories=[
                AdkMemoryEntry(
                    # A reply of several messages is one memory: deleting it deletes them all.
                    id=REPLY_ID_SEPARATOR.join(h.entry_id for h in (hit, *hit.folded)),
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
        a string that is no valid id: the model may garble one) deletes nothing."""
        if not isinstance(memory_id, str) or not memory_id:
            return
        memory = await self.memory_service()
        # An entry id that holds the separator is that entry; else each part of the id.
        whole = is_identifier(memory_id) and await memory.get_entry(app_name, user_id, memory_id) is not None
        for entry_id in [memory_id] if whole else memory_id.split(REPLY_ID_SEPARATOR):
            if not is_identifier(entry_id):
                continue
            stored = await memory.get_entry(app_name, user_id, entry_id)
            if stored is not None and stored.project_id in (None, self.project_id):
                await memory.delete_entry(app_name, user_id, entry_id)


#: Joins the entry ids of a memory of several messages (a reply typed as several) into its
#: ``MemoryEntry.id``, best-ranked message first; entry ids graphmem makes are hex.
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


def _entries_of_events(events: Sequence[Event]) -> list[MemoryEntry]:
    """What the events said, as graphmem entries, in order: every event a rewind left live
    with text to remember, an utterance transcribed over several events as one.

    Every event is read (and its timestamp checked) before any entry is stored."""
    entries: list[MemoryEntry] = []
    heard: list[str] = []  # the transcribed utterance so far
    live = [event for event in _live_events(events) if not event.partial]
    for i, event in enumerate(live):
        spoken = _transcribed(event)
        if spoken is None:
            entry = _entry_of_event(event)
            if entry is not None:
                entries.append(entry)
            continue
        role, text = spoken
        heard.append(text)
        after = _transcribed(live[i + 1]) if i + 1 < len(live) else None
        if after is not None and after[0] == role:
            continue  # the utterance goes on in the next event, as ADK reads it to the model
        utterance, heard = "".join(heard), []
        if utterance.strip():
            entries.append(
                MemoryEntry(
                    content=Content(role=role, parts=[Part(text=utterance)]),
                    author=event.author or role,
                    timestamp=_event_time(event),
                )
            )
    return entries


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


def _transcribed(event: Event) -> tuple[str, str] | None:
    """``(role, text)`` of an event that holds what was said by voice (a live session's
    input or output transcription, and no content), else ``None``."""
    if event.content is not None:
        return None
    for role, said in (("user", event.input_transcription), ("model", event.output_transcription)):
        if said is not None and said.text:
            return role, said.text
    return None


def _event_time(event: Event) -> datetime:
    """The event's timestamp (seconds since the epoch) as an aware UTC datetime."""
    try:
        return datetime.fromtimestamp(event.timestamp, UTC)
    except (OverflowError, OSError, ValueError):
        raise ValueError(
            f"event {event.id!r}: timestamp {event.timestamp!r} is not seconds since the epoch "
            "between the years 1 and 9999 (milliseconds?); nothing of these events was stored"
        ) from None


def _entry_of_event(event: Event) -> MemoryEntry | None:
    """An event's text as a graphmem entry, or ``None`` when it has no text to remember."""
    content = event.content
    if event.partial or content is None or not content.parts:
        return None
    # Function calls and responses are the agent's plumbing, and thoughts its scratchpad:
    # only what was said is remembered.
    texts = [part.text for part in content.parts if part.text and part.text.strip() and not part.thought]
    if not texts:
        return None
    return MemoryEntry(
        content=Content(role=content.role or "user", parts=[Part(text=t) for t in texts]),
        author=event.author or content.role or "user",
        timestamp=_event_time(event),
    )


def _entry_of_memory(memory: AdkMemoryEntry) -> MemoryEntry | None:
    content = memory.content
    texts = [part.text for part in content.parts or [] if part.text and part.text.strip() and not part.thought]
    if not texts:
        return None
    if memory.timestamp is None:
        when = datetime.now(UTC)
    else:
        try:
            when = datetime.fromisoformat(memory.timestamp)
        except ValueError:
            raise ValueError(
                f"memory timestamp {memory.timestamp[:40]!r} is not ISO 8601 (such as 2026-01-09T20:15:00+00:00)"
            ) from None
    return MemoryEntry(
        content=Content(role=content.role or "user", parts=[Part(text=t) for t in texts]),
        author=memory.author or content.role or "user",
        timestamp=when,
    )
