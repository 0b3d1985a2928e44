"""Shared fixtures: one ``service`` fixture parametrised over every backend.

The Neo4j backend needs a running Neo4j (``GRAPHMEM_NEO4J_URI``, started by
``scripts/test``). Outside CI its tests skip with a reason when the variable is unset;
in CI (``CI=true``) a missing Neo4j fails them, so they can never quietly skip there.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from graphmem import Decomposer, MemoryService, open_memory

BACKENDS = ["networkx", "neo4j"]
REPO = Path(__file__).resolve().parent.parent


@contextmanager
def asking_on_stderr() -> Iterator[tuple[Any, Any]]:
    """A terminal for the command line's deletes to ask on (in place of
    ``graphmem.cli._context.terminal_to_ask``) inside a ``CliRunner``: its input and stderr."""
    yield sys.stdin, sys.stderr


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def neo4j_uri_or_skip() -> str:
    """The Neo4j the tests may use, or skip (fail in CI). The tests delete every node of its
    database, so it must be declared disposable (``GRAPHMEM_TEST_NEO4J_DISPOSABLE=1``, set by
    ``scripts/test`` for the server it starts): a memory store of one's own at the same
    address is never wiped by mistake."""
    uri = os.environ.get("GRAPHMEM_NEO4J_URI")
    if not uri:
        if in_ci():
            pytest.fail("CI=true but GRAPHMEM_NEO4J_URI is unset: Neo4j tests must run in CI")
        pytest.skip("GRAPHMEM_NEO4J_URI is unset; start Neo4j with `scripts/neo4j start --temp` to run these")
    if os.environ.get("GRAPHMEM_TEST_NEO4J_DISPOSABLE") != "1":
        reason = (
            f"the Neo4j tests delete every node of the database at {uri}: set "
            "GRAPHMEM_TEST_NEO4J_DISPOSABLE=1 to say it is a throwaway server (scripts/test starts one and does)"
        )
        if in_ci():
            pytest.fail(reason)
        pytest.skip(reason)
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateNeo4j:
    """A Neo4j of a test's own, through ``scripts/neo4j`` with its own home, data and port.

    For tests that stop or restart the server (an outage, erasure across a restart), or
    look at the embedded server's own configuration: stopping the shared one would break
    every other test (and every other run) using it at the time, and the shared URI may
    point at a server that scripts/neo4j did not configure.
    """

    def __init__(self, home: Path) -> None:
        self.port = free_port()
        self.uri = f"bolt://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "GRAPHMEM_NEO4J_HOME": str(home),
            "GRAPHMEM_NEO4J_DATA": str(home / "data"),  # kept across stop and start
            "GRAPHMEM_NEO4J_PORT": str(self.port),
            "GRAPHMEM_NEO4J_HEAP": "512m",
            "GRAPHMEM_NEO4J_PAGECACHE": "32m",
        }
        self.env.pop("GRAPHMEM_NEO4J_PASSWORD", None)

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(REPO / "scripts" / "neo4j"), command], env=self.env, capture_output=True, text=True, timeout=300
        )

    def start(self) -> None:
        done = self.run("start")
        if done.returncode != 0:
            message = f"scripts/neo4j start failed for a private server: {done.stderr[-1500:]}"
            if in_ci():
                pytest.fail(message)
            pytest.skip(message)
        assert done.stdout.strip().splitlines()[-1] == self.uri

    def stop(self) -> None:
        self.run("stop")

    @property
    def data(self) -> Path:
        """The Neo4j home: databases in ``data/databases``, transaction logs in ``data/transactions``."""
        return Path(self.env["GRAPHMEM_NEO4J_DATA"])

    def pid(self) -> int:
        return int((Path(self.env["GRAPHMEM_NEO4J_HOME"]) / "neo4j.pid").read_text().strip())
