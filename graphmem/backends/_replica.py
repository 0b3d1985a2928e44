"""Copies of large users' graphs inside the process, for :class:`Neo4jMemoryService` searches.

A Neo4j search of one user reads the server four or five times, and for a user of 10k
entries each read expands thousands of relationships: ~20 ms a search, most of it the
server's. The scorer is the same Python either way, so a process that searches a large
user keeps a copy of that user's graph in memory, in the networkx backend's structures
(its postings, ``NEXT`` neighbours and days: exactly what an embedded store searches), and
searches the copy. The server stays the only place anything is stored.

When a copy is trusted: every write transaction ends by putting a new random stamp on the
user's counter node (``cypher/stamp_user.cypher``), whoever writes (this process, another
one, a schema migration's data step). A search first reads that stamp (one round trip,
``cypher/user_stamp.cypher``) and uses the copy only while the stamps agree; otherwise it
reads the user again, whole (``cypher/replica_entries.cypher``, kept only when the stamp is
the same before and after it, so no write committed meanwhile). A write made through this
process is applied to the copy as well (the networkx backend's own write of the same
entries) when the copy was current just before it, so an agent that stores a session and
then searches reads nothing again. Writes of Cypher of your own that do not go through
graphmem leave no stamp: a copy does not see them until the user's next graphmem write.

Which users: only those a server search found holding at least ``min_entries`` entries
(smaller users are one or two cheap reads on the server), none of them in a project (a
copy holds global memory only: a user who stores project entries is read from the server),
and at most ``max_entries`` entries in all copies together, the user searched least
recently leaving first. ``delete_user`` drops the user's copy with the data; a copy of a
user deleted by another process is dropped by the next search that reads its stamp.
"""

from __future__ import annotations

import logging
import secrets
from collections import OrderedDict, defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from graphmem._decompose import Decomposer
from graphmem._scoring import ScoringWeights
from graphmem._service import MemoryService, Owner
from graphmem.backends.networkx import GraphMemoryService

__all__ = ["Mirror", "ReplicaStore", "Replicas", "new_stamp"]

_log = logging.getLogger(__name__)

#: What a write through the service does to a copy: the same write on the networkx store.
Mirror = Callable[["ReplicaStore"], Awaitable[object]]
#: A read of the server: a query file's name and its parameters, to its rows.
Read = Callable[[str, dict[str, Any]], Awaitable[list[Any]]]


def new_stamp() -> str:
    """A write transaction's stamp: random, so that a user emptied and written again never
    gets back a stamp a stale copy holds."""
    return secrets.token_hex(8)


class ReplicaStore(GraphMemoryService):
    """The networkx store the copies live in (in memory only).

    It holds only users without project entries, so every scope of a search reads the
    same entries and a project-scoped search of a copied user is the global one: project
    calls are allowed here, where the embedded backend refuses them.
    """

    def supports_project_scoping(self) -> bool:
        return True


class Replicas:
    """The copies of one :class:`Neo4jMemoryService`: which users are copied, at which
    stamp, and the store holding them. ``max_entries=0`` copies nobody."""

    def __init__(
        self,
        read: Read,
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
        self._read = read
        self._decomposer, self._weights = decomposer, weights
        self._store = ReplicaStore(decomposer, weights=weights)
        self.min_entries = min_entries
        self.max_entries = max_entries
        #: Per copied user, the stamp its copy is at and its entry count, least recently
        #: searched first.
        self._copies: OrderedDict[Owner, tuple[str, int]] = OrderedDict()
        #: Users a server search found large enough to copy (their next search checks).
        self._large: set[Owner] = set()
        self._loading: set[Owner] = set()

    def saw(self, owner: Owner, entry_count: int, global_only: bool) -> None:
        """A server read found ``owner`` holding ``entry_count`` entries, none in a project
        when ``global_only``."""
        if global_only and self.min_entries <= entry_count <= self.max_entries:
            self._large.add(owner)

    def copied(self) -> Mapping[Owner, int]:
        """The users copied now, with their entry counts (least recently searched first)."""
        return {owner: entries for owner, (_, entries) in self._copies.items()}

    async def store_for(self, owner: Owner) -> MemoryService | None:
        """The store to search ``owner`` in: the copy, current with the server (read again
        when it was not), or ``None`` to read the server."""
        if owner not in self._large:
            return None
        state = (await self._read("user_stamp", _params(owner)))[0]
        stamp, entries, in_projects = state["stamp"], state["entries"], state["project_entries"]
        if stamp is None or in_projects or entries is None or not self.min_entries <= entries <= self.max_entries:
            # Not to be copied (now): emptied, in a project, too small or too large, or
            # not written since writes were stamped (its next write stamps it). Its next
            # server search says again whether it can be.
            self.forget(owner)
            return None
        copy = self._copies.get(owner)
        if copy is not None and copy[0] == stamp:
            self._copies.move_to_end(owner)
            return self._store
        if owner in self._loading:
            return None  # another search is reading it: this one reads the server
        self._loading.add(owner)
        try:
            self.drop(owner)
            rows = await self._read("replica_entries", _params(owner))
            after = (await self._read("user_stamp", _params(owner)))[0]["stamp"]
            if after != stamp:
                return None  # a write committed during the read: maybe half of it was read
            await self._store._write(owner, *_records(owner, rows))
            self._copies[owner] = (stamp, len(rows))
            self._evict()
            return self._store if owner in self._copies else None
        finally:
            self._loading.discard(owner)

    async def written(self, owner: Owner, before: str | None, stamp: str | None, mirror: Mirror | None) -> None:
        """A write to ``owner`` committed, moving its stamp from ``before`` to ``stamp``:
        apply it to the copy with ``mirror`` when the copy was current (``None``: drop the
        copy, the next search reads the user again)."""
        copy = self._copies.get(owner)
        if copy is None:
            return
        if mirror is None or stamp is None or copy[0] != before:
            self.drop(owner)
            return
        try:
            await mirror(self._store)
        except Exception:  # the server has the write: only the copy is lost, read again
            _log.warning("graphmem: a write could not be applied to a user's copy; it is read again", exc_info=True)
            self.drop(owner)
            return
        entries = len(self._store._entries.get(owner, ()))
        self._copies[owner] = (stamp, entries)
        if entries > self.max_entries:
            self.drop(owner)

    def drop(self, owner: Owner) -> None:
        """Forget ``owner``'s copy (its entries leave the process's memory)."""
        if self._copies.pop(owner, None) is not None or self._store._entries.get(owner):
            with self._store._lock:
                self._store._apply({"op": "delete_user", "app_name": owner.app_name, "user_id": owner.user_id})

    def forget(self, owner: Owner) -> None:
        """``owner`` was deleted: no copy, and nothing kept about it."""
        self.drop(owner)
        self._large.discard(owner)

    def clear(self) -> None:
        """Drop every copy (the service closed)."""
        self._copies.clear()
        self._large.clear()
        self._store = ReplicaStore(self._decomposer, weights=self._weights)

    def _evict(self) -> None:
        total = sum(entries for _, entries in self._copies.values())
        while total > self.max_entries and self._copies:
            owner, (_, entries) = next(iter(self._copies.items()))
            self.drop(owner)
            total -= entries


def _params(owner: Owner) -> dict[str, Any]:
    return {"app_name": owner.app_name, "user_id": owner.user_id}


def _records(owner: Owner, rows: Sequence[Any]) -> list[dict[str, Any]]:
    """``rows`` of ``replica_entries.cypher`` as the networkx store's journal records: one
    ``replace_session`` per session (entries in position order, so the store links them
    as the server did), one ``insert_entry`` per entry outside any session."""
    sessions: dict[tuple[str | None, str], list[Any]] = defaultdict(list)
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


def _entry(row: Any) -> dict[str, Any]:
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
