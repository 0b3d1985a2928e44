"""Races against the Neo4j backend: writes of one user against its erasure, reads against a
session being replaced, and schema set-up from several processes at once.

Each test repeats a race a bounded number of times (no sleeps, no clocks) and checks the
graph after every round; each failed often on the code before its fix (see the commit
messages for how often).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import make_neo4j_service, neo4j_auth, neo4j_uri_or_skip
from graphmem import Content, Decomposer, EntryRecord, MemoryEntry, Part, SearchRequest
from graphmem._answer_types import TYPE_TOKENS

pytestmark = pytest.mark.neo4j

REPO = Path(__file__).resolve().parent.parent


def entry(text: str, minute: int = 0) -> MemoryEntry:
    return MemoryEntry(
        content=Content(role="user", parts=[Part(text=text)]),
        author="user",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=minute),
    )


@pytest.fixture
async def neo(decomposer: Decomposer) -> AsyncIterator[Any]:
    svc = await make_neo4j_service(decomposer)
    try:
        yield svc
    finally:
        await svc.close()


async def rows(svc: Any, query: str, **params: Any) -> list[dict[str, Any]]:
    result = await svc.driver.execute_query(query, params)
    return [r.data() for r in result.records]


# ---------------------------------------------------------------------- item 7: erasure vs writes


@pytest.mark.timeout(600)
async def test_delete_user_racing_add_session_leaves_whole_linked_sessions(
    neo: Any, decomposer: Decomposer
) -> None:
    """``delete_user`` races ``add_session``/``add_entry`` of the same user, round after round.

    Whatever order the server picks, each session ends up either erased whole or stored whole
    with every token link (so a search for its marker word finds every entry), and no term
    node is left without an entry.
    """
    sizes = {"a": 6, "b": 3}

    def session(name: str, round_: int) -> list[MemoryEntry]:
        return [
            entry(f"zebra quagga Lisbon walrus {name}{round_}marker item{k}", minute=k) for k in range(sizes[name[0]])
        ]

    async def writes(round_: int, kind: str) -> None:
        # One after the other, so that across the rounds they land all through the erasure.
        for j in range(3):
            if kind == "a":
                await neo.add_session("app", "u", f"a{j}", session(f"a{j}", round_))
            elif kind == "b":
                await neo.add_session_to_project("app", "u", f"b{j}", "proj", session(f"b{j}", round_))
            else:
                await neo.add_entry("app", "u", entry(f"zebra note {round_}n{j}marker"))

    for round_ in range(20):
        # Enough old entries that the erasure takes a while.
        await neo.add_sessions("app", "u", {f"old{k}": session(f"a{k}", round_) for k in range(10)})
        await neo.add_entry("app", "u", entry(f"old note walrus {round_}"))
        await asyncio.gather(neo.delete_user("app", "u"), writes(round_, "a"), writes(round_, "b"), writes(round_, "n"))
        stored = await rows(
            neo,
            "MATCH (e:Entry {app_name: 'app', user_id: 'u'}) "
            "RETURN e.session_id AS s, e.text AS text, COUNT { (e)-[:HAS_TOKEN]->(:Token) } AS tokens",
        )
        by_session: dict[str | None, int] = {}
        for row in stored:
            by_session[row["s"]] = by_session.get(row["s"], 0) + 1
            # Its own words and its author's name, and the type tokens of its entities
            # (entities depend on the batch: only bounded).
            words = {*decomposer.decompose(row["text"]).tokens, "user"}
            assert len(words) <= row["tokens"] <= len(words) + len(TYPE_TOKENS), (round_, row)
            assert not row["text"].startswith("old note"), (round_, row)
        assert not any(s is not None and s.startswith("old") for s in by_session), (round_, by_session)
        for name, count in by_session.items():
            if name is not None:
                assert count == sizes[name[0]], (round_, name, by_session)  # whole or gone
                found = await neo.search(
                    SearchRequest(app_name="app", user_id="u", query=f"{name}{round_}marker", limit=50)
                    if name[0] == "a"
                    else SearchRequest(app_name="app", user_id="u", query=f"{name}{round_}marker", project_id="proj")
                )
                assert len(found.memories) == count, (round_, name)
        orphans = await rows(
            neo, "MATCH (n) WHERE (n:Token OR n:Entity) AND NOT EXISTS { (n)<--() } RETURN count(n) AS c"
        )
        assert orphans == [{"c": 0}], round_
        await neo.delete_user("app", "u")
        assert await rows(neo, "MATCH (n) RETURN count(n) AS c") == [{"c": 0}], round_


async def test_a_restore_between_two_erasure_batches_is_kept_whole(
    neo: Any, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``delete_user`` lists the user's entries and deletes them in batches. Another worker
    re-loads the user's export (the same entry ids) after the first batch: that write is
    kept whole, as if it came after the erasure. Deleting by id alone removed the re-loaded
    entries that later batches listed, leaving every session in fragments."""
    from graphmem.backends import neo4j as backend

    monkeypatch.setattr(backend, "_ENTRIES_PER_ERASURE", 3)

    def export(session: str) -> list[EntryRecord]:
        return [EntryRecord(memory=entry(f"{session} turn {i}", i), entry_id=f"{session}-{i}") for i in range(4)]

    sessions = ["s0", "s1", "s2"]
    for session in sessions:
        await neo.restore_session("app", "u", session, export(session))
    worker = backend.Neo4jMemoryService(neo4j_uri_or_skip(), auth=neo4j_auth(), nlp=decomposer)
    writes = 0
    erase_write = neo._write

    async def then_reload(owner: Any, work: Any) -> Any:
        nonlocal writes
        done = await erase_write(owner, work)
        writes += 1
        if writes == 2:  # the listing and the first batch have committed
            for session in sessions:
                await worker.restore_session("app", "u", session, export(session))
        return done

    monkeypatch.setattr(neo, "_write", then_reload)
    try:
        assert await neo.delete_user("app", "u") == 3  # the first batch's, then none of the re-load
    finally:
        await worker.close()
    left = await rows(
        neo, "MATCH (e:Entry {app_name: 'app', user_id: 'u'}) RETURN e.session_id AS s, count(*) AS n ORDER BY s"
    )
    assert left == [{"s": s, "n": 4} for s in sessions]
    counter = await rows(neo, "MATCH (c:GraphmemUser {app_name: 'app', user_id: 'u'}) RETURN c.entries AS n")
    assert counter == [{"n": 12}]


# ---------------------------------------------------------------------- item 8: reads vs a replacement


@pytest.mark.timeout(600)
async def test_reads_during_session_replacement_see_whole_entries(neo: Any) -> None:
    """``list_recent``, ``list_entries`` and ``search`` run while a session is replaced again
    and again: every entry they return is one that was written, whole, and none raises."""
    versions = [
        [entry(f"version {v} turn {k} heron pelican marathon", minute=k) for k in range(40)] for v in range(2)
    ]
    written = {(e.text, e.timestamp) for version in versions for e in version}
    await neo.add_session("app", "u", "s", versions[0])
    replacements = 60
    done = asyncio.Event()
    reads = 0

    async def replace() -> None:
        try:
            for n in range(replacements):
                await neo.add_session("app", "u", "s", versions[(n + 1) % 2])
        finally:
            done.set()

    def check(memories: list[MemoryEntry]) -> None:
        nonlocal reads
        reads += 1
        for memory in memories:
            assert (memory.text, memory.timestamp) in written

    async def list_recent() -> None:
        for _ in range(20_000):  # bounded; stops as soon as the writer is done
            if done.is_set():
                return
            check(await neo.list_recent("app", "u", limit=100))

    async def list_entries() -> None:
        for _ in range(20_000):
            if done.is_set():
                return
            listed = await neo.list_entries("app", "u")
            assert all(s.session_id == "s" and s.project_id is None and s.entry_id for s in listed)
            check([s.memory for s in listed])

    async def search() -> None:
        for _ in range(20_000):
            if done.is_set():
                return
            hits = await neo.search(SearchRequest(app_name="app", user_id="u", query="heron turn", limit=50))
            check(hits.memories)

    await asyncio.gather(replace(), list_recent(), list_entries(), list_recent(), list_entries(), search())
    assert reads > replacements
    assert [e.memory.text for e in await neo.list_entries("app", "u")] == [e.text for e in versions[replacements % 2]]


# ---------------------------------------------------------------------- item 9: concurrent set-up

_ENSURE_SCHEMA = """
import asyncio, sys
from graphmem.backends.neo4j import Neo4jMemoryService

async def main() -> None:
    auth = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else None
    svc = Neo4jMemoryService(sys.argv[1], auth=auth)
    try:
        await svc.health_check()  # connected before the go signal
        print("ready", flush=True)
        sys.stdin.readline()  # the go signal: every process starts ensure_schema together
        print(await svc.ensure_schema(), flush=True)
    finally:
        await svc.close()

asyncio.run(main())
"""


async def drop_graphmem_schema(svc: Any) -> None:
    for kind, plural in (("CONSTRAINT", "CONSTRAINTS"), ("INDEX", "INDEXES")):
        result = await svc.driver.execute_query(f"SHOW {plural} YIELD name WHERE name STARTS WITH 'graphmem_' RETURN name")
        for record in result.records:
            # Test code only: the names are graphmem's own constants.
            await svc.driver.execute_query(f"DROP {kind} {record['name']} IF EXISTS")


@pytest.mark.timeout(600)
async def test_ensure_schema_from_several_processes_at_once(neo: Any) -> None:
    """Three processes, each with its own driver, set up an empty schema at the same moment,
    ten times over: every call succeeds and the schema is whole afterwards."""
    from graphmem.backends.neo4j import SCHEMA_VERSION

    uri = neo4j_uri_or_skip()
    auth = neo4j_auth()
    args = [sys.executable, "-c", _ENSURE_SCHEMA, uri, *(auth or ())]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    expected = {row["name"] for row in await rows(neo, "SHOW INDEXES YIELD name RETURN name")}
    failures = []
    for round_ in range(10):
        await drop_graphmem_schema(neo)
        procs = [
            subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for _ in range(3)
        ]
        try:
            for proc in procs:
                assert proc.stdout is not None
                assert proc.stdout.readline().strip() == "ready"
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()
            for proc in procs:
                out, err = proc.communicate(timeout=120)
                if proc.returncode != 0 or out.strip() != str(SCHEMA_VERSION):
                    failures.append((round_, proc.returncode, out, err.strip().splitlines()[-1:]))
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        present = {row["name"] for row in await rows(neo, "SHOW INDEXES YIELD name, state WHERE state = 'ONLINE' RETURN name")}
        assert expected <= present, round_
    assert failures == []
