"""graphmem: long-term memory for AI agents, stored as a knowledge graph.

Entries are decomposed into token and entity nodes linked to the entry; search scores
entries by token overlap over the graph, with conversation adjacency and entities. No LLM
and no network call is needed to store or recall.

Importing graphmem has no side effects: no model is loaded and no connection is made
until a service is used. ``open_memory(uri)`` opens any store from its URI (``memory:``,
a journal path, ``bolt://...``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphmem._adapter import MemoryServiceAdapter
from graphmem._decompose import Decomposer, Decomposition, Entity
from graphmem._errors import (
    BackendUnavailableError,
    DecompositionError,
    EntryIdConflictError,
    GraphmemError,
    InvalidIdentifierError,
    InvalidMemoryError,
    InvalidProjectIdError,
    InvalidStoreUriError,
    JournalCompactionError,
    JournalCorruptError,
    ProjectScopingUnsupportedError,
    ReadOnlyStoreError,
    ServiceClosedError,
    StoreLockedError,
    UnsupportedOperationError,
)
from graphmem._fixtures import (
    FixtureEntry,
    FixtureError,
    FixtureSession,
    export_fixtures,
    fixture_json_schema,
    load_fixtures,
    read_fixtures,
)
from graphmem._models import (
    Content,
    MemoryEntry,
    Part,
    SearchHit,
    SearchRequest,
    SearchResponse,
    validate_project_id,
)
from graphmem._open import open_memory
from graphmem._scoring import ScoringWeights
from graphmem._service import EntityMentions, EntryRecord, MemoryService, MemoryStats, StoredEntry
from graphmem.backends.networkx import GraphMemoryService

if TYPE_CHECKING:
    from graphmem.backends.neo4j import Neo4jMemoryService

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailableError",
    "Content",
    "Decomposer",
    "Decomposition",
    "DecompositionError",
    "Entity",
    "EntityMentions",
    "EntryIdConflictError",
    "EntryRecord",
    "FixtureEntry",
    "FixtureError",
    "FixtureSession",
    "GraphMemoryService",
    "GraphmemError",
    "InvalidIdentifierError",
    "InvalidMemoryError",
    "InvalidProjectIdError",
    "InvalidStoreUriError",
    "JournalCompactionError",
    "JournalCorruptError",
    "MemoryEntry",
    "MemoryService",
    "MemoryServiceAdapter",
    "MemoryStats",
    "Neo4jMemoryService",
    "Part",
    "ProjectScopingUnsupportedError",
    "ReadOnlyStoreError",
    "ScoringWeights",
    "SearchHit",
    "SearchRequest",
    "SearchResponse",
    "ServiceClosedError",
    "StoreLockedError",
    "StoredEntry",
    "UnsupportedOperationError",
    "__version__",
    "export_fixtures",
    "fixture_json_schema",
    "load_fixtures",
    "open_memory",
    "read_fixtures",
    "validate_project_id",
]


def __getattr__(name: str) -> Any:
    # The Neo4j backend needs the optional ``neo4j`` driver: import it only when asked for.
    # Without the driver, the name still resolves (so ``from graphmem import *`` works) to a
    # class whose construction raises an ImportError naming the extra to install.
    if name == "Neo4jMemoryService":
        try:
            from graphmem.backends.neo4j import Neo4jMemoryService
        except ImportError as exc:
            return _needs_extra(name, "neo4j", exc)
        return Neo4jMemoryService
    raise AttributeError(f"module 'graphmem' has no attribute {name!r}")


def _needs_extra(name: str, extra: str, cause: ImportError) -> type:
    message = f"{name} needs the optional dependencies of graphmem[{extra}]: pip install 'graphmem[{extra}]' ({cause})"

    def __init__(self: object, *args: object, **kwargs: object) -> None:
        raise ImportError(message) from cause

    return type(name, (), {"__init__": __init__, "__doc__": message})
