"""Shared fixtures: one ``service`` fixture parametrised over every backend.

The Neo4j backend needs a running Neo4j (``GRAPHMEM_NEO4J_URI``, started by
``scripts/test``). Outside CI its tests skip with a reason when the variable is unset;
in CI (``CI=true``) a missing Neo4j fails them, so they can never quietly skip there.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from graphmem import Decomposer, MemoryService, open_memory

BACKENDS = ["networkx", "neo4j"]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def neo4j_uri_or_skip() -> str:
    uri = os.environ.get("GRAPHMEM_NEO4J_URI")
    if not uri:
        if in_ci():
            pytest.fail("CI=true but GRAPHMEM_NEO4J_URI is unset: Neo4j tests must run in CI")
        pytest.skip("GRAPHMEM_NEO4J_URI is unset; start Neo4j with `scripts/neo4j start` to run these")
    return uri


def neo4j_auth() -> tuple[str, str] | None:
    password = os.environ.get("GRAPHMEM_NEO4J_PASSWORD")
    return (os.environ.get("GRAPHMEM_NEO4J_USER", "neo4j"), password) if password else None


@pytest.fixture(scope="session")
def decomposer() -> Decomposer:
    """The default statistical pipeline, loaded once for the whole run."""
    d = Decomposer()
    d.nlp  # noqa: B018 - load now, so a missing model fails here and not inside a test
    return d


async def make_neo4j_service(decomposer: Decomposer) -> MemoryService:
    """An empty Neo4j store, opened as every caller opens one (the factory sets up the schema)."""
    from graphmem.backends.neo4j import Neo4jMemoryService

    service = await open_memory(neo4j_uri_or_skip(), nlp=decomposer)
    assert isinstance(service, Neo4jMemoryService)
    await service.driver.execute_query("MATCH (n) DETACH DELETE n")
    return service


@pytest.fixture(params=BACKENDS)
async def service(request: pytest.FixtureRequest, decomposer: Decomposer) -> AsyncIterator[MemoryService]:
    """Each backend in turn, empty."""
    if request.param == "networkx":
        svc = await open_memory("memory:", nlp=decomposer)
    else:
        svc = await make_neo4j_service(decomposer)
    try:
        yield svc
    finally:
        await svc.close()
