"""``Neo4jMemoryService``: the memory graph in Neo4j, with full project scoping.

The graph is the one the networkx backend keeps (see :mod:`graphmem.backends._graph_model`):
``Entry``, ``Token`` and ``Entity`` nodes, each carrying ``app_name`` and ``user_id``, linked
by ``HAS_TOKEN``, ``MENTIONS`` and ``NEXT``. One node more per user that holds entries:
``(:GraphmemUser {app_name, user_id, entries, project_entries, stamp})``, its entry count and
how many of those are in a project, so that a search reads the N of its idf in one seek and
knows when its postings need no scope check, and a random stamp each write transaction
replaces (``cypher/stamp_user.cypher``: what a copy of a large user is checked by, see
:mod:`graphmem.backends._replica`). Every write transaction keeps it exact
(``cypher/create_entries.cypher``, ``delete_entries.cypher``); it goes with the user's last
entry. A user written before schema version 2 has none until its next write counts it;
until then its searches count its entries. Schema version 3 sets ``Token.user_speaker`` on
the speaker tokens of a store written before it was kept (:meth:`ensure_schema`). Every
query lives in a ``.cypher`` file (see :mod:`graphmem._cypher`) and takes its values as
parameters.

How the driver is used:

- Writes run in one managed write transaction per call, so an ``add_session`` is all or
  nothing and the driver retries transient errors (``add_sessions``: one per up to 2,000
  entries, never splitting a session). Every write transaction first takes its user's lock
  (``cypher/lock_user.cypher``): the writes of one app and user run one at a time, those of
  different users in parallel. So a delete's "is this term orphaned now?" check cannot race
  a write linking to the term, and two replacements of a session cannot both miss each
  other's entries. ``delete_user`` deletes the entries there are when it starts, in
  batches, each a locked transaction, so a write landing between two batches is kept whole.
  ``delete_entries`` reads which entries match in its own locked transaction, so an entry
  rewritten under the same id before it runs is judged by its new text.
  Deadlocks and other transient errors get a longer retry budget than an outage does
  (``_with_retries``).
- Reads take no lock and return whole entries only: an entry deleted by a concurrent
  commit while a read looks at it is skipped, not returned with properties missing (the
  check is in ``cypher/all_entries.cypher``, ``fetch_entries`` and ``list_recent``).
- Reads run in auto-commit transactions of a read-mode session (one round trip each; a
  lost connection falls back to ``execute_query``, which retries), so a ``neo4j://``
  cluster URI spreads them over readers. A search reads the user's counter and its terms'
  degrees (``cypher/term_stats.cypher``; for a small user with every holder of its terms,
  ``term_stats_or_gather.cypher``), then what :mod:`graphmem._gathering` asks for: the
  postings of its seed terms (``postings.cypher``, holders named by element id, so that
  listing them reads none of their properties) and bounded neighbourhoods
  (``neighbourhood.cypher``, which takes those ids; ``neighbourhood_of_holders.cypher`` for
  every holder). Each
  starts from the query's Token and Entity nodes or from given entries, never from a scan.
  Candidates come only from neighbourhoods, which check every entry's scope; postings,
  which only steer a pruned search, skip that check when the counter says the user has no
  project entries.
- A user found holding at least ``replica_min_entries`` entries, none in a project, is
  searched in a copy of its graph kept in this process (:mod:`graphmem.backends._replica`),
  while the stamp on its counter node says the copy is current: one read per search.
- Every list a query takes travels inside the map ``$lists`` (``_sent``): Neo4j 5 plans a
  query once per size bucket of each list parameter, and a search's lists change size from
  query to query, so each search query would be planned (0.5-2 s) many times over.
- Timeouts are bounded: with the server down a call fails in a few seconds with
  :class:`~graphmem.BackendUnavailableError`, and the same object works again once the
  server is back (the driver reconnects by itself).
"""

from __future__ import annotations

import asyncio
import calendar
import functools
import itertools
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Hashable, Iterator, Mapping, Sequence
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from graphmem._chat_phrases import is_reaction
from graphmem._cypher import load_cypher, load_statements
from graphmem._decompose import Decomposer, Decomposition, Entity, speaker_tokens
from graphmem._errors import BackendUnavailableError, EntryIdConflictError, GraphmemError, InvalidStoreUriError
from graphmem._gathering import Days, FirstRead, NeighbourhoodRequest, TermPostings
from graphmem._models import SearchRequest, SearchResponse, quote_ids
from graphmem._open import redact_uri
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
    continued,
    linked_after,
    next_pairs,
)
from graphmem.backends._graph_model import entry_properties, entry_times, stored_entry_from_properties
from graphmem.backends._replica import Mirror, Replicas, new_stamp

try:
    from neo4j import (
        READ_ACCESS,
        AsyncDriver,
        AsyncGraphDatabase,
        AsyncManagedTransaction,
        RoutingControl,
    )
    from neo4j.exceptions import (
        AuthError,
        ConstraintError,
        DatabaseError,
        DatabaseUnavailable,
        DriverError,
        Neo4jError,
        ServiceUnavailable,
        SessionExpired,
        TransientError,
    )
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("the Neo4j backend needs the neo4j driver: pip install 'graphmem[neo4j]'") from exc

if TYPE_CHECKING:
    from spacy.language import Language

    from graphmem._time import QueryTime

__all__ = ["SCHEMA_VERSION", "Neo4jMemoryService"]

T = TypeVar("T")

#: Schema migrations, oldest first: ``cypher/schema_v<N>.cypher`` for N = 1..SCHEMA_VERSION.
#: Each holds idempotent statements whose object names start with ``graphmem_v<N>_``.
SCHEMA_VERSION = 4


class Neo4jMemoryService(MemoryService):
    """Memory in Neo4j (5.x): persistent, shared by many workers, readable with Cypher.

    Give either a URI (with ``auth`` and optionally ``database``) or an existing
    ``neo4j.AsyncDriver``. Nothing connects until the first call; call
    :meth:`ensure_schema` once (at deploy time or start-up) before the first write.

    Args:
        uri: the Bolt URI, such as ``bolt://127.0.0.1:7687`` or ``neo4j://cluster:7687``.
        auth: ``(user, password)`` or any auth the driver accepts; ``None`` when the server
            has authentication off.
        database: the database name; ``None`` for the server's default (home) database.
        driver: an existing async driver to use instead of ``uri``/``auth``. The service
            does not close a driver it was given.
        nlp: spaCy pipeline, pipeline name, or ``None`` for the default.
        weights: the scorer's constants.
        connection_timeout: seconds to open a connection.
        retry_time: seconds the driver keeps retrying a call that failed because the server
            could not be reached; bounds how long a call takes to fail during an outage.
        contention_retry_time: seconds to keep retrying a write the server refused for
            contention (a deadlock between concurrent writers).
        read_timeout: seconds a read (a search, a health check) may take before it fails
            with ``BackendUnavailableError``: a server that accepts connections but does
            not answer must not hang the caller.
        replica_min_entries: a user found holding at least this many entries, none in a
            project, is searched in a copy of its graph kept in this process from its
            fifth search on, checked against the server by one read per search (see
            :mod:`graphmem.backends._replica`); smaller users are read from the server.
        replica_max_entries: at most this many entries in all copies together (about
            3 KB of memory each; the user searched least recently leaves first); ``0``
            copies nobody, every search reads the server.
        language: every text's language, ``"auto"`` or ``None`` (see :class:`MemoryService`).

    Raises:
        ValueError: neither or both of ``uri`` and ``driver`` given; an unknown
            ``language``, or one given with a ``Decomposer``.
    """

    def __init__(
        self,
        uri: str | None = None,
        *,
        auth: Any = None,
        database: str | None = None,
        driver: AsyncDriver | None = None,
        nlp: Language | str | Decomposer | None = None,
        weights: ScoringWeights | None = None,
        connection_timeout: float = 3.0,
        retry_time: float = 2.0,
        contention_retry_time: float = 30.0,
        read_timeout: float = 30.0,
        language: str | None = None,
        replica_min_entries: int = 5_000,
        replica_max_entries: int = 100_000,
    ) -> None:
        super().__init__(nlp, weights=weights, language=language)
        if (uri is None) == (driver is None):
            raise ValueError("give either uri (with auth) or an existing driver, not both and not neither")
        if database is not None and (not isinstance(database, str) or not database.strip()):
            raise InvalidStoreUriError(
                f"database must be a database's name (or None for the server's default), got {database!r:.40}"
            )
        if database is not None and database.casefold() == "system":
            raise InvalidStoreUriError(
                "database 'system' is Neo4j's catalogue of databases and holds no graph; "
                "leave the database unset (the server's default) or name one you created"
            )
        self._database = database
        self._contention_retry_time = contention_retry_time
        self._read_timeout = read_timeout
        self._closed = False
        # The event loop the driver's connections belong to: the first one that used it.
        self._driver_loop: asyncio.AbstractEventLoop | None = None
        if driver is not None:
            self._given_driver: AsyncDriver | None = driver
            self._where = "the Neo4j server of the given driver"
        else:
            assert uri is not None
            _refuse_credentials_in(uri)
            self._given_driver = None
            # Creating a driver does no I/O (connections open on first use), but its pool
            # belongs to the event loop that first uses it: the service makes one per loop.
            self._new_driver = functools.partial(
                AsyncGraphDatabase.driver,
                uri,
                auth=auth,
                connection_timeout=connection_timeout,
                connection_acquisition_timeout=connection_timeout + 2.0,
                max_transaction_retry_time=retry_time,
                # Server notifications ("property key does not exist" on an empty database)
                # would otherwise be logged as warnings by the driver on ordinary calls.
                notifications_min_severity="OFF",
            )
            self._where = f"Neo4j at {redact_uri(uri)}"
        self._current_driver: AsyncDriver = driver if driver is not None else self._new_driver()
        self._replicas = Replicas(
            self._user_stamp,
            self._replica_entries,
            self._decomposer,
            self.weights,
            min_entries=replica_min_entries,
            max_entries=replica_max_entries,
        )

    # ------------------------------------------------------------------ public extras

    def supports_project_scoping(self) -> bool:
        return True

    @property
    def driver(self) -> AsyncDriver:
        """The async driver (for Cypher of your own; graphmem's queries are in ``cypher/``):
        the one of the running event loop (see :meth:`_driver`)."""
        return self._driver()

    def _driver(self) -> AsyncDriver:
        """The driver for the running event loop.

        An async driver's connections belong to the loop that opened them, and a service is
        often used from several loops one after another: ``asyncio.run`` per call, ADK's
        synchronous ``Runner.run`` (a new loop per turn), a test framework's loop per test.
        A driver this service made is replaced by a new one in a new loop (the old one is
        closed in its own loop when that loop still runs, else dropped with it); a driver
        the caller gave stays theirs, and using it from another loop is a clear error.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self._current_driver  # not in a loop: nothing to choose (a property read)
        if self._driver_loop is None or self._driver_loop is loop:
            self._driver_loop = loop
            return self._current_driver
        if self._given_driver is not None:
            raise GraphmemError(
                "the Neo4j driver given to Neo4jMemoryService was first used in another event loop, and its "
                "connections belong to that loop: use the service in one loop, or give it a uri instead of a "
                "driver (it then makes a driver per loop)"
            )
        old, old_loop = self._current_driver, self._driver_loop
        if old_loop.is_running() and not old_loop.is_closed():
            asyncio.run_coroutine_threadsafe(old.close(), old_loop)
        self._current_driver, self._driver_loop = self._new_driver(), loop
        return self._current_driver

    @property
    def database(self) -> str | None:
        """The Neo4j database used (``None``: the server's default)."""
        return self._database

    def cypher_view(self) -> CypherView:
        return CypherView(driver=self.driver, database=self.database)

    async def ensure_schema(self, *, timeout: float = 60.0) -> int:
        """Create graphmem's constraints and indexes, if they are not there yet.

        Idempotent: each migration version is applied once, and running this again changes
        nothing. Waits until the indexes are online.

        Args:
            timeout: seconds to wait for new indexes to come online.

        Returns:
            The schema version now in place.

        Raises:
            BackendUnavailableError: Neo4j cannot be reached.
            GraphmemError: a migration ran but its indexes and constraints are not all there.

        Several processes may run it at once (every worker at start-up): each succeeds.
        """
        current = await self._schema_version()
        if current == SCHEMA_VERSION:
            return current
        for version in range(current + 1, SCHEMA_VERSION + 1):
            # Each data step first: the index that marks its version done comes after it.
            if version == 3:
                await self._flag_user_speakers()
            if version == 4:
                await self._link_across_reactions()
            for statement in load_statements(f"schema_v{version}"):
                try:
                    await self._auto_commit(statement, {})
                except Neo4jError as exc:
                    # IF NOT EXISTS checks, then creates: another process creating the same
                    # object in between makes this one fail with "already exists". The
                    # object is then the one wanted (checked below, by name).
                    if not _is_already_exists(exc):
                        raise
        await self._auto_commit(load_cypher("await_indexes"), {"timeout_seconds": int(timeout)})
        if await self._schema_version() != SCHEMA_VERSION:
            raise GraphmemError(
                f"graphmem's schema migrations ran on {self._where} but its indexes and constraints "
                f"(named graphmem_v{SCHEMA_VERSION}_*) are not all there; see SHOW INDEXES"
            )
        return SCHEMA_VERSION

    async def _flag_user_speakers(self) -> None:
        """Schema version 3's data step: ``Token.user_speaker`` on the speaker tokens of a
        store written before graphmem kept it, as the entries holding each say (as after a
        delete). One owner at a time, under its lock, so a concurrent write's flags are
        never overwritten; only tokens without the flag are read, so it is idempotent."""
        for record in await self._read("owners_without_user_speakers", {}):
            owner = Owner(record["app_name"], record["user_id"])

            async def flag(tx: AsyncManagedTransaction, owner: Owner = owner) -> None:
                params = _owner_params(owner)
                records = await _run(tx, "speakers_without_user_speaker", params)
                rows = [_speaker_flags(r["value"], r["said"]) for r in records]
                if rows:
                    await _run(tx, "set_speaker_flags", {**params, "rows": rows})

            await self._write(owner, flag)

    async def _link_across_reactions(self) -> None:
        """Schema version 4's data step: the ``NEXT`` links across runs of reactions
        (:func:`graphmem._service.next_pairs`) of a store written before graphmem made
        them. One owner at a time, under its lock (a concurrent write makes its own); the
        links are merged, so it is idempotent."""
        for record in await self._read("owners", {}):
            owner = Owner(record["app_name"], record["user_id"])

            async def link(tx: AsyncManagedTransaction, owner: Owner = owner) -> None:
                params = _owner_params(owner)
                rows = await _run(tx, "session_positions", params)
                pairs = []
                for _, session in itertools.groupby(rows, key=lambda r: (r["project_id"], r["session_id"])):
                    entries = list(session)
                    pairs += [
                        {"earlier": entries[i]["id"], "later": entries[j]["id"]}
                        for i, j in next_pairs(
                            [int(e["position"]) for e in entries], [is_reaction(e["text"]) for e in entries]
                        )
                        if j > i + 1
                    ]
                if pairs:
                    await _run(tx, "merge_next", {**params, "pairs": pairs})

            await self._write(owner, link)

    async def _schema_version(self) -> int:
        """The newest migration version whose indexes and constraints, and those of every
        version before it, are all in place (an index of version 1 dropped by hand under a
        version-2 store makes it version 0, so every migration runs again: each is
        idempotent)."""
        present = set(await self._read_single("schema_objects", {}, "names"))
        version = 0
        while version < SCHEMA_VERSION and _schema_objects(version + 1) <= present:
            version += 1
        return version

    async def close(self) -> None:
        """Close the driver and the decomposer if this service created them. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._replicas.clear()
        if self._given_driver is None:
            await self._driver().close()
        await super().close()

    async def __aenter__(self) -> Neo4jMemoryService:
        return self

    # ------------------------------------------------------------------ writes

    async def _replace_session(
        self,
        owner: Owner,
        project_id: str | None,
        session_id: str,
        entries: Sequence[PreparedEntry],
    ) -> None:
        await self._replace_sessions(owner, project_id, [(session_id, entries)])

    async def _replace_sessions(
        self,
        owner: Owner,
        project_id: str | None,
        sessions: Sequence[tuple[str, Sequence[PreparedEntry]]],
    ) -> None:
        # Several sessions per transaction: a bulk load's round trips and commits were as
        # costly as the writes themselves. Bounded, so that one huge call does not build one
        # huge transaction in the server's memory.
        stored: list[str] = []
        for batch in _batches(sessions, _ENTRIES_PER_TRANSACTION):
            try:
                await self._replace_batch(owner, project_id, batch)
            except BaseException as exc:
                if stored:  # say what the earlier transactions kept: the caller cannot tell
                    first_last = quote_ids(stored[0]) + (f" ... {quote_ids(stored[-1])}" if len(stored) > 1 else "")
                    exc.add_note(
                        f"written in transactions of up to {_ENTRIES_PER_TRANSACTION:,} entries: the first "
                        f"{len(stored)} session(s) of this call were stored ({first_last}), the others were "
                        "not (each session is all or nothing)"
                    )
                raise
            stored.extend(session_id for session_id, _ in batch)

    async def _replace_batch(
        self,
        owner: Owner,
        project_id: str | None,
        sessions: Sequence[tuple[str, Sequence[PreparedEntry]]],
    ) -> None:
        params = _owner_params(owner)
        scope_params = {**params, "project_id": project_id, "session_ids": sorted({s for s, _ in sessions})}

        async def work(tx: AsyncManagedTransaction) -> None:
            # Under the user lock (see _write): no concurrent replacement of these sessions
            # can have uncommitted entries that this read misses (a duplicated session).
            result = await tx.run(load_cypher("sessions_entry_ids"), _sent(scope_params))
            old_ids = (await result.single(strict=True))["ids"]
            # New entries first, old ones after: tokens both use survive instead of being
            # deleted as orphans and created again. Except an old entry whose id a new one
            # keeps (restore_session): it must go first, ids are unique.
            new_ids = {e.entry_id for _, entries in sessions for e in entries}
            kept_ids = [i for i in old_ids if i in new_ids]
            if kept_ids:
                await _delete_ids(tx, owner, kept_ids, whole_sessions=True)
            await _create_entries(tx, owner, [entries for _, entries in sessions])
            old_ids = [i for i in old_ids if i not in new_ids]
            if old_ids:
                await _delete_ids(tx, owner, old_ids, whole_sessions=True)

        await self._write(owner, work, _global(project_id, lambda copy: copy._replace_sessions(owner, None, sessions)))

    async def _append_to_session(
        self,
        owner: Owner,
        project_id: str | None,
        session_id: str,
        entries: Sequence[PreparedEntry],
    ) -> None:
        params = _owner_params(owner)
        scope_params = {**params, "project_id": project_id, "session_id": session_id}

        async def work(tx: AsyncManagedTransaction) -> None:
            # _write holds the user's lock: the tail read here stays the tail until this commits.
            tail = await _run(tx, "session_tail", {**scope_params, "count": MAX_REACTIONS_LINKED_ACROSS + 1})
            start = appended_start(int(tail[0]["position"]) if tail else None, len(entries), session_id)
            added = continued(entries, start)
            await _create_entries(tx, owner, [added])
            if tail:
                tail = tail[::-1]  # in position order
                pairs = [
                    {"earlier": tail[i]["id"], "later": added[j].entry_id}
                    for i, j in linked_after(
                        [(int(r["position"]), is_reaction(r["text"])) for r in tail],
                        [(e.stored.position, is_reaction(e.stored.memory.text)) for e in added],
                    )
                    if i < 0  # (the pairs among the new entries are _create_entries')
                ]
                await _run(tx, "link_next", {**params, "pairs": pairs})

        mirror = _global(project_id, lambda copy: copy._append_to_session(owner, None, session_id, entries))
        await self._write(owner, work, mirror)

    async def _insert_entry(self, owner: Owner, entry: PreparedEntry) -> None:
        async def work(tx: AsyncManagedTransaction) -> None:
            await _create_entries(tx, owner, [[entry]])

        await self._write(owner, work, _global(entry.stored.project_id, lambda copy: copy._insert_entry(owner, entry)))

    async def _restore_loose_entries(self, owner: Owner, held: Sequence[str], entries: Sequence[PreparedEntry]) -> None:
        async def work(tx: AsyncManagedTransaction) -> None:  # one transaction: all of it or nothing
            if held:
                await _delete_ids(tx, owner, list(held))
            await _create_entries(tx, owner, [[entry] for entry in entries])

        project_id = next((e.stored.project_id for e in entries if e.stored.project_id is not None), None)
        mirror = _global(project_id, lambda copy: copy._restore_loose_entries(owner, held, entries))
        await self._write(owner, work, mirror)

    async def _delete_entries(self, owner: Owner, entry_ids: Sequence[str]) -> int:
        mirror: Mirror = lambda copy: copy._delete_entries(owner, entry_ids)  # noqa: E731
        return await self._write(owner, lambda tx: _delete_ids(tx, owner, list(entry_ids)), mirror)

    async def _delete_matching(
        self,
        owner: Owner,
        scope: str | None,
        request: NeighbourhoodRequest,
        matches: Callable[[CandidateStats], bool],
    ) -> int:
        # The entries that match are read in the delete's own transaction, under the user's
        # lock: read before it, an entry that a restore rewrote meanwhile under the same id
        # (other text, no match) was deleted by the id listed (a delete of another entry).
        params = {
            **_owner_params(owner),
            "project_id": scope,
            "with_times": request.with_times,
            "tokens": list(dict.fromkeys(request.tokens)),
            "entities": list(dict.fromkeys(request.entities)),
        }
        assert request.around is None, "a delete reads every holder of its terms"
        if not any(matches(c) for c in await self._neighbourhood(owner, scope, request)):
            # Nothing matches now: no write (whose new stamp would make every process
            # keeping a copy of this user read it again), as if the delete ran now.
            return 0
        deleted: list[str] = []

        async def work(tx: AsyncManagedTransaction) -> int:
            rows = await _run(tx, "neighbourhood_of_holders", params)
            deleted[:] = [c.entry_id for c in _candidates(rows[0]["candidates"]) if matches(c)]
            return await _delete_ids(tx, owner, list(deleted))

        mirror: Mirror = lambda copy: copy._delete_entries(owner, list(deleted))  # noqa: E731
        return await self._write(owner, work, mirror)

    async def _delete_session(self, owner: Owner, session_id: str) -> int:
        mirror: Mirror = lambda copy: copy._delete_session(owner, session_id)  # noqa: E731
        return await self._delete_listed(owner, "session_entry_ids_all_scopes", {"session_id": session_id}, mirror)

    async def _delete_project(self, owner: Owner, project_id: str) -> int:
        mirror: Mirror = lambda copy: copy._delete_project(owner, project_id)  # noqa: E731
        return await self._delete_listed(owner, "project_entry_ids", {"project_id": project_id}, mirror)

    async def _delete_listed(self, owner: Owner, query: str, params: dict[str, Any], mirror: Mirror) -> int:
        """Delete, in one write transaction, the entries whose ``ids`` the named query lists."""

        async def work(tx: AsyncManagedTransaction) -> int:
            result = await tx.run(load_cypher(query), _sent({**_owner_params(owner), **params}))
            return await _delete_ids(tx, owner, (await result.single(strict=True))["ids"], whole_sessions=True)

        return await self._write(owner, work, mirror)

    async def _delete_user(self, owner: Owner) -> int:
        # A user can be too big for one transaction, and a lock cannot outlive one: the
        # entries there are when the erasure starts, in batches, each batch a locked write
        # that also deletes the terms it orphans (the delete_entries.cypher every delete
        # uses). A write that lands between two batches is kept whole, as if it came after
        # the erasure, instead of losing the token links a blanket term delete would take.
        # Re-running after a failure completes the erasure; the count is of this call's.
        # A write between two batches may also store an id listed here again (a restore of
        # an export): each entry is listed with its write's stamp, and deleted only as listed.
        params = _owner_params(owner)
        self._replicas.forget(owner)
        listed = await self._write(owner, lambda tx: _run(tx, "user_entry_ids", params))
        ids, stamps = listed[0]["ids"], listed[0]["written"]
        removed = 0
        for start in range(0, len(ids), _ENTRIES_PER_ERASURE):
            batch = ids[start : start + _ENTRIES_PER_ERASURE]
            written = dict(zip(batch, stamps[start : start + _ENTRIES_PER_ERASURE], strict=True))
            removed += await self._write(
                owner,
                functools.partial(_delete_ids, owner=owner, entry_ids=batch, written=written, whole_sessions=True),
            )
        await self._write(owner, lambda tx: _run(tx, "delete_orphan_terms", params))
        return removed

    # ------------------------------------------------------------------ reads

    async def _search(self, request: SearchRequest) -> SearchResponse:
        # A large user is searched in this process's copy of its graph while the server's
        # stamp says the copy is current (graphmem.backends._replica): the same scorer over
        # the same entries, one round trip instead of four or five.
        copy = await self._replicas.store_for(self._owner(request.app_name, request.user_id))
        if copy is not None:
            return await copy._search(request)
        return await super()._search(request)

    async def _user_stamp(self, owner: Owner) -> tuple[str | None, int | None, int | None]:
        record = await self._read_one("user_stamp", _owner_params(owner))
        return record["stamp"], record["entries"], record["project_entries"]

    async def _replica_entries(self, owner: Owner) -> list[Any]:
        return await self._read("replica_entries", _owner_params(owner))

    async def _term_stats(self, owner: Owner, tokens: Sequence[str], entities: Sequence[str]) -> CorpusStats:
        record = await self._read_one(
            "term_stats",
            {**_owner_params(owner), "tokens": list(dict.fromkeys(tokens)), "entities": list(dict.fromkeys(entities))},
        )
        return _corpus(record)

    async def _postings(
        self,
        owner: Owner,
        project_id: str | None,
        tokens: Sequence[str],
        entities: Sequence[str],
        *,
        with_times: bool = False,
    ) -> TermPostings:
        # Holder keys are element ids (see postings.cypher), which neighbourhood.cypher takes.
        record = await self._read_one(
            "postings",
            {
                **_owner_params(owner),
                "project_id": project_id,
                "with_times": with_times,
                "tokens": list(dict.fromkeys(tokens)),
                "entities": list(dict.fromkeys(entities)),
            },
        )
        return _postings(record, with_times)

    async def _neighbourhood(
        self, owner: Owner, project_id: str | None, request: NeighbourhoodRequest
    ) -> list[CandidateStats]:
        params = {
            **_owner_params(owner),
            "project_id": project_id,
            "with_times": request.with_times,
            "tokens": list(dict.fromkeys(request.tokens)),
            "entities": list(dict.fromkeys(request.entities)),
        }
        if request.around is None:
            record = await self._read_one("neighbourhood_of_holders", params)
        else:
            # Keys are the element ids this backend's postings gave; anything else names no
            # entry (a string that is no element id of one of the owner's entries names none).
            around = [key for key in request.around if isinstance(key, str)]
            if not around:
                return []
            record = await self._read_one(
                "neighbourhood",
                {**params, "around": around, "reach": request.reach, "holding_only": request.holding_only},
            )
        return _candidates(record["candidates"])

    async def _session_authors(self, owner: Owner, project_id: str | None, session_id: str) -> set[str]:
        params = {**_owner_params(owner), "project_id": project_id, "session_id": session_id}
        return set(await self._read_single("session_authors", params, "authors"))

    async def _session_entries(self, owner: Owner, project_id: str | None, session_id: str) -> list[StoredEntry]:
        params = {**_owner_params(owner), "project_id": project_id, "session_id": session_id}
        return [stored_entry_from_properties(r["entry"]) for r in await self._read("session_entries", params)]

    async def _entries_around(
        self, owner: Owner, project_id: str | None, entry_ids: Sequence[str], reach: int
    ) -> list[CandidateStats]:
        if not entry_ids:
            return []
        record = await self._read_one(
            "entries_around", {**_owner_params(owner), "project_id": project_id, "ids": list(entry_ids), "reach": reach}
        )
        return _candidates(record["candidates"])

    async def _entry_days(
        self, owner: Owner, project_id: str | None, when: QueryTime
    ) -> list[tuple[str, int, tuple[tuple[int, int], ...]]]:
        # The server reads only the entries said or referring near the time; the days are
        # compared in Python (the scorer's rule). A time without a year: the entries said
        # on its month-days (from the day before to the days told after) and every entry
        # that refers to any time.
        filtered = not when.yearless
        params: dict[str, Any] = {
            **_owner_params(owner),
            "project_id": project_id,
            "filtered": filtered,
            "month_days": [] if filtered else _yearless_month_days(when, self.weights.time_told_within_days),
        }
        said: list[list[str]] = []
        referred: list[list[str]] = []
        if filtered and when.ranges:
            first = min(r.first for r in when.ranges).toordinal() - 2
            last = max(r.last for r in when.ranges).toordinal() + self.weights.time_told_within_days + 2
            days = matching_days(when, self.weights, max(1, first), min(date.max.toordinal(), last))
            day = date.fromordinal
            said = [[day(lo).isoformat(), day(hi).isoformat()] for lo, hi in days.said]
            referred = [[day(lo).isoformat(), day(hi).isoformat()] for lo, hi in days.referred]
        rows = await self._read_single("entry_days", {**params, "said": said, "referred": referred}, "entries")
        return [(row[0], *entry_times(row[1], row[2])) for row in rows if row[0] is not None and row[1] is not None]

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
        # One round trip where the default takes two or three: a round trip costs more than
        # a small user's gathering (see cypher/term_stats_or_gather.cypher).
        record = await self._read_one(
            "term_stats_or_gather",
            {
                **_owner_params(owner),
                "project_id": project_id,
                "with_times": with_times,
                "tokens": list(dict.fromkeys(tokens)),
                "entities": list(dict.fromkeys(entities)),
                "full_at_most": full_at_most,
                "prefetch_df_share": prefetch_df_share,
            },
        )
        corpus = _corpus(record)
        self._replicas.saw(owner, corpus.entry_count, record["everywhere"])
        if record["gathered"]:
            return FirstRead(corpus, full=_candidates(record["candidates"]))
        if prefetch_df_share is None:
            return FirstRead(corpus)
        return FirstRead(corpus, postings=_postings(record, with_times))

    async def _speakers(self, owner: Owner) -> SpeakerWords:
        record = await self._read_one("speaker_tokens", _owner_params(owner))
        return SpeakerWords(frozenset(record["values"]), frozenset(record["user_values"]))

    async def _name_uses(self, owner: Owner, words: Sequence[str]) -> dict[str, NameUse]:
        records = await self._read("name_uses", {**_owner_params(owner), "values": list(dict.fromkeys(words))})
        # An entry deleted by a concurrent commit while this read looked at it reads as null.
        uses = {r["value"]: (Counter(a for a in r["authors"] if a is not None), r["label"]) for r in records}
        return {value: NameUse(authors, label) for value, (authors, label) in uses.items() if authors}

    async def _tokens_like(self, owner: Owner, first: str, min_length: int, max_length: int) -> list[str]:
        params = {**_owner_params(owner), "first": first, "min_length": min_length, "max_length": max_length}
        return sorted(await self._read_single("tokens_like", params, "values"))

    async def _entity_names(self, owner: Owner) -> frozenset[str]:
        return frozenset(await self._read_single("entity_names", _owner_params(owner), "names"))

    async def _names(self, owner: Owner) -> tuple[frozenset[str], SpeakerWords]:
        record = await self._read_one("names", _owner_params(owner))  # one round trip for both
        speakers = SpeakerWords(frozenset(record["speakers"]), frozenset(record["user_speakers"]))
        return frozenset(record["names"]), speakers

    async def _fetch_entries(self, owner: Owner, entry_ids: Sequence[str]) -> list[StoredEntry]:
        if not entry_ids:
            return []
        entries = await self._read_single("fetch_entries", {**_owner_params(owner), "ids": list(entry_ids)}, "entries")
        return [stored_entry_from_properties(e) for e in entries]

    async def _fetch_entries_around(
        self, owner: Owner, project_id: str | None, entry_ids: Sequence[str], reach: int
    ) -> tuple[list[StoredEntry], list[CandidateStats]]:
        if not entry_ids:
            return [], []
        params = {**_owner_params(owner), "project_id": project_id, "ids": list(entry_ids), "reach": reach}
        record = await self._read_one("fetch_entries_around", params)  # one round trip for both
        return [stored_entry_from_properties(e) for e in record["entries"]], _candidates(record["candidates"])

    async def _list_recent(self, owner: Owner, limit: int, scope: RecentScope | None) -> list[StoredEntry]:
        params = {
            **_owner_params(owner),
            "limit": limit,
            "scoped": scope is not None,
            "project_id": None if scope is None or scope.global_only else scope.project_id,
        }
        records = await self._read("list_recent", params)
        return [stored_entry_from_properties(r["entry"]) for r in records]

    async def _entity_mentions(self, owner: Owner, name: str, scope: RecentScope, limit: int) -> tuple[int, list[str]]:
        params = {
            **_owner_params(owner),
            "name": name,
            "project_id": None if scope.global_only else scope.project_id,
            "limit": limit,
        }
        record = await self._read_one("entity_mentions", params)
        return record["total"], list(record["ids"])

    async def _next_links(self, owner: Owner, entry_ids: Sequence[str]) -> list[tuple[str, str]]:
        links = await self._read_single("next_links", {**_owner_params(owner), "ids": list(entry_ids)}, "links")
        return [(a, b) for a, b in links]

    async def _all_entries(self, owner: Owner) -> list[StoredEntry]:
        records = await self._read("all_entries", _owner_params(owner))
        return [stored_entry_from_properties(r["entry"]) for r in records]

    async def _locate_entries(self, entry_ids: Sequence[str]) -> list[tuple[Owner, StoredEntry]]:
        records = await self._read("locate_entries", {"ids": list(entry_ids)})
        return [
            (Owner(r["entry"]["app_name"], r["entry"]["user_id"]), stored_entry_from_properties(r["entry"]))
            for r in records
        ]

    async def _entry_terms(self, owner: Owner, entry_ids: Sequence[str]) -> dict[str, Decomposition]:
        records = await self._read("entry_terms", {**_owner_params(owner), "ids": list(entry_ids)})
        return {
            r["id"]: Decomposition(
                tokens=tuple(r["tokens"]), entities=tuple(Entity(name, label) for name, label in r["entities"])
            )
            for r in records
        }

    async def _stats(self, owner: Owner | None) -> MemoryStats:
        if owner is None:
            record = await self._read_one("stats_all", {})
        else:
            record = await self._read_one("stats_owner", _owner_params(owner))
        return _counts(record)

    async def _scope_stats(self, owner: Owner, project_id: str | None) -> MemoryStats:
        return _counts(await self._read_one("stats_scope", {**_owner_params(owner), "project_id": project_id}))

    async def _ping(self) -> None:
        await self._read_one("ping", {})

    # ------------------------------------------------------------------ driver plumbing

    async def _read(self, name: str, params: dict[str, Any]) -> list[Any]:
        self._check_open()
        query, params = load_cypher(name), _sent(params)
        try:
            # On a timeout the driver drops the connection it was using (cancellation safe).
            async with asyncio.timeout(self._read_timeout):
                try:
                    # One statement in an auto-commit transaction: a managed one
                    # (execute_query) sends a COMMIT after it, a round trip more on every read.
                    async with self._driver().session(
                        database=self._database, default_access_mode=READ_ACCESS
                    ) as session:
                        result = await session.run(query, params)
                        return list((await result.to_eager_result()).records)
                except (ServiceUnavailable, SessionExpired, TransientError):
                    # A lost connection (a restarted server) or a transient refusal: the
                    # managed transaction retries those for up to retry_time.
                    eager = await self._driver().execute_query(
                        query, params, routing_=RoutingControl.READ, database_=self._database
                    )
                    return list(eager.records)
        except _DRIVER_ERRORS as exc:  # TimeoutError included: it is an OSError
            raise self._unavailable(exc) from exc
        except Neo4jError as exc:
            if _is_missing_database(exc):
                raise self._unavailable(exc) from exc
            raise  # a client error: a bug in a query, not an outage

    async def _read_one(self, name: str, params: dict[str, Any]) -> Any:
        records = await self._read(name, params)
        if len(records) != 1:
            raise RuntimeError(f"graphmem: cypher/{name}.cypher returned {len(records)} rows, expected 1")
        return records[0]

    async def _read_single(self, name: str, params: dict[str, Any], key: str) -> Any:
        return (await self._read_one(name, params))[key]

    async def _write(
        self, owner: Owner, work: Callable[[AsyncManagedTransaction], Awaitable[T]], mirror: Mirror | None = None
    ) -> T:
        """Run ``work`` in one managed write transaction holding ``owner``'s lock, stamped
        (``cypher/stamp_user.cypher``); then ``mirror`` applies the same write to this
        process's copy of the user, if it has a current one (``None``: the copy is dropped)."""
        params = _owner_params(owner)

        async def locked(tx: AsyncManagedTransaction) -> tuple[T, str | None, str]:
            await _run(tx, "lock_user", params)
            done = await work(tx)
            stamp = new_stamp()
            before = (await _run(tx, "stamp_user", {**params, "stamp": stamp}))[0]["before"]
            return done, before, stamp

        async def attempt() -> tuple[T, str | None, str]:
            async with self._driver().session(database=self._database) as session:
                return await session.execute_write(locked)

        done, before, stamp = await self._with_retries(attempt)
        await self._replicas.written(owner, before, stamp, mirror)
        return done

    async def _auto_commit(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Run one statement in an auto-commit transaction (the schema commands)."""

        async def attempt() -> list[dict[str, Any]]:
            async with self._driver().session(database=self._database) as session:
                result = await session.run(query, params)
                return [record.data() async for record in result]

        return await self._with_retries(attempt)

    async def _with_retries(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run ``attempt``, retrying contention errors, translating driver errors.

        The driver's own retries (``retry_time``) already cover a lost connection, briefly;
        an unreachable server then fails fast. A deadlock between concurrent writers is
        different: the server is fine and the next attempt usually succeeds, so those get
        ``contention_retry_time``, with jittered backoff.
        """
        self._check_open()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._contention_retry_time
        delay = 0.05
        while True:
            try:
                return await attempt()
            except (Neo4jError, DriverError, OSError) as exc:
                if _is_contention(exc) and loop.time() + delay <= deadline:
                    pass  # retry below
                elif isinstance(exc, _DRIVER_ERRORS) or _is_missing_database(exc):
                    raise self._unavailable(exc) from exc
                elif _is_entry_id_clash(exc):
                    # restore_session checks ids before it writes, but a concurrent write (of
                    # another user, who takes another lock) can store the same id in between.
                    raise EntryIdConflictError(
                        "an entry id of this write was stored by another entry at the same time "
                        "(another user's, or another session or scope); nothing of this write was stored"
                    ) from None
                else:
                    raise  # a client error: a bug in a query, not an outage
            await asyncio.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, 1.0)

    def _check_open(self) -> None:
        if self._closed:
            raise BackendUnavailableError(f"this {type(self).__name__} is closed; create a new one")

    def _unavailable(self, exc: BaseException) -> BackendUnavailableError:
        if self._closed:
            # A call that was running when close() closed its driver: not an outage, and
            # this service does not reconnect.
            return BackendUnavailableError(
                f"this {type(self).__name__} was closed while the call ran; create a new one"
            )
        if isinstance(exc, TimeoutError):
            return BackendUnavailableError(
                f"{self._where} did not answer within {self._read_timeout:g} s. "
                "Check that the server is healthy (scripts/neo4j status) or raise read_timeout."
            )
        if _is_missing_database(exc):
            return BackendUnavailableError(
                f"{self._where} has no database named {self._database!r}. Leave the database unset "
                "to use the server's default one, or create it first (CREATE DATABASE; Neo4j "
                "Community serves one database)."
            )
        if isinstance(exc, AuthError):
            hint = "Check the credentials (auth=...)"
        elif isinstance(exc, TransientError):
            hint = "The server stayed too busy to complete it; try again"
        elif isinstance(exc, DatabaseError):
            hint = "The server reported an internal error; see its log (scripts/neo4j status shows where)"
        else:
            hint = (
                "Check that Neo4j is running (scripts/neo4j status) and that the URI is right; "
                "this service reconnects by itself once it is back"
            )
        # Not str.capitalize(): it would lowercase "Neo4j" and "URI" in the rest of the hint.
        return BackendUnavailableError(f"{self._where} failed: {type(exc).__name__}: {exc}. {hint}.")


#: Errors that mean "the backend cannot serve this call". Other ``Neo4jError``s (client
#: errors: a query graphmem got wrong) propagate unchanged, so a bug is not reported as an
#: outage.
_DRIVER_ERRORS: tuple[type[BaseException], ...] = (
    DriverError,
    OSError,
    TransientError,
    DatabaseError,
    AuthError,
)


def _is_missing_database(exc: BaseException) -> bool:
    """Whether the server has no database of the name asked for (a client error that is
    the caller's configuration, not a query graphmem got wrong)."""
    return isinstance(exc, Neo4jError) and exc.code == "Neo.ClientError.Database.DatabaseNotFound"


def _is_contention(exc: BaseException) -> bool:
    """Whether another attempt of the same write will likely succeed: deadlocks and other
    transient errors, except an unavailable database (an outage)."""
    return isinstance(exc, TransientError) and not isinstance(exc, DatabaseUnavailable)


def _is_entry_id_clash(exc: BaseException) -> bool:
    """Whether a write broke the uniqueness of ``Entry.id`` (``graphmem_v1_entry_id``): the
    only unique property a write can clash on whose value a caller chose."""
    text = str(exc)
    return isinstance(exc, ConstraintError) and "`Entry`" in text and "`id`" in text


def _is_already_exists(exc: Neo4jError) -> bool:
    """Whether a schema command failed because the object (or an equivalent) exists:
    ``Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists`` and its siblings."""
    code = exc.code or ""
    return code.startswith("Neo.ClientError.Schema.") and code.endswith("AlreadyExists")


def _corpus(record: Any) -> CorpusStats:
    """The term statistics of a ``term_stats`` or ``gather`` answer."""
    return CorpusStats(
        entry_count=int(record["entry_count"]),
        token_df={term: int(df) for term, df, _ in record["token_df"]},
        entity_df={name: int(df) for name, df in record["entity_df"]},
        speaker_tokens=frozenset(term for term, df, speaker in record["token_df"] if df and speaker),
    )


def _counts(record: Any) -> MemoryStats:
    """A row of stats_all / stats_owner / stats_scope.cypher."""
    return MemoryStats(
        users=int(record["users"]),
        entries=int(record["entries"]),
        tokens=int(record["tokens"]),
        entities=int(record["entities"]),
        sessions=int(record["sessions"]),
        projects=int(record["projects"]),
    )


def _global(project_id: str | None, mirror: Mirror) -> Mirror | None:
    """``mirror``, for a write of global memory; ``None`` for one in a project (a copy
    holds users without project entries: the user is read from the server from now on)."""
    return mirror if project_id is None else None


def _owner_params(owner: Owner) -> dict[str, Any]:
    return {"app_name": owner.app_name, "user_id": owner.user_id}


def _yearless_month_days(when: QueryTime, told_within: int) -> list[str]:
    """The "MM-DD" of every day an entry may be said on to match ``when`` (its times without
    a year, in a leap year so that 29 February is one, and any with a year): from the day
    before each to ``told_within`` days after it, across a year's end."""

    def day_of(month: int, day: int) -> date:  # (a time's last day may be past its month's: "31")
        return date(2000, month, min(day, calendar.monthrange(2000, month)[1]))

    spans = [(day_of(month, first), day_of(month, last)) for month, first, last in when.yearless]
    spans += [(r.first, r.last) for r in when.ranges]
    found: set[str] = set()
    for first_day, last_day in spans:
        day = first_day - timedelta(days=1) if first_day > date.min else first_day
        end = last_day + timedelta(days=told_within) if last_day < date.max - timedelta(days=told_within) else date.max
        while True:
            found.add(day.strftime("%m-%d"))
            if day >= end:
                break
            day += timedelta(days=1)
    return sorted(found)


def _sent(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as a query file takes them: its lists inside the map ``$lists``.

    Neo4j 5 caches a plan per query and per size bucket of each list and string parameter
    (a power of ten or so: the planner estimates an UNWIND's rows from it), and planning a
    search query costs 0.5-1.3 s. A search's lists of tokens, entities and holders change
    size from query to query, so on a fresh server (and again after each replanning, as
    the store grows) about one search in fifty waited a second for a plan. A map parameter
    carries no size hint: each file is planned once.
    """
    lists = {name: value for name, value in params.items() if isinstance(value, list | tuple)}
    if not lists:
        return params
    return {**{name: value for name, value in params.items() if name not in lists}, "lists": lists}


async def _run(tx: AsyncManagedTransaction, name: str, params: dict[str, Any]) -> list[Any]:
    result = await tx.run(load_cypher(name), _sent(params))
    return [record async for record in result]


#: Entries written per transaction by a bulk call (its sessions are never split).
_ENTRIES_PER_TRANSACTION = 2_000

#: Entries deleted per transaction by ``delete_user``.
_ENTRIES_PER_ERASURE = 1_000


def _batches(
    sessions: Sequence[tuple[str, Sequence[PreparedEntry]]], limit: int
) -> list[list[tuple[str, Sequence[PreparedEntry]]]]:
    """Consecutive sessions grouped up to ``limit`` entries (a larger session goes alone).
    A session id repeated in one call starts a new group: it replaces what came before."""
    batches: list[list[tuple[str, Sequence[PreparedEntry]]]] = []
    size = 0
    for session in sessions:
        fresh = not batches or size + len(session[1]) > limit or any(session[0] == s for s, _ in batches[-1])
        if fresh:
            batches.append([])
            size = 0
        batches[-1].append(session)
        size += len(session[1])
    return batches


async def _create_entries(
    tx: AsyncManagedTransaction, owner: Owner, sessions: Sequence[Sequence[PreparedEntry]]
) -> None:
    """Create the entries of one or more sessions with their token and entity links and the
    ``NEXT`` chain inside each session."""
    entries = [e for session in sessions for e in session]
    if not entries:
        return
    params = _owner_params(owner)
    await _run(
        tx,
        "create_entries",
        {
            **params,
            "entries": [entry_properties(owner.app_name, owner.user_id, e.stored) for e in entries],
            "written": random.getrandbits(62),
        },
    )
    # One row per term, sorted, so that concurrent writers take the locks of shared nodes
    # in one order; each row lists the entries holding the term.
    # ``spoken``: the tokens some entry holds that are words of its own author's name (a
    # speaker's word, as networkx flags it); not every author of the batch, whose entries
    # restored with their own terms may not hold their name.
    # ``as_user``: those of them whose entry has the role "user" (Token.user_speaker).
    holders: dict[str, list[str]] = {}
    spoken: set[str] = set()
    as_user: set[str] = set()
    for e in entries:
        author_words = speaker_tokens(e.stored.memory.author)
        user_role = e.stored.memory.content.role == "user"
        for value in dict.fromkeys(e.tokens):
            holders.setdefault(value, []).append(e.entry_id)
            if value in author_words:
                spoken.add(value)
                if user_role:
                    as_user.add(value)
    if holders:
        token_links = [
            {"value": value, "entry_ids": ids, "speaker": value in spoken, "user_speaker": value in as_user}
            for value, ids in sorted(holders.items())
        ]
        await _run(tx, "link_tokens", {**params, "links": token_links})
    # A new Entity node takes the label of its first mention, in entry order.
    mentions: dict[str, tuple[str, list[str]]] = {}
    for e in entries:
        for entity in _first_mention_of_each(e.entities):
            mentions.setdefault(entity.name, (entity.label, []))[1].append(e.entry_id)
    if mentions:
        entity_links = [
            {"name": name, "label": label, "entry_ids": ids} for name, (label, ids) in sorted(mentions.items())
        ]
        await _run(tx, "link_entities", {**params, "links": entity_links})
    pairs = [
        {"earlier": session[i].entry_id, "later": session[j].entry_id}
        for session in sessions
        for i, j in next_pairs(
            [e.stored.position for e in session], [is_reaction(e.stored.memory.text) for e in session]
        )
    ]
    if pairs:
        await _run(tx, "link_next", {**params, "pairs": pairs})


def _first_mention_of_each(entities: Sequence[Entity]) -> list[Entity]:
    first: dict[str, Entity] = {}
    for entity in entities:
        first.setdefault(entity.name, entity)
    return list(first.values())


async def _delete_ids(
    tx: AsyncManagedTransaction,
    owner: Owner,
    entry_ids: list[str],
    written: Mapping[str, int] | None = None,
    *,
    whole_sessions: bool = False,
) -> int:
    """Delete entries (and the terms they orphan); a token stays a speaker's word only
    while an entry of such an author holds it, as a replay of a networkx store finds.
    ``written``: only the entries of these ids whose write stamp is this (-1: none).
    ``whole_sessions``: every entry of their sessions goes (a session replaced or deleted,
    a project, a user), so no link across one of them is left to remove."""
    if not entry_ids:
        return 0
    params = _owner_params(owner)
    if not whole_sessions:
        # (Whether an entry is a reaction is in its text, not read here: asked of each.)
        reach = MAX_REACTIONS_LINKED_ACROSS + 1
        await _run(tx, "unlink_across", {**params, "ids": entry_ids, "written": written, "reach": reach})
    records = await _run(tx, "delete_entries", {**params, "ids": entry_ids, "written": written})
    if not records:
        return 0
    words = sorted({w for author in records[0]["authors"] for w in speaker_tokens(author)})
    if words:
        holders = await _run(tx, "speaker_holders", {**params, "values": words})
        flags = [(_speaker_flags(r["value"], r["said"]), r["user_speaker"]) for r in holders]
        rows = [row for row, was in flags if not row["speaker"] or (was and not row["user_speaker"])]
        if rows:
            await _run(tx, "set_speaker_flags", {**params, "rows": rows})
    return int(records[0]["removed"])


def _speaker_flags(value: str, said: Sequence[Sequence[str]]) -> dict[str, Any]:
    """The speaker flags of the token ``value`` (a row of ``set_speaker_flags.cypher``), from
    the ``[author, role]`` pairs of the entries holding it: a speaker's word while one of
    those authors has it in their name, one speaking as the user while such an entry has the
    role ``"user"``."""
    roles = {role for author, role in said if value in speaker_tokens(author)}
    return {"value": value, "speaker": bool(roles), "user_speaker": "user" in roles}


def _schema_objects(version: int) -> set[str]:
    """The names of the indexes and constraints a migration version creates."""
    prefix = f"graphmem_v{version}_"
    return {
        word
        for statement in load_statements(f"schema_v{version}")
        for word in statement.split()
        if word.startswith(prefix)
    }


def _postings(record: Any, with_times: bool) -> TermPostings:
    """The postings of a read's ``token_holders`` and ``entity_holders`` (see postings.cypher)."""
    if not with_times:
        return TermPostings(
            {value: tuple(holders) for value, holders in record["token_holders"]},
            {name: tuple(holders) for name, holders in record["entity_holders"]},
        )
    # Each holder is [element id, timestamp, time_refs]; an entry deleted by a concurrent
    # commit meanwhile reads as null properties: its days are unknown (it may match any
    # time), and the neighbourhood read finds no entry by its id.
    raw: dict[Hashable, tuple[str, list[str]]] = {}
    for _, holders in (*record["token_holders"], *record["entity_holders"]):
        for key, timestamp, refs in holders:
            if timestamp is not None and key not in raw:
                raw[key] = (timestamp, refs)
    return TermPostings(
        {value: tuple(h[0] for h in holders) for value, holders in record["token_holders"]},
        {name: tuple(h[0] for h in holders) for name, holders in record["entity_holders"]},
        _LazyDays(raw),
    )


class _LazyDays(Mapping[Hashable, Days]):
    """Holders' :data:`Days` by key, each parsed from its ``timestamp`` and ``time_refs``
    when the gathering first asks for it (as the networkx backend's days are): a pruned
    search asks about the holders it may expand and few others, and parsing every holder's
    timestamp of every seed was a cost per holder of a search with a time."""

    __slots__ = ("_parsed", "_raw")

    def __init__(self, raw: dict[Hashable, tuple[str, list[str]]]) -> None:
        self._raw = raw
        self._parsed: dict[Hashable, Days] = {}

    def __getitem__(self, key: Hashable) -> Days:
        days = self.get(key)
        if days is None:
            raise KeyError(key)
        return days  # type: ignore[no-any-return]

    def get(self, key: Hashable, default: Any = None) -> Any:
        # Asked per holder a search may expand: without the Mapping mixin's try/except.
        days = self._parsed.get(key)
        if days is None:
            raw = self._raw.get(key)
            if raw is None:
                return default
            days = self._parsed[key] = entry_times(*raw)
        return days

    def __len__(self) -> int:
        return len(self._raw)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._raw)


def _candidates(rows: Sequence[Any]) -> list[CandidateStats]:
    """The candidates of a neighbourhood's rows (see neighbourhood.cypher)."""
    # Hundreds of rows a search (a user of 1,000: ~240 in the gathering): built with set
    # operations and positional arguments, a third less client CPU than comprehensions and
    # keywords (benchmarks/README.md, Speed, session 38).
    result: list[CandidateStats] = []
    append = result.append
    for row in rows:
        entry_id, matched_tokens, matched_entities, entry_project, near_ids, far_ids, author, times, position = row
        # A node deleted by a concurrent commit while this read looked at it reads as
        # null (read committed): such an entry or neighbour is gone, so it is left out.
        if entry_id is None:
            continue
        near = set(near_ids)
        near.discard(None)
        near.discard(entry_id)
        far = set(far_ids)
        far.discard(None)
        far.discard(entry_id)
        far -= near
        tokens = frozenset(matched_tokens)
        if None in tokens:
            tokens = tokens - {None}
        entities = frozenset(matched_entities)
        if None in entities:
            entities = entities - {None}
        day, refs = entry_times(times[0], times[1]) if times is not None and times[0] is not None else (None, ())
        # (CandidateStats' fields in order: entry_id, matched_tokens, matched_entities,
        # neighbour_ids, second_neighbour_ids, project_id, day, time_refs, author, position.)
        append(CandidateStats(entry_id, tokens, entities, tuple(sorted(near)), tuple(sorted(far)), entry_project, day,
                              refs, author, position))
    return result


def _refuse_credentials_in(uri: str) -> None:
    """Refuse a URI that holds a user or password: the driver refuses it too, quoting the
    password in its message. (``open_memory`` reads them out of a store URI.)"""
    try:
        parts = urlsplit(uri) if isinstance(uri, str) else None
        credentials = parts is not None and (parts.username is not None or parts.password is not None)
    except ValueError:
        raise InvalidStoreUriError(f"{redact_uri(uri)!r} is not a valid Neo4j URI") from None
    if credentials:
        raise InvalidStoreUriError(
            f"{redact_uri(uri)!r}: give the user and password as auth=(user, password), not in the URI "
            "(open_memory() reads them from a store URI)"
        )
