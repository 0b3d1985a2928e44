"""The graph schema shared by every backend: labels, relationship types and properties.

Both backends store the same nodes and relationships with the same properties, so one
Cypher debugging query reads either (Neo4j keeps one bookkeeping node per user besides,
its entry count: ``GraphmemUser``, see :mod:`graphmem.backends.neo4j`):

- ``(:Entry {id, app_name, user_id, project_id, session_id, position, author, role, text,
  timestamp, time_refs, language})`` — ``timestamp`` is an ISO-8601 UTC string, ``project_id`` and
  ``session_id`` are null outside a project / session; ``time_refs`` lists the day ranges
  that time expressions in the text refer to, resolved against ``timestamp``, as ISO 8601
  intervals (``"2023-05-22/2023-05-28"`` for "last week" said on 3 June 2023; see
  :mod:`graphmem._time`), empty when the text names no time; ``language`` is the code of
  the language the text was decomposed as (``"en"``, ``"ja"``, ...; see
  :mod:`graphmem._language`), null for entries stored before languages were.
- ``(:Token {app_name, user_id, value, speaker, user_speaker})`` — ``speaker`` is true
  while an entry that holds the token was said by an author with that word in their name
  (the query that holds it names a speaker); deleting the last such entry resets it.
  ``user_speaker`` likewise, while such an entry has the role ``"user"`` (a question in the
  first person asks about those authors, see :mod:`graphmem._asker`; on a Neo4j store
  written before it was kept, schema version 3 sets it).
- ``(:Entity {app_name, user_id, name, label})`` — ``label`` is spaCy's entity label.
- ``(:Entry)-[:HAS_TOKEN]->(:Token)``, ``(:Entry)-[:MENTIONS]->(:Entity)``,
  ``(:Entry)-[:NEXT]->(:Entry)`` (the following entry of the same session: positions ``p``
  and ``p + 1``, and the turns on either side of a run of reactions, so a deleted turn
  leaves a gap; see ``graphmem._service.next_pairs``).

Labels and relationship types are constants here; they are never built from user text.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from graphmem._models import Content, MemoryEntry, Part
from graphmem._service import StoredEntry
from graphmem._time import mentioned_ranges, parse_time_ref

ENTRY = "Entry"
TOKEN = "Token"
ENTITY = "Entity"
HAS_TOKEN = "HAS_TOKEN"
MENTIONS = "MENTIONS"
NEXT = "NEXT"

#: The labels at the two ends of each relationship type. Every relationship starts at an
#: ``Entry`` and the relationships form no cycle (``NEXT`` goes to a later position): what
#: ``graphmem cypher`` uses to know that two pattern nodes cannot be one node.
RELATIONSHIP_ENDS = {HAS_TOKEN: (ENTRY, TOKEN), MENTIONS: (ENTRY, ENTITY), NEXT: (ENTRY, ENTRY)}
#: The type of each property of the model, by name (no name has two types across labels):
#: what ``graphmem cypher`` checks comparisons against on networkx, where Python's equality
#: (``True == 1``) and ``in`` (list membership for CONTAINS) differ from Cypher's.
PROPERTY_KINDS = {
    **dict.fromkeys(
        ("id", "app_name", "user_id", "project_id", "session_id", "author", "role", "text", "timestamp"), "string"
    ),
    **dict.fromkeys(("language", "value", "name", "label"), "string"),
    "position": "number",
    "speaker": "boolean",
    "user_speaker": "boolean",
    "time_refs": "list",
}


def entry_properties(app_name: str, user_id: str, entry: StoredEntry) -> dict[str, Any]:
    """The properties of an ``Entry`` node, identical on every backend."""
    memory = entry.memory
    return {
        "id": entry.entry_id,
        "app_name": app_name,
        "user_id": user_id,
        "project_id": entry.project_id,
        "session_id": entry.session_id,
        "position": entry.position,
        "author": memory.author,
        "role": memory.content.role,
        "text": memory.text,
        "timestamp": memory.timestamp.isoformat(),
        "time_refs": time_refs(memory.text, memory.timestamp),
        "language": entry.language,
    }


def time_refs(text: str, timestamp: datetime) -> list[str]:
    """An entry's ``time_refs`` property: the day ranges its text refers to, as ISO 8601
    intervals resolved against its (UTC) ``timestamp``."""
    return [r.iso() for r in mentioned_ranges(text, timestamp)]


def entry_times(
    timestamp: str | datetime, time_refs: Sequence[str] | None
) -> tuple[int, tuple[tuple[int, int], ...]]:
    """The day an entry was said and the day ranges it refers to, as ordinals, from its
    ``timestamp`` and ``time_refs`` properties (what a gathering with times returns)."""
    when = datetime.fromisoformat(timestamp) if isinstance(timestamp, str) else timestamp
    return when.date().toordinal(), tuple(_ref_ordinals(ref) for ref in time_refs) if time_refs else ()


@functools.lru_cache(maxsize=4096)
def _ref_ordinals(ref: str) -> tuple[int, int]:
    # The same few ranges ("last week" said on one day) recur across a user's entries.
    return parse_time_ref(ref).ordinals


def stored_entry_from_properties(props: dict[str, Any]) -> StoredEntry:
    """Rebuild a :class:`StoredEntry` from ``Entry`` node properties (``time_refs`` missing:
    written before they were recorded, so resolved from the text, as the networkx store does)."""
    memory = MemoryEntry(
        content=Content(role=props["role"], parts=[Part(text=props["text"])]),
        author=props["author"],
        timestamp=datetime.fromisoformat(props["timestamp"]),
    )
    refs = props.get("time_refs")
    if refs is None:
        refs = time_refs(memory.text, memory.timestamp)
    return StoredEntry(
        entry_id=props["id"],
        memory=memory,
        session_id=props["session_id"],
        project_id=props["project_id"],
        position=int(props["position"]),
        language=props.get("language"),
        refers_to_time=bool(refs),
    )
