"""Copies of large users' graphs inside the process, for :class:`Neo4jMemoryService` searches.

A Neo4j search of one user reads the server four or five times, and for a user of 10k
entries each read expands thousands of relationships: ~20 ms a search, most of it the
server's. The scorer is the same Python either way, so a process that searches a large
user keeps a copy of that user's graph in memory, in the networkx backend's structures
(its postings, ``NEXT`` neighbours and days: exactly what an embedded store searches), and
searches the copy. The server stays the only place anything is stored.

When a copy is trusted: every write transaction ends by putting a new random stamp on the
user's counter node (on Neo4j, ``cypher/stamp_user.cypher``), whoever writes (this
process, another one, a schema migration's data step). A search first reads that stamp
(one round trip) and uses the copy only while the stamps agree. Otherwise it reads the
server, and the user is read again, whole, in the background (kept only when the stamp is
the same before and after that read, so that no write committed meanwhile): no search
waits for a copy. A write made through this process is applied to the copy as well (the
networkx backend's own write of the same entries) when the copy was current just before
it, so an agent that stores a session and then searches reads nothing again. Cypher
writes of your own that do not go through graphmem leave no stamp: a copy does not see
them until the user's next graphmem write.

Which users: only those whose searches went to the server :data:`SEARCHES_BEFORE_COPY`
times, finding them holding at least ``min_entries`` entries (below that a server search is
two light round trips), none of them in a project (a copy
holds global memory only: a user who stores project entries is read from the server), and
at most ``max_entries`` entries in all copies together, the user searched least recently
leaving first. ``delete_user`` drops the user's copy with the data; a copy of a user
deleted by another process is dropped by the next search that reads its stamp.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import OrderedDict, defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphmem._collector import collector_paused
from graphmem._decompose import Decomposer
from graphmem._scoring import ScoringWeights
from graphmem._service import MemoryService, Owner
from graphmem.backends.networkx import GraphMemoryService

__all__ = ["SEARCHES_BEFORE_COPY", "Mirror", "ReplicaStore", "Replicas", "new_stamp"]

_log = logging.getLogger(__name__)

#: A user is copied once this many of its searches went to the server: a one-off lookup (a
#: command of the CLI, an agent's single question) never pays for a copy, while an agent
#: that searches a user every turn has it copied in its first turns. A copy read costs the
#: server and this process about as much time as 3 (a user of 1,000 entries) to 175 (100k)
#: of the user's server searches (benchmarks/README.md, session 36); it runs in the
#: background, so no search waits for it.
SEARCHES_BEFORE_COPY = 4
#: At most this many users' search counts are kept (the least recently searched forgotten).
_USERS_COUNTED = 10_000

#: What a write through the service does to a copy: the same write on the networkx store.
Mirror = Callable[["ReplicaStore"], Awaitable[object]]
#: The server's stamp of a user, its entry count and how many of those are in a project
#: (``None``, ``None``, ``None``: the user holds nothing).
StampRead = Callable[[Owner], Awaitable[tuple[str | None, int | None, int | None]]]
#: Every entry of a user, as rows with the keys of :func:`_entry` and ``session_id`` and
#: ``project_id``.
EntriesRead = Callable[[Owner], Awaitable[Sequence[Mapping[str, Any]]]]


def new_stamp() -> str:
    """A write transaction's stamp: random, so that a user emptied and written again never
    gets back a stamp a stale copy holds."""
    return secrets.token_hex(8)


class ReplicaStore(GraphMemoryService):
    """The networkx store a user's copy lives in (in memory only; one per user).

    It holds a user without project entries, so every scope of a search reads the same
    entries and a project-scoped search of it is the global one: project calls are
    allowed here, where the embedded backend refuses them.
    """

    def supports_project_scoping(self) -> bool:
        return True

    def load(self, records: Sequence[dict[str, Any]]) -> None:
        """Apply journal records (a user read whole), as opening a journal does."""
        # A load of many objects, none of them garbage (as opening a journal: _collector).
        with collector_paused(long=True), self._lock:
            for record in records:
                self._apply(record)

    def entry_count(self, owner: Owner) -> int:
        return len(self._entries.get(owner, ()))


@dataclass
class _Copy:
    owner: Owner
    stamp: str
    store: ReplicaStore

    @property
    def entries(self) -> int:
        return self.store.entry_count(self.owner)


class Replicas:
    """The copies of one :class:`Neo4jMemoryService`: which users are copied, at which
    stamp. ``max_entries=0`` copies nobody."""

    def __init__(
        self,
        read_stamp: StampRead,
        read_entries: EntriesRead,
        decomposer: Decomposer,
        weights: ScoringWeights,
        *,
        min_entries: int,
        max_entries: int,
    ) -> None:
        if min_entries < 1 or max_entries < 0:
            raise ValueError(
                f"replica_min_entries must be at least 1 and replica_max_entries at least 0, "
                f"got {min_entries} and {max_entries}"
            )
        self._read_stamp, self._read_entries = read_stamp, read_entries
        self._decomposer, self._weights = decomposer, weights
        self.min_entries = min_entries
        self.max_entries = max_entries
        #: The copies, least recently searched first.
        self._copies: OrderedDict[Owner, _Copy] = OrderedDict()
        #: Users server searches found large enough to copy, with how many such searches
        #: (a user is copied from the SEARCHES_BEFORE_COPY-th on), most recent last.
        self._large: OrderedDict[Owner, int] = OrderedDict()
        #: Copies being read, by user (in the background: no search waits for one).
        self._loading: dict[Owner, asyncio.Task[None]] = {}
        #: Users whose copy being read must not be kept: a write or an erasure of the user
        #: went through this process after the read began (its stamp check cannot see one
        #: that commits while the copy is built, and a search during ``delete_user`` counts
        #: the user again: the erased entries stayed in memory).
        self._superseded: set[Owner] = set()

    def saw(self, owner: Owner, entry_count: int, global_only: bool) -> None:
        """A server read found ``owner`` holding ``entry_count`` entries, none in a project
        when ``global_only``."""
        if global_only and self.min_entries <= entry_count <= self.max_entries:
            self._large[owner] = self._large.pop(owner, 0) + 1
            if len(self._large) > _USERS_COUNTED:
                self._large.popitem(last=False)

    def copied(self) -> Mapping[Owner, int]:
        """The users copied now, with their entry counts (least recently searched first)."""
        return {owner: copy.entries for owner, copy in self._copies.items()}

    async def settled(self) -> None:
        """Wait for the copies being read now (tests, benchmarks: searches never wait)."""
        while self._loading:
            await asyncio.gather(*self._loading.values(), return_exceptions=True)

    async def store_for(self, owner: Owner) -> MemoryService | None:
        """The store to search ``owner`` in: its copy while current with the server, else
        ``None`` (read the server; the copy is read again in the background)."""
        if self._large.get(owner, 0) < SEARCHES_BEFORE_COPY:
            return None
        stamp, entries, in_projects = await self._read_stamp(owner)
        if stamp is None or in_projects or entries is None or not self.min_entries <= entries <= self.max_entries:
            # Not to be copied (now): emptied, in a project, too small or too large, or
            # not written since writes were stamped (its next write stamps it). Its next
            # server search says again whether it can be.
            self.forget(owner)
            return None
        copy = self._copies.get(owner)
        if copy is not None and copy.stamp == stamp:
            self._copies.move_to_end(owner)
            return copy.store
        self.drop(owner)
        if owner not in self._loading:
            self._superseded.discard(owner)
            task = asyncio.get_running_loop().create_task(self._load(owner, stamp))
            self._loading[owner] = task
            task.add_done_callback(lambda _: self._loaded(owner))
        return None

    def _loaded(self, owner: Owner) -> None:
        self._loading.pop(owner, None)
        self._superseded.discard(owner)

    async def _load(self, owner: Owner, stamp: str) -> None:
        """Read ``owner`` whole and keep the copy, if no write committed meanwhile."""
        try:
            rows = await self._read_entries(owner)
            after, _, _ = await self._read_stamp(owner)
            if after != stamp:
                return  # a write committed during the read: maybe half of it was read
            # Built off the event loop (seconds for 100k entries), in a store of its own.
            store = await asyncio.to_thread(self._build, owner, rows)
        except Exception:  # the server is read again by the searches; the next one retries
            _log.warning("graphmem: reading a copy of a user failed; searches read the server", exc_info=True)
            return
        if owner in self._large and owner not in self._superseded:  # (not written or deleted meanwhile)
            self._copies[owner] = _Copy(owner, stamp, store)
            self._evict()

    def _build(self, owner: Owner, rows: Sequence[Mapping[str, Any]]) -> ReplicaStore:
        store = ReplicaStore(self._decomposer, weights=self._weights)
        store.load(_records(owner, rows))
        return store

    async def written(self, owner: Owner, before: str | None, stamp: str | None, mirror: Mirror | None) -> None:
        """A write to ``owner`` committed, moving its stamp from ``before`` to ``stamp``:
        apply it to the copy with ``mirror`` when the copy was current (``None``: drop the
        copy, the next search reads the user again). A copy being read is not kept."""
        self._supersede_load(owner)
        copy = self._copies.get(owner)
        if copy is None:
            return
        if mirror is None or stamp is None or copy.stamp != before:
            self.drop(owner)
            return
        try:
            await mirror(copy.store)
        except Exception:  # the server has the write: only the copy is lost, read again
            _log.warning("graphmem: a write could not be applied to a user's copy; it is read again", exc_info=True)
            self.drop(owner)
            return
        copy.stamp = stamp
        if copy.entries > self.max_entries:
            self.drop(owner)

    def drop(self, owner: Owner) -> None:
        """Forget ``owner``'s copy (its entries leave the process's memory with it)."""
        self._copies.pop(owner, None)

    def forget(self, owner: Owner) -> None:
        """``owner`` was deleted, or is not to be copied: no copy (a copy being read is not
        kept), and nothing kept about it."""
        self.drop(owner)
        self._supersede_load(owner)
        self._large.pop(owner, None)

    def _supersede_load(self, owner: Owner) -> None:
        if owner in self._loading:
            self._superseded.add(owner)

    def clear(self) -> None:
        """Drop every copy, and stop reading any (the service closed)."""
        for task in self._loading.values():
            task.cancel()
        self._copies.clear()
        self._large.clear()
        self._superseded.update(self._loading)

    def _evict(self) -> None:
        total = sum(copy.entries for copy in self._copies.values())
        while total > self.max_entries and self._copies:
            _, copy = self._copies.popitem(last=False)
            total -= copy.entries


def _records(owner: Owner, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` of ``replica_entries.cypher`` as the networkx store's journal records: one
    ``replace_session`` per session (entries in position order, so the store links them
    as the server did), one ``insert_entry`` per entry outside any session."""
    sessions: dict[tuple[str | None, str], list[Mapping[str, Any]]] = defaultdict(list)
    records: list[dict[str, Any]] = []
    base = {"app_name": owner.app_name, "user_id": owner.user_id}
    for row in rows:
        if row["session_id"] is None:
            records.append({"op": "insert_entry", **base, "project_id": row["project_id"], "entry": _entry(row)})
        else:
            sessions[(row["project_id"], row["session_id"])].append(row)
    for (project_id, session_id), held in sessions.items():
        held.sort(key=lambda row: row["position"])
        entries = [_entry(row) for row in held]
        records.append(
            {"op": "replace_session", **base, "project_id": project_id, "session_id": session_id, "entries": entries}
        )
    return records


def _entry(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "author": row["author"],
        "role": row["role"],
        "text": row["text"],
        "timestamp": row["timestamp"],
        "position": row["position"],
        "language": row["language"],
        "tokens": list(row["tokens"]),
        "entities": [list(pair) for pair in row["entities"]],
        "time_refs": None if row["time_refs"] is None else list(row["time_refs"]),
    }
