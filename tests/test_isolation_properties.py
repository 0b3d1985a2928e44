"""Property tests: random programs of adds, searches and deletes against a reference model.

Each example runs a random sequence of operations across two apps, two users (chosen so
that joined keys would collide: ``"a/b"+"c"`` and ``"a"+"b/c"``), two sessions and two
projects, on the backend under test and on a tiny in-memory model, and compares after
every step:

- what each owner has stored (``list_entries``), so no write or delete leaks into another
  scope or loses an entry;
- what a search recalls: exactly the in-scope entries sharing a query term (direct hits),
  and as context hits only in-scope entries of a session that holds a direct hit, never
  anything else (how far context reaches is the scorer's business, tested elsewhere);
- what each delete reports removing.

On a backend without project scoping every project operation must raise
``ProjectScopingUnsupportedError`` and leave the model (and so the store) unchanged.

Texts are drawn from a small vocabulary of real words so that queries hit. The model asks
the same ``Decomposer`` which terms a text holds: it models scoping, not linguistics.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem import (
    Content,
    Decomposer,
    MemoryEntry,
    MemoryService,
    ProjectScopingUnsupportedError,
    SearchRequest,
)

VOCABULARY = ["apple", "river", "violin", "garden", "coffee", "mountain", "ticket", "the"]
APP_SUFFIXES = ["a/b", "a"]
USERS = ["c", "b/c"]
SESSIONS = ["s1", "s2"]
PROJECTS = [None, "p1", "p2"]
T0 = datetime(2024, 1, 1, tzinfo=UTC)

_namespaces = itertools.count()

# ---------------------------------------------------------------------------- operations

# Skewed towards one owner and the global scope, so that searches and deletes mostly land
# where the adds went (a uniform choice rarely searches what was written).
owners = st.sampled_from([(0, "c")] * 4 + [(0, "b/c"), (1, "c"), (1, "b/c")])
texts = st.lists(st.sampled_from(VOCABULARY), min_size=0, max_size=3).map(" ".join)
queries = st.lists(st.sampled_from(VOCABULARY), min_size=0, max_size=2).map(" ".join)
projects = st.sampled_from([None, None, None, "p1", "p2"])

operations = st.one_of(
    st.tuples(st.just("add_session"), owners, projects, st.sampled_from(SESSIONS), st.lists(texts, max_size=4)),
    st.tuples(st.just("add_entry"), owners, projects, texts),
    st.tuples(st.just("append_to_session"), owners, projects, st.sampled_from(SESSIONS), st.lists(texts, max_size=3)),
    # As the first owner, delete the k-th stored entry of the second (another owner's: nothing).
    st.tuples(st.just("delete_entry"), owners, owners, st.integers(min_value=0, max_value=20)),
    st.tuples(st.just("search"), owners, projects, queries),
    st.tuples(st.just("search"), owners, projects, queries),
    st.tuples(st.just("delete_entries"), owners, projects, queries),
    st.tuples(st.just("delete_session"), owners, st.sampled_from(SESSIONS)),
    st.tuples(st.just("delete_project"), owners, st.sampled_from(PROJECTS[1:])),
    st.tuples(st.just("delete_user"), owners),
)

# ---------------------------------------------------------------------------- the model

Key = tuple[str, str | None, str | None]  # (text, session_id, project_id)


@dataclass
class ModelEntry:
    text: str
    session_id: str | None
    project_id: str | None
    position: int

    @property
    def key(self) -> Key:
        return (self.text, self.session_id, self.project_id)


@dataclass
class Model:
    """What each (app, user) should hold: a plain list of entries, nothing shared."""

    decomposer: Decomposer
    entries: dict[tuple[str, str], list[ModelEntry]] = field(default_factory=dict)
    _terms: dict[str, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)

    def terms(self, text: str, author: str | None = None) -> tuple[frozenset[str], frozenset[str]]:
        if text not in self._terms:
            parts = self.decomposer.decompose(text) if text.strip() else None
            tokens = frozenset(parts.tokens) if parts else frozenset()
            entities = frozenset(e.name for e in parts.entities) if parts else frozenset()
            self._terms[text] = (tokens, entities)
        tokens, entities = self._terms[text]
        return (tokens | {author}, entities) if author else (tokens, entities)

    def of(self, owner: tuple[str, str]) -> list[ModelEntry]:
        return self.entries.setdefault(owner, [])

    def matches(self, entry: ModelEntry, query: str) -> bool:
        q_tokens, q_entities = self.terms(query)
        e_tokens, e_entities = self.terms(entry.text, author="user")
        return bool(q_tokens & e_tokens or q_entities & e_entities)

    def in_scope(self, owner: tuple[str, str], project: str | None) -> list[ModelEntry]:
        return [e for e in self.of(owner) if e.project_id is None or e.project_id == project]

    def direct_hits(self, owner: tuple[str, str], project: str | None, query: str) -> Counter[Key]:
        return Counter(e.key for e in self.in_scope(owner, project) if self.matches(e, query))

    def possible_context(self, owner: tuple[str, str], project: str | None, query: str) -> Counter[Key]:
        """In-scope entries without a match of their own, in a session holding a direct hit."""
        scope = self.in_scope(owner, project)
        sessions = {(e.session_id, e.project_id) for e in scope if e.session_id is not None and self.matches(e, query)}
        return Counter(
            e.key for e in scope if (e.session_id, e.project_id) in sessions and not self.matches(e, query)
        )


def memory(text: str, n: int) -> MemoryEntry:
    return MemoryEntry(content=Content(role="user").with_text(text), author="user", timestamp=T0 + timedelta(seconds=n))


# ---------------------------------------------------------------------------- the property


async def run_program(service: MemoryService, decomposer: Decomposer, program: list[tuple]) -> None:  # type: ignore[type-arg]
    namespace = f"prop{next(_namespaces)}:"
    apps = [namespace + suffix for suffix in APP_SUFFIXES]
    all_owners = [(app, user) for app in apps for user in USERS]
    model = Model(decomposer)
    projects_ok = service.supports_project_scoping()
    counted = neo4j_counter(service)

    for step, op in enumerate(program):
        kind = op[0]
        owner = (apps[op[1][0]], op[1][1])
        app, user = owner
        project: str | None = (
            op[2] if kind in {"add_session", "add_entry", "append_to_session", "search", "delete_entries"} else None
        )
        if kind == "delete_project":
            project = op[2]
        refused = project is not None and not projects_ok

        try:
            if kind == "add_session":
                session, session_texts = op[3], op[4]
                entries = [memory(t, step) for t in session_texts]
                if project is None:
                    await service.add_session(app, user, session, entries)
                else:
                    await service.add_session_to_project(app, user, session, project, entries)
                kept = [t for t in session_texts if t.strip()]
                model.entries[owner] = [
                    e for e in model.of(owner) if not (e.session_id == session and e.project_id == project)
                ] + [ModelEntry(t, session, project, i) for i, t in enumerate(kept)]
            elif kind == "add_entry":
                text = op[3]
                if project is None:
                    entry_id = await service.add_entry(app, user, memory(text, step))
                else:
                    entry_id = await service.add_entry_to_project(app, user, project, memory(text, step))
                assert (entry_id is None) == (not text.strip())
                if text.strip():
                    model.of(owner).append(ModelEntry(text, None, project, 0))
            elif kind == "append_to_session":
                session, session_texts = op[3], op[4]
                entries = [memory(t, step) for t in session_texts]
                if project is None:
                    ids = await service.append_to_session(app, user, session, entries)
                else:
                    ids = await service.append_to_session_in_project(app, user, session, project, entries)
                kept = [t for t in session_texts if t.strip()]
                assert len(ids) == len(kept), op
                model.of(owner).extend(ModelEntry(t, session, project, 0) for t in kept)
            elif kind == "delete_entry":
                source = (apps[op[2][0]], op[2][1])
                theirs = await service.list_entries(*source, all_projects=True)
                if theirs:
                    target = theirs[op[3] % len(theirs)]
                    removed = await service.delete_entry(app, user, target.entry_id)
                    assert removed == (1 if source == owner else 0), op
                    if removed:
                        key = (target.memory.text, target.session_id, target.project_id)
                        model.of(owner).remove(next(e for e in model.of(owner) if e.key == key))
            elif kind == "search":
                query = op[3]
                response = await service.search(
                    SearchRequest(query=query, app_name=app, user_id=user, project_id=project, limit=1000)
                )
                check_hits(model, owner, project, query, response.hits, op)
            elif kind == "delete_entries":
                query = op[3]
                if project is None:
                    removed = await service.delete_entries(app, user, query)
                else:
                    removed = await service.delete_entries_in_project(app, user, project, query)
                doomed = [e for e in model.of(owner) if e.project_id == project and model.matches(e, query)]
                assert removed == len(doomed), op
                model.entries[owner] = [e for e in model.of(owner) if e not in doomed]
            elif kind == "delete_session":
                removed = await service.delete_session(app, user, op[2])
                kept_entries = [e for e in model.of(owner) if e.session_id != op[2]]
                assert removed == len(model.of(owner)) - len(kept_entries), op
                model.entries[owner] = kept_entries
            elif kind == "delete_project":
                removed = await service.delete_project(app, user, op[2])
                kept_entries = [e for e in model.of(owner) if e.project_id != op[2]]
                assert removed == len(model.of(owner)) - len(kept_entries), op
                model.entries[owner] = kept_entries
            elif kind == "delete_user":
                removed = await service.delete_user(app, user)
                assert removed == len(model.of(owner)), op
                model.entries[owner] = []
            else:  # pragma: no cover - the strategy makes no other kind
                raise AssertionError(kind)
        except ProjectScopingUnsupportedError:
            assert refused, f"{op} refused although it has no project or the backend supports projects"
        else:
            assert not refused, f"{op} on a backend without project scoping did not raise"

        # After every step, every owner holds exactly what the model holds.
        for each in all_owners:
            stored = await service.list_entries(*each, all_projects=True)
            assert Counter((e.memory.text, e.session_id, e.project_id) for e in stored) == Counter(
                e.key for e in model.of(each)
            ), (op, each)
            # Appends and replacements never give two turns of one session the same place.
            places = [(e.project_id, e.session_id, e.position) for e in stored if e.session_id is not None]
            assert len(places) == len(set(places)), (op, each)
            if counted is not None:
                assert await counted(*each) == (
                    (len(stored), sum(e.project_id is not None for e in stored)) if stored else None
                ), (op, each)

    # Finally, every word of the vocabulary from the busiest owner, globally and in a project.
    owner = (apps[0], USERS[0])
    for project in [None, "p1"] if projects_ok else [None]:
        for word in VOCABULARY:
            response = await service.search(
                SearchRequest(query=word, app_name=owner[0], user_id=owner[1], project_id=project, limit=1000)
            )
            check_hits(model, owner, project, word, response.hits, ("final sweep", word, project))


def neo4j_counter(service: MemoryService) -> Callable[[str, str], Awaitable[tuple[int, int] | None]] | None:
    """On Neo4j, a reader of an owner's entry counter (the GraphmemUser node a search reads
    its N from: (entries, project entries), None without one); elsewhere None."""
    try:
        from graphmem.backends.neo4j import Neo4jMemoryService
    except ImportError:  # no neo4j driver installed: no Neo4j service either
        return None
    if not isinstance(service, Neo4jMemoryService):
        return None
    driver = service.driver

    async def read(app: str, user: str) -> tuple[int, int] | None:
        result = await driver.execute_query(
            "MATCH (c:GraphmemUser {app_name: $a, user_id: $u}) RETURN c.entries AS n, c.project_entries AS p",
            {"a": app, "u": user},
        )
        return (result.records[0]["n"], result.records[0]["p"]) if result.records else None

    return read


def check_hits(model: Model, owner: tuple[str, str], project: str | None, query: str, hits: list, op: object) -> None:  # type: ignore[type-arg]
    direct = Counter(
        (h.memory.text, h.session_id, h.project_id) for h in hits if h.matched_tokens or h.matched_entities
    )
    context = Counter(
        (h.memory.text, h.session_id, h.project_id) for h in hits if not (h.matched_tokens or h.matched_entities)
    )
    # Never lose a match, never show anything out of scope, never invent a match.
    assert direct == model.direct_hits(owner, project, query), (op, hits)
    # Context hits: only in-scope turns of a session that matched.
    assert not context - model.possible_context(owner, project, query), (op, hits)
    assert all(0.0 < h.score <= 1.0 for h in hits)
    assert all(h.context_score > 0 for h in hits if not (h.matched_tokens or h.matched_entities))


@settings(
    max_examples=35,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(program=st.lists(operations, min_size=2, max_size=16))
async def test_random_programs_never_leak_or_lose(
    service: MemoryService, decomposer: Decomposer, program: list[tuple]  # type: ignore[type-arg]
) -> None:
    # The service is shared by the examples: each runs in its own namespace of apps.
    await run_program(service, decomposer, program)
