"""The graph schema shared by every backend: labels, relationship types and properties.

Both backends store the same nodes and relationships with the same properties, so one
Cypher debugging query reads either:

- ``(:Entry {id, app_name, user_id, project_id, session_id, position, author, role, text,
  timestamp})`` — ``timestamp`` is an ISO-8601 UTC string, ``project_id`` and
  ``session_id`` are null outside a project / session.
- ``(:Token {app_name, user_id, value})``
- ``(:Entity {app_name, user_id, name, label})`` — ``label`` is spaCy's entity label.
- ``(:Entry)-[:HAS_TOKEN]->(:Token)``, ``(:Entry)-[:MENTIONS]->(:Entity)``,
  ``(:Entry)-[:NEXT]->(:Entry)`` (the following entry of the same session: positions ``p``
  and ``p + 1`` only, so a deleted turn leaves a gap; see ``graphmem._service.next_pairs``).

Labels and relationship types are constants here; they are never built from user text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from graphmem._models import Content, MemoryEntry, Part
from graphmem._service import StoredEntry

ENTRY = "Entry"
TOKEN = "Token"
ENTITY = "Entity"
HAS_TOKEN = "HAS_TOKEN"
MENTIONS = "MENTIONS"
NEXT = "NEXT"


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
    }


def stored_entry_from_properties(props: dict[str, Any]) -> StoredEntry:
    """Rebuild a :class:`StoredEntry` from ``Entry`` node properties."""
    memory = MemoryEntry(
        content=Content(role=props["role"], parts=[Part(text=props["text"])]),
        author=props["author"],
        timestamp=datetime.fromisoformat(props["timestamp"]),
    )
    return StoredEntry(
        entry_id=props["id"],
        memory=memory,
        session_id=props["session_id"],
        project_id=props["project_id"],
        position=int(props["position"]),
    )
