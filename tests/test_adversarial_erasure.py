"""Erasure on disk: after ``delete_user`` and a restart, where can the erased text still be read?

graphmem's embedded Neo4j (scripts/neo4j) keeps the transaction logs to the minimum that
still recovers and prunes them at every start and stop, so erased text leaves the logs
with the next restart. What no configuration removes, and README's "Erasure" section
documents, is the bytes of freed records in the store files (the string store, and freed
pages of the range indexes) until Neo4j reuses them. The test asserts exactly that.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from conftest import PrivateNeo4j, neo4j_uri_or_skip
from graphmem import Content, Decomposer, MemoryEntry, Part, SearchRequest

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]


def _entry(text: str) -> MemoryEntry:
    return MemoryEntry(
        content=Content(role="user", parts=[Part(text=text)]),
        author="user",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
    )


def _files_holding(root: Path, marker: str) -> list[Path]:
    """The files under ``root`` that hold ``marker`` in any letter case (tokens are lowercased)."""
    needle = marker.lower().encode()
    return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes().lower())


def _is_store_file(path: Path) -> bool:
    """A record store file (``neostore.*``) or a schema index file of a database."""
    parts = path.parts
    return "databases" in parts and (path.name.startswith("neostore.") or "index" in parts)


@pytest.mark.timeout(600)
async def test_erased_text_leaves_the_transaction_logs_with_a_restart(tmp_path: Path, decomposer: Decomposer) -> None:
    from graphmem.backends.neo4j import Neo4jMemoryService

    neo4j_uri_or_skip()  # the same gate as every Neo4j test
    server = PrivateNeo4j(tmp_path / "neo4j")
    marker = "Qzx" + uuid.uuid4().hex[:12].translate(str.maketrans("0123456789", "ghijklmnop"))
    server.start()
    try:
        svc = Neo4jMemoryService(server.uri, nlp=decomposer)
        try:
            await svc.ensure_schema()
            await svc.add_session("app", "erase-me", "s", [_entry(f"My locker code word is {marker}, keep it safe")])
            await svc.add_session("app", "keep-me", "s", [_entry("Maria lives in Lisbon")])
            # Committed means in the transaction log: the search below can see it there.
            assert any("transactions" in p.parts for p in _files_holding(server.data, marker))
            assert await svc.delete_user("app", "erase-me") == 1
        finally:
            await svc.close()
        server.stop()
        server.start()
        svc = Neo4jMemoryService(server.uri, nlp=decomposer)
        try:
            assert await svc.stats("app", "erase-me") == await svc.stats("app", "nobody")
            kept = await svc.search(SearchRequest(app_name="app", user_id="keep-me", query="Lisbon"))
            assert [m.text for m in kept.memories] == ["Maria lives in Lisbon"]
        finally:
            await svc.close()
    finally:
        server.stop()
    holding = _files_holding(server.data, marker)
    assert not [p for p in holding if "transactions" in p.parts], holding
    # What may remain: freed records and index pages inside the store, not readable through Neo4j.
    assert all(_is_store_file(p) for p in holding), holding


async def test_a_delete_by_a_task_started_inside_bulk_writes_erases_when_it_lands_after_the_block(
    tmp_path: Path, decomposer: Decomposer
) -> None:
    """A task started inside the block copies its context, deferred compaction included:
    its delete landing after the block ended returned with the text still in the segment,
    until the next writable open."""
    from graphmem.backends.networkx import GraphMemoryService

    path = tmp_path / "memory.journal"
    memory = GraphMemoryService(decomposer, path=path)
    await memory.add_session("app", "ann", "s1", [_entry("My password hint is zanzibar."), _entry("Rex likes the park.")])
    gate = asyncio.Event()

    async def later_delete() -> int:
        await gate.wait()
        return await memory.delete_entries("app", "ann", "zanzibar")

    async with memory.bulk_writes():
        task = asyncio.create_task(later_delete())  # a request handler spawned during a load
    gate.set()
    assert await task == 1
    assert _files_holding(tmp_path, "zanzibar") == []
    await memory.close()
