"""A Neo4j service's copies of large users (graphmem.backends._replica): a search of a
copied user answers exactly as the server's reads do, after every kind of write, whoever
made it; a copy is never trusted once the server's stamp moved; nothing of a deleted user
stays in the process.

Every test compares a service that copies every user it has searched once
(``replica_min_entries=1``) with one that never copies (``replica_max_entries=0``), both
on the same real server.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from test_neo4j_backend import (
    PARITY_QUERIES,
    assert_same_ranking,
    entry,
    fixture_entries,
    load_fixture_sessions,
    ranked,
)

from conftest import make_neo4j_service, neo4j_auth, neo4j_uri_or_skip
from graphmem import Decomposer, MemoryService, SearchRequest
from graphmem._service import Owner
from graphmem.backends._replica import SEARCHES_BEFORE_COPY, Replicas
from graphmem.backends.neo4j import Neo4jMemoryService

pytestmark = pytest.mark.neo4j

APP, USER = "app", "heavy"
ASKED = [
    "what did Ana adopt",
    "Rex the beagle at the park",
    "hiking in Boston",
    "when was the vet visit",
    "lol",
    "what does Bo cook on Sundays",
]
TEXTS = [
    "I adopted a puppy named Rex last week",
    "haha",
    "What breed is Rex?",
    "A beagle, he loves the park",
    "We went hiking in Boston yesterday",
    "Nice! Boston is lovely in May",
    "Rex had his vet visit on Tuesday",
    "Bo cooks lasagna every Sunday",
    "lol same",
    "The vet said Rex is fine",
]


@pytest.fixture
async def pair(decomposer: Decomposer) -> AsyncIterator[tuple[Neo4jMemoryService, Neo4jMemoryService]]:
    """(copying, server): two services on one empty database; the first copies every user
    it has searched, the second never copies."""
    wiper = await make_neo4j_service(decomposer)
    await wiper.close()
    uri, auth = neo4j_uri_or_skip(), neo4j_auth()
    copying = Neo4jMemoryService(uri, auth=auth, nlp=decomposer, replica_min_entries=1)
    server = Neo4jMemoryService(uri, auth=auth, nlp=decomposer, replica_max_entries=0)
    try:
        yield copying, server
    finally:
        await copying.close()
        await server.close()


def session_of(rng: random.Random, size: int, day: int) -> list[Any]:
    return [entry(rng.choice(TEXTS), author=rng.choice(["Ana", "Bo"]), minute=day * 1440 + i) for i in range(size)]


async def answers(svc: MemoryService, app: str = APP, user: str = USER) -> list[list[tuple[str, float]]]:
    return [await ranked(svc, app, user, q) for q in ASKED]


async def copy_in(svc: Neo4jMemoryService, app: str = APP, user: str = USER) -> None:
    """Search the user until it is copied: its first SEARCHES_BEFORE_COPY searches read the
    server; the next finds no current copy and has one read in the background. A read that
    earlier searches started is waited for first: one begun before a write finds the stamp
    moved and keeps nothing, and while it runs no other is started (a CI run once saw no
    copy after a round of searches and writes at once)."""
    await svc._replicas.settled()
    for query in (ASKED * 2)[: SEARCHES_BEFORE_COPY + 1]:
        await svc.search(SearchRequest(app_name=app, user_id=user, query=query))
    await svc._replicas.settled()
    assert Owner(app, user) in svc._replicas.copied()


async def test_a_user_searched_only_a_few_times_is_not_copied(
    pair: tuple[Neo4jMemoryService, Neo4jMemoryService],
) -> None:
    copying, _ = pair
    await copying.add_session(APP, USER, "s0", session_of(random.Random(1), 6, 0))
    for query in ASKED[:SEARCHES_BEFORE_COPY]:
        await copying.search(SearchRequest(app_name=APP, user_id=USER, query=query))
    await copying._replicas.settled()
    assert not copying._replicas.copied()
    await copy_in(copying)


async def assert_same_answers(copying: Neo4jMemoryService, server: Neo4jMemoryService) -> None:
    """The copy, made current first, answers every question as the server does."""
    await copy_in(copying)
    for query, got, want in zip(ASKED, await answers(copying), await answers(server), strict=True):
        assert_same_ranking(want, got, query)
    # Still current: every answer above came from the copy.
    copy = copying._replicas._copies[Owner(APP, USER)]
    assert copy.stamp == (await copying._user_stamp(Owner(APP, USER)))[0]


async def stored_and_copied(
    writer: Neo4jMemoryService,
    copying: Neo4jMemoryService,
    server: Neo4jMemoryService,
    rng: random.Random,
    *,
    sessions: int,
    size: int,
) -> dict[str, int]:
    """``writer`` stores the user's sessions, ``copying`` copies it and answers as
    ``server``; then the reads of whole users are counted from zero."""
    for day in range(sessions):
        await writer.add_session(APP, USER, f"s{day}", session_of(rng, size, day))
    await copy_in(copying)
    reads = count_reads(copying._replicas)
    await assert_same_answers(copying, server)
    assert reads["replica_entries"] == 0
    return reads


def random_write(writer: Neo4jMemoryService, rng: random.Random, minute: int, *, sessions: int) -> Awaitable[Any]:
    """One write of a random kind to one of the user's first ``sessions`` sessions, every
    random choice drawn now (the call may run later, beside others)."""
    kind = rng.choice(["add", "append", "entry", "delete_entries", "delete_session"])
    session = f"s{rng.randrange(sessions)}"
    if kind == "add":
        return writer.add_session(APP, USER, session, session_of(rng, rng.randint(1, 5), minute))
    if kind == "append":
        return writer.append_to_session(APP, USER, session, session_of(rng, rng.randint(1, 3), minute))
    if kind == "entry":
        return writer.add_entry(APP, USER, entry(rng.choice(TEXTS), author="Ana", minute=minute))
    if kind == "delete_entries":
        query = rng.choice(ASKED)

        async def delete_found() -> int:
            hits = (await writer.search(SearchRequest(app_name=APP, user_id=USER, query=query))).hits
            return await writer.delete_entries_by_id(APP, USER, [h.entry_id for h in hits[:2]])

        return delete_found()
    return writer.delete_session(APP, USER, session)


def count_reads(replicas: Replicas) -> dict[str, int]:
    """Count the reads of whole users the copies make."""
    counts = {"replica_entries": 0}
    read = replicas._read_entries

    async def counted(owner: Any) -> Any:
        counts["replica_entries"] += 1
        return await read(owner)

    replicas._read_entries = counted
    return counts


async def test_a_copied_user_ranks_as_the_server_on_the_demo_fixtures(
    pair: tuple[Neo4jMemoryService, Neo4jMemoryService],
) -> None:
    copying, server = pair
    for s in load_fixture_sessions():
        if s["project_id"] is None:
            await server.add_session(s["app_name"], s["user_id"], s["session_id"], fixture_entries(s))
    for app, user in sorted({(app, user) for app, user, _ in PARITY_QUERIES}):
        await copy_in(copying, app, user)
    for app, user, query in PARITY_QUERIES:
        assert_same_ranking(await ranked(server, app, user, query), await ranked(copying, app, user, query), query)


async def test_writes_through_the_service_reach_its_copy_without_reading_the_user_again(
    pair: tuple[Neo4jMemoryService, Neo4jMemoryService],
) -> None:
    copying, server = pair
    rng = random.Random(7)
    reads = await stored_and_copied(copying, copying, server, rng, sessions=4, size=6)

    writes: list[Callable[[], Awaitable[Any]]] = [
        lambda: copying.add_session(APP, USER, "s1", session_of(rng, 3, 9)),  # a replacement
        lambda: copying.append_to_session(APP, USER, "s2", session_of(rng, 2, 10)),
        lambda: copying.add_entry(APP, USER, entry("Ana's vet is Dr. Silva", author="Ana", minute=99)),
        lambda: copying.add_sessions(APP, USER, {"s5": session_of(rng, 4, 11), "s6": session_of(rng, 2, 12)}),
        lambda: copying.delete_session(APP, USER, "s0"),
    ]
    for write in writes:
        await write()
        await assert_same_answers(copying, server)
    some = [h.entry_id for h in (await copying.search(SearchRequest(app_name=APP, user_id=USER, query="Rex"))).hits]
    await copying.delete_entries_by_id(APP, USER, some[:2])
    await assert_same_answers(copying, server)
    await copying.delete_entries(APP, USER, "lasagna")
    await assert_same_answers(copying, server)
    assert reads["replica_entries"] == 0, "a write through the service made the copy read the user again"
    assert len(copying._replicas.copied()) == 1


async def test_a_write_by_another_service_makes_the_copy_read_again(
    pair: tuple[Neo4jMemoryService, Neo4jMemoryService],
) -> None:
    copying, server = pair
    rng = random.Random(11)
    reads = await stored_and_copied(server, copying, server, rng, sessions=3, size=5)
    # Another process (here: another service) appends and deletes: the copy is stale.
    await server.append_to_session(APP, USER, "s1", [entry("Rex chased a squirrel in Boston", author="Ana")])
    await assert_same_answers(copying, server)
    assert reads["replica_entries"] == 1
    await server.delete_session(APP, USER, "s0")
    await assert_same_answers(copying, server)
    assert reads["replica_entries"] == 2


async def test_random_writes_from_both_sides_never_leave_a_stale_answer(
    pair: tuple[Neo4jMemoryService, Neo4jMemoryService],
) -> None:
    copying, server = pair
    rng = random.Random(2026)
    await server.add_session(APP, USER, "s0", session_of(rng, 4, 0))
    await copy_in(copying)
    for step in range(14):
        await random_write(rng.choice([copying, server]), rng, step, sessions=4)
        await assert_same_answers(copying, server)


async def test_a_user_with_project_entries_is_read_from_the_server(
    pair: tuple[Neo4jMemoryService, Neo4jMemoryService],
) -> None:
    copying, server = pair
    rng = random.Random(3)
    await copying.add_session(APP, USER, "s0", session_of(rng, 6, 0))
    await copy_in(copying)
    await copying.add_session_to_project(APP, USER, "p0", "work", [entry("Rex joins the Boston office", author="Ana")])
    assert not copying._replicas.copied()  # a copy holds global memory only
    scoped = await copying.search(SearchRequest(app_name=APP, user_id=USER, project_id="work", query="Boston office"))
    assert scoped.hits[0].memory.text == "Rex joins the Boston office"
    unscoped = await copying.search(SearchRequest(app_name=APP, user_id=USER, query="Boston office"))
    assert "Rex joins the Boston office" not in {h.memory.text for h in unscoped.hits}
    for query, got, want in zip(ASKED, await answers(copying), await answers(server), strict=True):
        assert_same_ranking(want, got, query)
    await copying._replicas.settled()
    assert not copying._replicas.copied()


async def test_delete_user_leaves_nothing_of_the_user_in_the_process(
    pair: tuple[Neo4jMemoryService, Neo4jMemoryService],
) -> None:
    copying, server = pair
    rng = random.Random(5)
    await copying.add_session(APP, USER, "s0", session_of(rng, 6, 0))
    await copying.add_session(APP, "other", "s0", session_of(rng, 6, 0))
    for user in (USER, "other"):
        await copy_in(copying, user=user)
    await copying.delete_user(APP, USER)
    assert [o.user_id for o in copying._replicas.copied()] == ["other"]
    for copy in copying._replicas._copies.values():
        assert all(key[2] != USER for key in copy.store.graph.nodes)
    assert all(o.user_id != USER for o in copying._replicas._large)
    assert await answers(copying) == [[] for _ in ASKED]


async def test_a_copy_built_while_the_user_is_deleted_is_not_kept(
    pair: tuple[Neo4jMemoryService, Neo4jMemoryService], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A copy read before delete_user and built after it was kept whenever a search had
    # reached the server during the erasure (it counted the user again): every erased
    # entry stayed in the process, and no later search of the emptied user dropped it.
    copying, _ = pair
    await copying.add_session(APP, USER, "s0", session_of(random.Random(7), 6, 0))
    building, go = threading.Event(), threading.Event()
    build = Replicas._build

    def held_build(self: Replicas, owner: Owner, rows: Any) -> Any:
        building.set()
        go.wait()
        return build(self, owner, rows)

    monkeypatch.setattr(Replicas, "_build", held_build)
    write = copying._write
    searched_during_erasure = False

    async def search_then_write(owner: Owner, work: Any, mirror: Any = None) -> Any:
        nonlocal searched_during_erasure
        if not searched_during_erasure:  # the user's agent asks while the erasure starts
            searched_during_erasure = True
            await copying.search(SearchRequest(app_name=APP, user_id=USER, query="Rex"))
        return await write(owner, work, mirror)

    try:
        for query in (ASKED * 2)[: SEARCHES_BEFORE_COPY + 1]:
            await copying.search(SearchRequest(app_name=APP, user_id=USER, query=query))
        await asyncio.to_thread(building.wait)  # read whole, now being built
        monkeypatch.setattr(copying, "_write", search_then_write)
        assert await copying.delete_user(APP, USER) == 6
        assert searched_during_erasure and Owner(APP, USER) in copying._replicas._large
    finally:
        go.set()
    await copying._replicas.settled()
    assert not copying._replicas.copied()
    assert await answers(copying) == [[] for _ in ASKED]


async def test_another_process_deleting_the_user_drops_the_copy_at_the_next_search(
    pair: tuple[Neo4jMemoryService, Neo4jMemoryService],
) -> None:
    copying, server = pair
    rng = random.Random(6)
    await server.add_session(APP, USER, "s0", session_of(rng, 6, 0))
    await copy_in(copying)
    await server.delete_user(APP, USER)
    assert await answers(copying) == [[] for _ in ASKED]
    await copying._replicas.settled()
    assert not copying._replicas.copied()


async def test_copies_stay_within_their_entry_budget_least_recently_searched_out(decomposer: Decomposer) -> None:
    wiper = await make_neo4j_service(decomposer)
    await wiper.close()
    svc = Neo4jMemoryService(
        neo4j_uri_or_skip(), auth=neo4j_auth(), nlp=decomposer, replica_min_entries=1, replica_max_entries=10
    )
    try:
        rng = random.Random(9)
        for user in ("u1", "u2", "u3"):
            await svc.add_session(APP, user, "s0", session_of(rng, 4, 0))
        for user in ("u1", "u2"):
            await copy_in(svc, user=user)
        for query in (ASKED * 2)[: SEARCHES_BEFORE_COPY + 1]:
            await svc.search(SearchRequest(app_name=APP, user_id="u3", query=query))
        await svc._replicas.settled()
        assert [o.user_id for o in svc._replicas.copied()] == ["u2", "u3"]
        assert sum(svc._replicas.copied().values()) <= 10
        await svc.add_session(APP, "big", "s0", session_of(rng, 11, 0))
        await answers(svc, user="big")
        await svc._replicas.settled()
        assert "big" not in {o.user_id for o in svc._replicas.copied()}  # larger than the budget
    finally:
        await svc.close()


@pytest.mark.parametrize(("low", "high"), [(0, 10), (5, -1)])
def test_bad_copy_settings_are_refused(decomposer: Decomposer, low: int, high: int) -> None:
    with pytest.raises(ValueError, match="replica_"):
        Neo4jMemoryService("bolt://127.0.0.1:1", nlp=decomposer, replica_min_entries=low, replica_max_entries=high)


async def test_every_write_moves_the_users_stamp(pair: tuple[Neo4jMemoryService, Neo4jMemoryService]) -> None:
    copying, _ = pair

    async def stamp() -> Any:
        return (await copying._user_stamp(Owner(APP, USER)))[0]

    assert await stamp() is None
    seen = []
    await copying.add_session(APP, USER, "s0", [entry("one", author="Ana"), entry("two", author="Bo")])
    seen.append(await stamp())
    await copying.append_to_session(APP, USER, "s0", [entry("three", author="Ana")])
    seen.append(await stamp())
    await copying.add_entry(APP, USER, entry("four", author="Ana"))
    seen.append(await stamp())
    await copying.delete_session(APP, USER, "s0")
    seen.append(await stamp())
    assert None not in seen and len(set(seen)) == len(seen)
    await copying.delete_user(APP, USER)
    assert await stamp() is None


async def test_searches_and_writes_running_at_once_leave_the_copy_right(
    pair: tuple[Neo4jMemoryService, Neo4jMemoryService],
) -> None:
    """Searches of the copy, writes through its service and writes of another, all in
    flight together: no call fails, and once they are done the copy answers as the server."""
    copying, server = pair
    rng = random.Random(42)
    await copying.add_session(APP, USER, "s0", session_of(rng, 8, 0))
    await copy_in(copying)
    for round_ in range(3):
        calls: list[Awaitable[Any]] = [
            copying.search(SearchRequest(app_name=APP, user_id=USER, query=rng.choice(ASKED))) for _ in range(10)
        ]
        for i in range(4):
            calls.append(random_write(rng.choice([copying, server]), rng, round_ * 100 + i * 10, sessions=3))
        rng.shuffle(calls)
        done = await asyncio.gather(*calls, return_exceptions=True)
        assert not [d for d in done if isinstance(d, BaseException)]
        await assert_same_answers(copying, server)
